package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/cgroup"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/gpulaunch/gpulaunch/test/mpsstandin"
	"github.com/gpulaunch/gpulaunch/test/procs"
)

// The test binary is two programs: the gpulaunch CLI (GLTEST_MAIN=1), and
// the fake apps, chosen by argv "gltest-helper NAME ARGS…" (argv, not env:
// instances inherit the env).
func TestMain(m *testing.M) {
	if process.IsKeeper() { // as main
		os.Exit(process.Keep())
	}
	if main := mpsstandin.Program(os.Args[0]); main != nil { // mps_test.go's stand-in and its client
		os.Exit(main(os.Args[1:]))
	}
	if len(os.Args) > 2 && os.Args[1] == "gltest-helper" {
		os.Exit(helper(os.Args[2], os.Args[3:]))
	}
	if os.Getenv("GLTEST_MAIN") == "1" {
		a := newApp()
		if tmp := os.Getenv("GLTEST_TMP"); tmp != "" {
			a.tmpRoot = tmp // the test's own, for /tmp (ownSockets)
		}
		if root := os.Getenv("GLTEST_ROOT"); root != "" {
			a.root = os.DirFS(root) // a machine's tree, for /proc and /sys (nvmlstandin_test.go)
		}
		process.NoPidfd = os.Getenv("GLTEST_NOPIDFD") == "1" // the path of kernels before 5.3
		os.Exit(a.main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func thisInstance() int { n, _ := strconv.Atoi(os.Getenv("GPULAUNCH_INSTANCE")); return n }

// helper is the fake app.
func helper(name string, args []string) int {
	switch name {
	case "scale-app": // scale_test.go: mark dir/started.G; wait for TERM/INT at G == args[1], fail at G == args[2], else print a throughput
		g := strings.Count(os.Getenv("GPULAUNCH_GPUS"), ",") + 1
		os.WriteFile(fmt.Sprintf("%s/started.%d", args[0], g), nil, 0o644)
		if strconv.Itoa(g) == args[1] {
			time.Sleep(time.Minute)
		}
		if len(args) > 2 && strconv.Itoa(g) == args[2] {
			fmt.Println("out of memory")
			return 3
		}
		fmt.Printf("throughput: %d samples/s\n", 100*g)
		return 0
	case "scale-round-app": // scale_test.go: mark dir/run.G.R (its Rth run at G GPUs); wait for a signal at G == args[1] in round args[2]
		g := strings.Count(os.Getenv("GPULAUNCH_GPUS"), ",") + 1
		round := 1
		for ; ; round++ {
			f, err := os.OpenFile(fmt.Sprintf("%s/run.%d.%d", args[0], g, round), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
				break
			}
		}
		if strconv.Itoa(g) == args[1] && strconv.Itoa(round) == args[2] {
			time.Sleep(time.Minute)
		}
		fmt.Printf("throughput: %d samples/s\n", 100*g)
		return 0
	case "sigapp": // an instance that ignores, catches or dies of signals (signals_test.go)
		return sigApp(args)
	case "intrude": // another user's attempt on a queue over nodes (nodequeue_test.go)
		return intrude(args[0], args[1], args[2])
	case "exitn": // exit with args[instance]
		n, _ := strconv.Atoi(args[thisInstance()])
		return n
	case "report": // write what the instance sees to args[0].<instance>
		status, _ := os.ReadFile("/proc/self/status")
		numa, _ := os.ReadFile("/proc/self/numa_maps")
		rep := map[string]string{"numa_maps_first": firstLine(string(numa)), "pid": strconv.Itoa(os.Getpid())}
		for _, l := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && (k == "Cpus_allowed_list" || k == "Mems_allowed_list") {
				rep[k] = strings.TrimSpace(v)
			}
		}
		for _, kv := range os.Environ() {
			rep["env:"+strings.SplitN(kv, "=", 2)[0]] = strings.SplitN(kv, "=", 2)[1]
		}
		rep["args"] = strings.Join(args[1:], " ")
		b, _ := json.Marshal(rep)
		_ = os.WriteFile(fmt.Sprintf("%s.%d", args[0], thisInstance()), b, 0o644)
		return 0
	case "fail-after": // instance 0 exits args[1] after args[0] seconds; the others sleep
		if thisInstance() == 0 {
			d, _ := time.ParseDuration(args[0])
			time.Sleep(d)
			n, _ := strconv.Atoi(args[1])
			return n
		}
		time.Sleep(60 * time.Second)
		return 0
	case "count-and-fail": // append a line to args[0], exit 1
		f, _ := os.OpenFile(args[0], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, "started")
		f.Close()
		return 1
	case "burn": // use args[0] of CPU time, then exit
		d, _ := time.ParseDuration(args[0])
		burnCPU(d)
		return 0
	case "sleep": // sleep args[0]; args[1] is a marker for /proc scans
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		return 0
	case "term-marker": // on TERM write args[0].<instance> and exit 0; instance args[1] ignores TERM
		ignore, _ := strconv.Atoi(args[1])
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("ready")
		for range ch {
			_ = os.WriteFile(fmt.Sprintf("%s.%d", args[0], thisInstance()), []byte("TERM"), 0o644)
			if thisInstance() != ignore {
				return 0
			}
		}
		return 0
	case "daemonize": // start a setsid'd sleeper through an intermediate and exit
		cmd := exec.Command(os.Args[0], "gltest-helper", "spawn-setsid", args[0])
		_ = cmd.Run()
		return 0
	case "spawn-setsid": // the intermediate: start the sleeper in its own session, exit at once
		cmd := exec.Command(os.Args[0], "gltest-helper", "sleep", "60s", args[0])
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		_ = cmd.Start()
		return 0
	case "orphan": // leave a child that exits once file args[0] exists (args[1]: its marker), orphaned; then wait for TERM
		cmd := exec.Command(os.Args[0], "gltest-helper", "spawn-short", args[0], args[1])
		_ = cmd.Run()
		fmt.Println("orphaned")
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		<-ch
		return 0
	case "spawn-short": // the intermediate: start a waiter for file args[0], marked args[1], and exit at once
		_ = exec.Command(os.Args[0], "gltest-helper", "await", args[0], args[1]).Start()
		return 0
	case "await": // exit once file args[0] exists (args[1] is a marker for /proc scans)
		for {
			if _, err := os.Stat(args[0]); err == nil {
				return 0
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "lines": // args[0] numbered lines "<instance>-<n>"
		n, _ := strconv.Atoi(args[0])
		w := bufio.NewWriterSize(os.Stdout, 4096)
		for i := range n {
			fmt.Fprintf(w, "%d-%d\n", thisInstance(), i)
		}
		w.Flush()
		return 0
	case "bigline": // args[0] bytes of 'x', no newline
		n, _ := strconv.Atoi(args[0])
		_, _ = os.Stdout.Write(bytes.Repeat([]byte("x"), n))
		return 0
	case "gpu-use": // declare GPU use to the simulated node (args: own|other|none, util %, MiB, duration)
		cvd := strings.Split(os.Getenv("CUDA_VISIBLE_DEVICES"), ",")
		gpu := map[string]string{"own": cvd[0], "other": cvd[len(cvd)-1]}[args[0]]
		if gpu != "" {
			decl := fmt.Sprintf("%s %s %s\n", gpu, args[1], args[2])
			_ = os.WriteFile(filepath.Join(os.Getenv("GPULAUNCH_SIMULATED_USAGE_DIR"), strconv.Itoa(os.Getpid())), []byte(decl), 0o644)
		}
		d, _ := time.ParseDuration(args[3])
		time.Sleep(d)
		return 0
	case "metrics-app": // metrics_test.go
		return metricsApp(args[0])
	case "control-app": // "ready", then a tick every 50ms; reports USR1; exits 0 on TERM
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM)
		fmt.Printf("instance %d ready\n", thisInstance())
		tick := time.NewTicker(50 * time.Millisecond)
		for {
			select {
			case s := <-sigs:
				fmt.Printf("instance %d got %s\n", thisInstance(), unix.SignalName(s.(syscall.Signal)))
				if s == syscall.SIGTERM {
					return 0
				}
			case <-tick.C:
				fmt.Fprintf(os.Stderr, "instance %d tick\n", thisInstance())
			}
		}
	case "sig-marker": // on INT, TERM, HUP, QUIT, USR1 or USR2: write args[0].<instance>.<SIGNAME> holding its TORCHELASTIC_SIGNALS_TO_HANDLE, exit 0
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		fmt.Println("ready")
		s := (<-ch).(syscall.Signal)
		_ = os.WriteFile(fmt.Sprintf("%s.%d.%s", args[0], thisInstance(), unix.SignalName(s)), []byte(os.Getenv("TORCHELASTIC_SIGNALS_TO_HANDLE")), 0o644)
		return 0
	case "hello": // three lines naming the instance, then linger args[0]
		for k := range 3 {
			fmt.Printf("hello %d from instance %d\n", k, thisInstance())
		}
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		return 0
	case "alloc": // touch args[0] MiB and sleep
		n, _ := strconv.Atoi(args[0])
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(60 * time.Second)
		return int(b[0]) - 1
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return 99
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// gpulaunch runs the CLI as a child process.
func gpulaunch(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GLTEST_MAIN=1")
	return cmd
}

func helperArgs(name string, args ...string) []string {
	return append([]string{"--", os.Args[0], "gltest-helper", name}, args...)
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// liveWithMarker lists living (not zombie) processes whose command line
// holds marker: the truth, whatever gpulaunch believes.
func liveWithMarker(marker string) []int { return procs.Living("cmdline", []byte(marker)) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func marker(t *testing.T) string {
	return fmt.Sprintf("glmark-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
}

// thisMachine writes a topology file of this machine's own CPUs with one
// GPU per CPU, so a run binds for real and the child's /proc shows it.
func thisMachine(t *testing.T) (file string, cpus []int) {
	t.Helper()
	status, _ := os.ReadFile("/proc/self/status")
	set, _, err := cgroup.ParseProcStatus(string(status))
	if err != nil || set.IsEmpty() {
		t.Fatalf("reading this process's CPUs: %v", err)
	}
	var cpuList, gpus []string
	for i, c := range set.List() {
		cpuList = append(cpuList, fmt.Sprintf(`{"cpu": %d, "core": %d, "socket": 0, "numa": 0}`, c, c))
		gpus = append(gpus, fmt.Sprintf(`{"pci": "0000:%02x:00.0", "numa": 0}`, i+1))
	}
	file = filepath.Join(t.TempDir(), "this-machine.json")
	doc := fmt.Sprintf(`{"name": "this-machine", "cpus": [%s], "gpus": [%s]}`, strings.Join(cpuList, ","), strings.Join(gpus, ","))
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, set.List()
}

func TestRunBindsAndSetsEnvironment(t *testing.T) {
	topo, cpus := thisMachine(t)
	out := filepath.Join(t.TempDir(), "report")
	args := append([]string{"-n", strconv.Itoa(len(cpus)), "--simulate", topo}, helperArgs("report", out, "shard-%t")...)
	cmd := gpulaunch(t, args...)
	cmd.Env = append(cmd.Env, "ROCR_VISIBLE_DEVICES=0,1", "GPU_DEVICE_ORDINAL=0,1", "RANK=5", "OMP_NUM_THREADS=")
	cmd.Env = slicesDelete(cmd.Env, "OMP_NUM_THREADS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	uuids := map[string]bool{}
	for i, c := range cpus {
		var rep map[string]string
		b, err := os.ReadFile(fmt.Sprintf("%s.%d", out, i))
		if err != nil || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("instance %d wrote no report: %v", i, err)
		}
		if rep["Cpus_allowed_list"] != strconv.Itoa(c) {
			t.Errorf("instance %d runs on CPUs %s, want %d", i, rep["Cpus_allowed_list"], c)
		}
		if !strings.Contains(rep["numa_maps_first"], "prefer:0") {
			t.Errorf("instance %d memory policy: numa_maps %q, want prefer:0", i, rep["numa_maps_first"])
		}
		want := map[string]string{
			"env:GPULAUNCH_INSTANCE": strconv.Itoa(i), "env:GPULAUNCH_NINSTANCES": strconv.Itoa(len(cpus)),
			"env:LOCAL_RANK": strconv.Itoa(i), "env:RANK": strconv.Itoa(i), "env:WORLD_SIZE": strconv.Itoa(len(cpus)),
			"env:CUDA_DEVICE_ORDER": "PCI_BUS_ID", "env:GPULAUNCH_CPUS": strconv.Itoa(c), "env:OMP_NUM_THREADS": "1",
			"args": "shard-" + strconv.Itoa(i),
		}
		for k, v := range want {
			if rep[k] != v {
				t.Errorf("instance %d %s = %q, want %q", i, k, rep[k], v)
			}
		}
		cvd := rep["env:CUDA_VISIBLE_DEVICES"]
		if !strings.HasPrefix(cvd, "GPU-") || strings.Contains(cvd, ",") || uuids[cvd] || rep["env:GPULAUNCH_GPUS"] != cvd {
			t.Errorf("instance %d CUDA_VISIBLE_DEVICES %q: want its own single UUID", i, cvd)
		}
		uuids[cvd] = true
		for _, stale := range []string{"env:ROCR_VISIBLE_DEVICES", "env:GPU_DEVICE_ORDINAL"} {
			if _, ok := rep[stale]; ok {
				t.Errorf("instance %d still has %s", i, stale)
			}
		}
	}
}

// lockedBuffer is written by os/exec's copier while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func slicesDelete(env []string, kv string) []string {
	var out []string
	for _, e := range env {
		if e != kv {
			out = append(out, e)
		}
	}
	return out
}

func TestRunGPUIDsAndVisibility(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	cmd := gpulaunch(t, append([]string{"-n", "2", "--simulate", "dgx-h100", "--gpu-ids", "index", "--gpu-visibility", "all"}, helperArgs("report", out)...)...)
	cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES=4,5")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for i, want := range []string{"4,5", "5,4"} {
		var rep map[string]string
		b, _ := os.ReadFile(fmt.Sprintf("%s.%d", out, i))
		_ = json.Unmarshal(b, &rep)
		if rep["env:CUDA_VISIBLE_DEVICES"] != want {
			t.Errorf("instance %d CUDA_VISIBLE_DEVICES %q, want %q (own first, indices)", i, rep["env:CUDA_VISIBLE_DEVICES"], want)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"all succeed", helperArgs("exitn", "0", "0", "0", "0"), 0},
		{"highest code wins", helperArgs("exitn", "0", "3", "0", "7"), 7},
		{"a signal beats codes: 128+SIGSEGV", []string{"--", "/bin/sh", "-c", `[ "$GPULAUNCH_INSTANCE" = 1 ] && kill -SEGV $$; exit 3`}, 139},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := gpulaunch(t, append([]string{"-n", "4", "-G", "0", "-O"}, tc.args...)...).CombinedOutput()
			if got := exitStatus(err); got != tc.want {
				t.Fatalf("exit %d, want %d\n%s", got, tc.want, b)
			}
		})
	}
}

func TestRunCommandThatCannotRun(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "script.sh")
	_ = os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	for _, tc := range []struct {
		cmd   string
		want  int
		words string
	}{
		{"no-such-command-gltest", 127, "command not found"},
		{"/nonexistent/app", 127, "no such file"},
		{notExec, 126, "not executable"},
		{t.TempDir(), 126, "is a directory"},
	} {
		b, err := gpulaunch(t, "-n", "2", "-G", "0", "--", tc.cmd).CombinedOutput()
		if got := exitStatus(err); got != tc.want || !strings.Contains(string(b), tc.words) || strings.Contains(string(b), "started:") {
			t.Errorf("%s: exit %d (want %d), output:\n%s", tc.cmd, got, tc.want, b)
		}
	}
}

func TestRunKillOnBadExit(t *testing.T) {
	mk := marker(t)
	begin := time.Now()
	b, err := gpulaunch(t, append([]string{"-n", "3", "-G", "0", "-O", "-K", "--kill-wait", "2s"}, helperArgs("fail-after", "1s", "5", mk)...)...).CombinedOutput()
	if got := exitStatus(err); got != 5 {
		t.Fatalf("exit %d, want the failure's 5\n%s", got, b)
	}
	if elapsed := time.Since(begin); elapsed > 30*time.Second {
		t.Fatalf("took %s: the others (sleeping 60 s) were not ended", elapsed)
	}
	if !strings.Contains(string(b), "kill-on-bad-exit") || len(liveWithMarker(mk)) > 0 {
		t.Fatalf("output or leftovers wrong:\n%s", b)
	}
}

// -W ends the others: they did not finish, so the run exits 128 + the
// TERM it sent them, as srun's for tasks a signal ended.
func TestRunWaitAfterFirstExit(t *testing.T) {
	begin := time.Now()
	b, err := gpulaunch(t, append([]string{"-n", "3", "-G", "0", "-O", "-W", "2", "--kill-wait", "1s"}, helperArgs("fail-after", "0s", "0")...)...).CombinedOutput()
	if got := exitStatus(err); got != 128+int(syscall.SIGTERM) || time.Since(begin) > 30*time.Second {
		t.Fatalf("exit %d after %s\n%s", got, time.Since(begin), b)
	}
	if strings.Count(string(b), "  wait\n") != 2 {
		t.Fatalf("want two instances ended by --wait:\n%s", b)
	}
}

func TestRunRestarts(t *testing.T) {
	count := filepath.Join(t.TempDir(), "starts")
	b, err := gpulaunch(t, append([]string{"-n", "1", "-G", "0", "--restarts", "2"}, helperArgs("count-and-fail", count)...)...).CombinedOutput()
	starts, _ := os.ReadFile(count)
	if exitStatus(err) != 1 || strings.Count(string(starts), "started") != 3 {
		t.Fatalf("exit %d, %d starts (want 1 and 3: first run + 2 restarts)\n%s", exitStatus(err), strings.Count(string(starts), "started"), b)
	}
	if !strings.Contains(string(b), "restarts in") {
		t.Fatalf("restarts not logged:\n%s", b)
	}
}

func TestRunTimeout(t *testing.T) {
	b, err := gpulaunch(t, append([]string{"-n", "1", "-G", "0", "--timeout", "1s"}, helperArgs("sleep", "60s")...)...).CombinedOutput()
	if exitStatus(err) != 128+int(syscall.SIGTERM) || !strings.Contains(string(b), "timeout") {
		t.Fatalf("exit %d\n%s", exitStatus(err), b)
	}
}

func TestRunMemoryCap(t *testing.T) {
	b, err := gpulaunch(t, append([]string{"-n", "2", "-G", "0", "--mem-per-task", "64M", "--kill-wait", "1s"}, helperArgs("alloc", "200")...)...).CombinedOutput()
	if exitStatus(err) != 128+int(syscall.SIGTERM) || strings.Count(string(b), "memory cap") < 2 {
		t.Fatalf("exit %d\n%s", exitStatus(err), b)
	}
}

func TestRunSignalsReachEveryInstance(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "term")
	cmd := gpulaunch(t, append([]string{"-n", "4", "-G", "0", "-O", "-l", "--kill-wait", "1s"}, helperArgs("term-marker", mk, "3")...)...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "4 instances ready", func() bool { return strings.Count(out.String(), "ready") == 4 })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	for i := range 4 {
		if _, err := os.Stat(fmt.Sprintf("%s.%d", mk, i)); err != nil {
			t.Errorf("instance %d did not get SIGTERM", i)
		}
	}
	// the run a TERM stopped exits 143 (README, "Signals", rule 5), also
	// when an instance that ignored it had to be KILLed
	if got := exitStatus(err); got != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want 143: gpulaunch's TERM stopped the run\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "instance 3 exited: SIGKILL") {
		t.Errorf("instance 3 ignores TERM and is KILLed after --kill-wait:\n%s", out.String())
	}
}

func TestRunSIGKILLLeavesNothing(t *testing.T) {
	mk := marker(t)
	cmd := gpulaunch(t, append([]string{"-n", "3", "-G", "0", "-O"}, helperArgs("sleep", "60s", mk)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// gpulaunch's own argv holds the marker too: 1 + 3 processes.
	waitFor(t, "3 instances", func() bool { return len(liveWithMarker(mk)) == 4 })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	time.Sleep(time.Second)
	if left := liveWithMarker(mk); len(left) > 0 {
		t.Fatalf("instances %v outlived a SIGKILLed gpulaunch", left)
	}
}

func TestRunEndsDaemonizedGrandchild(t *testing.T) {
	mk := marker(t)
	b, err := gpulaunch(t, append([]string{"-n", "1", "-G", "0", "--kill-wait", "1s"}, helperArgs("daemonize", mk)...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if left := liveWithMarker(mk); len(left) > 0 {
		t.Fatalf("the setsid'd grandchild %v outlived gpulaunch\n%s", left, b)
	}
	if !strings.Contains(string(b), "left behind") {
		t.Fatalf("gpulaunch did not say it ended the leftover:\n%s", b)
	}
}

// An orphan that gpulaunch inherits as subreaper is reaped while the run
// goes on, not left a zombie until the end, and the instance it came from
// runs on undisturbed.
func TestRunReapsOrphansWhileRunning(t *testing.T) {
	mk := marker(t)
	goAhead := filepath.Join(t.TempDir(), "orphan-may-exit")
	cmd := gpulaunch(t, append([]string{"-n", "1", "-G", "0"}, helperArgs("orphan", goAhead, mk)...)...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	gl := cmd.Process.Pid
	// The orphan lives until the test has seen it: no window to miss on a
	// loaded machine.
	waitFor(t, "the orphan, a child of gpulaunch", func() bool {
		for _, p := range childrenOf(gl) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.Contains(string(b), "\x00await\x00"+goAhead+"\x00"+mk) {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(goAhead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the orphan's zombie, reaped", func() bool { return len(childrenOf(gl)) == 1 })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	b, _ := os.ReadFile(logf.Name())
	// the instance exits 0 on its TERM, but the run did not finish: 143
	if exitStatus(err) != 128+int(syscall.SIGTERM) {
		t.Fatalf("%v\n%s", err, b)
	}
	if !strings.Contains(string(b), "orphaned") || !strings.Contains(string(b), "instance 0 exited: 0") {
		t.Fatalf("the instance did not run on to its own TERM:\n%s", b)
	}
}

// childrenOf lists pid's children, zombies too.
func childrenOf(pid int) []int {
	var out []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func TestRunLabelledOutputIsWholeAndUntorn(t *testing.T) {
	const n, lines = 8, 100000
	cmd := gpulaunch(t, append([]string{"-n", strconv.Itoa(n), "-G", "0", "-O", "-l"}, helperArgs("lines", strconv.Itoa(lines))...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int, n)
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		label, body, ok := strings.Cut(l, ": ")
		inst, err1 := strconv.Atoi(label)
		src, num, ok2 := strings.Cut(body, "-")
		k, err2 := strconv.Atoi(num)
		if !ok || !ok2 || err1 != nil || err2 != nil || src != label || inst >= n || k != next[inst] {
			t.Fatalf("torn, mislabelled or out-of-order line %q", l)
		}
		next[inst]++
	}
	for i, c := range next {
		if c != lines {
			t.Fatalf("instance %d: %d lines, want %d", i, c, lines)
		}
	}
}

// A line longer than the output's buffer (64 KiB) holds the output while
// it comes, so that no other line cuts into it. Nobody else writing, a
// 4 MiB line comes out whole; two at once come out with nothing lost,
// every piece labelled, and whole unless a writer paused mid-line while
// the other waited (TestOneLongLineDoesNotStallTheOthers).
func TestRunLongLineWithoutNewline(t *testing.T) {
	const size = 4 << 20
	t.Run("alone: whole", func(t *testing.T) {
		script := fmt.Sprintf(`[ "$GPULAUNCH_INSTANCE" = 0 ] && exec %s gltest-helper bigline %d; true`, os.Args[0], size)
		out, err := gpulaunch(t, "-n", "2", "-G", "0", "-l", "--", "sh", "-c", script).Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := "0: " + strings.Repeat("x", size) + "\n"; string(out) != want {
			t.Fatalf("output of %d bytes is not the 4 MiB line, whole and labelled once (%d bytes)", len(out), len(want))
		}
	})
	t.Run("two at once: nothing lost", func(t *testing.T) {
		out, err := gpulaunch(t, append([]string{"-n", "2", "-G", "0", "-l"}, helperArgs("bigline", strconv.Itoa(size))...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		got := labelledText(t, string(out))
		for _, l := range []string{"0: ", "1: "} {
			if got[l] != strings.Repeat("x", size) {
				t.Errorf("instance %s: %d bytes of x, want %d", l[:1], len(got[l]), size)
			}
		}
	})
}

// labelledText splits -l output by label ("0: ") and joins each label's
// lines without their newlines; a line without a known label fails t.
func labelledText(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]*strings.Builder{"0: ": {}, "1: ": {}}
	for _, l := range strings.SplitAfter(out, "\n") {
		if l == "" {
			continue
		}
		b := got[l[:min(3, len(l))]]
		if b == nil || !strings.HasSuffix(l, "\n") {
			t.Fatalf("a line torn, unlabelled or unended: %.80q", l)
		}
		b.WriteString(l[3 : len(l)-1])
	}
	return map[string]string{"0: ": got["0: "].String(), "1: ": got["1: "].String()}
}

// TestOneLongLineDoesNotStallTheOthers: instance 0 leaves a stderr line
// longer than 64 KiB open and waits, as a progress bar does between
// redraws. Held until its newline, that line stopped instance 1's stderr,
// and instance 1 with it once its pipe filled. It is now let go once its
// writer pauses while instance 1 waits; the test waits for instance 1 to
// finish before it lets instance 0 end its line.
func TestOneLongLineDoesNotStallTheOthers(t *testing.T) {
	for _, pidfd := range []bool{true, false} {
		t.Run(fmt.Sprintf("pidfd=%v", pidfd), func(t *testing.T) {
			if pidfd && !process.KernelPidfd() {
				t.Skip("this kernel hands out no pidfds")
			}
			oneLongLineWith(t, pidfd)
		})
	}
}

func oneLongLineWith(t *testing.T, pidfd bool) {
	dir := t.TempDir()
	script := `if [ "$GPULAUNCH_INSTANCE" = 0 ]; then
  head -c 70000 /dev/zero | tr '\0' '#' >&2; : > "$0/zero-wrote"
  while [ ! -e "$0/release" ]; do sleep 0.01; done; echo " done" >&2; exit 0
fi
while [ ! -e "$0/zero-wrote" ]; do sleep 0.01; done
i=0; while [ $i -lt 3000 ]; do echo "instance 1 line $i, padded to fill its pipe: ......................................" >&2; i=$((i+1)); done
: > "$0/one-done"`
	cmd := gpulaunch(t, "-n", "2", "-G", "0", "-q", "-l", "--", "sh", "-c", script, dir)
	if !pidfd {
		cmd.Env = append(cmd.Env, "GLTEST_NOPIDFD=1")
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(t, "instance 1's 3000 lines, written while instance 0's long line is open", func() bool {
		_, err := os.Stat(filepath.Join(dir, "one-done"))
		return err == nil
	})
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("gpulaunch: %v", err)
	}
	got := labelledText(t, stderr.String())
	if want := strings.Repeat("#", 70000) + " done"; got["0: "] != want {
		t.Errorf("instance 0 wrote %d bytes, want the 70000 # and \" done\" (%d)", len(got["0: "]), len(want))
	}
	var want strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&want, "instance 1 line %d, padded to fill its pipe: ......................................", i)
	}
	if got["1: "] != want.String() {
		t.Errorf("instance 1's lines lost or out of order: %d bytes, want %d", len(got["1: "]), want.Len())
	}
}

// TestRunBoundedMemoryUnderSlowReader: gpulaunch applies backpressure
// instead of buffering a fast writer's output. Its growth is measured
// against the same gpulaunch with a little output, not against a fixed
// size: the binary's own footprint changes with what it links (the race
// detector's shadow memory, what its libraries allocate at init) and says
// nothing about buffering. Buffered, the 2,000,000 lines of 4 instances
// would be over 100 MiB.
func TestRunBoundedMemoryUnderSlowReader(t *testing.T) {
	base := peakRSSUnderSlowReader(t, "20000")
	peak := peakRSSUnderSlowReader(t, "2000000")
	if base == 0 || peak == 0 || peak-base > 32<<20 {
		t.Fatalf("gpulaunch peak RSS %d KiB under a slow reader, %d KiB with little output: want it under 32 MiB more", peak>>10, base>>10)
	}
	t.Logf("peak RSS %d KiB, %d KiB with little output", peak>>10, base>>10)
}

// peakRSSUnderSlowReader runs 4 instances printing lines each to a slow
// reader of gpulaunch's stdout and says the highest RSS gpulaunch had.
func peakRSSUnderSlowReader(t *testing.T, lines string) int {
	cmd := gpulaunch(t, append([]string{"-n", "4", "-G", "0", "-O", "-l"}, helperArgs("lines", lines)...)...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak int
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		if _, err := pipe.Read(buf); err == io.EOF {
			break
		}
		if i%64 == 0 {
			time.Sleep(time.Millisecond) // a slow reader: ~256 KiB/ms at most
		}
		if rss := vmRSS(cmd.Process.Pid); rss > peak {
			peak = rss
		}
		if i > 20000 { // enough to fill every pipe and buffer many times over
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, pipe)
	_ = cmd.Wait()
	return peak
}

func vmRSS(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.Atoi(f[1])
			return kb << 10
		}
	}
	return 0
}

func TestRunOutputFiles(t *testing.T) {
	dir := t.TempDir()
	cmd := gpulaunch(t, append([]string{"-n", "2", "-G", "0", "-o", filepath.Join(dir, "out-%j-%2t.log")}, helperArgs("lines", "3")...)...)
	cmd.Env = append(cmd.Env, "SLURM_JOB_ID=77")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for i := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out-77-%02d.log", i)))
		if err != nil || string(b) != fmt.Sprintf("%d-0\n%d-1\n%d-2\n", i, i, i) {
			t.Fatalf("instance %d file: %q %v", i, b, err)
		}
	}
}

// TestRunBadInput: bad invocations stop before anything starts, with
// one line naming what is wrong.
func TestRunBadInput(t *testing.T) {
	cases := []struct {
		name  string
		env   sched.Env
		args  []string
		words string
	}{
		{"no command", nil, []string{"-n", "2", "-G", "0"}, "no command to run"},
		{"no -n and no GPU", nil, []string{"--", "true"}, "-n N is required"},
		{"explicit -n 0 is not taken as 'one per GPU'", nil, []string{"-n", "0", "--simulate", "dgx-h100", "--", "true"}, "at least 1"},
		{"bad --wait", nil, []string{"-n", "1", "-G", "0", "-W", "soon", "--", "true"}, `--wait "soon": not a duration`},
		{"negative --timeout", nil, []string{"-n", "1", "-G", "0", "--timeout", "-5", "--", "true"}, "cannot be negative"},
		{"bad --timeout unit", nil, []string{"-n", "1", "-G", "0", "--timeout", "3 fortnights", "--", "true"}, "not a duration"},
		{"zero --kill-wait", nil, []string{"-n", "1", "-G", "0", "--kill-wait", "0", "--", "true"}, "longer than 0"},
		{"bad --mem-per-task", nil, []string{"-n", "1", "-G", "0", "--mem-per-task", "lots", "--", "true"}, "not a memory size"},
		{"negative --mem-per-task", nil, []string{"-n", "1", "-G", "0", "--mem-per-task", "-4G", "--", "true"}, "not a memory size"},
		{"negative --restarts", nil, []string{"-n", "1", "-G", "0", "--restarts", "-1", "--", "true"}, "cannot be negative"},
		{"--restarts not a number", nil, []string{"-n", "1", "-G", "0", "--restarts", "x", "--", "true"}, `invalid argument "x"`},
		{"bad output pattern", nil, []string{"-n", "1", "-G", "0", "-o", "out-%q", "--", "true"}, "%q is not one of"},
		{"unfinished pattern", nil, []string{"-n", "1", "-G", "0", "-e", "err-%", "--", "true"}, "unfinished"},
		{"pattern width too big", nil, []string{"-n", "1", "-G", "0", "-o", "o-%99t", "--", "true"}, "more than 10"},
		{"bad --gpu-ids", nil, []string{"-n", "1", "-G", "0", "--gpu-ids", "name", "--", "true"}, "uuid or index"},
		{"bad --gpu-visibility", nil, []string{"-n", "1", "-G", "0", "--gpu-visibility", "some", "--", "true"}, "own or all"},
		{"bad --mem-bind", nil, []string{"-n", "1", "-G", "0", "--mem-bind", "interleave", "--", "true"}, "preferred, bind or none"},
		{"more instances than GPUs", nil, []string{"-n", "9", "--simulate", "dgx-h100", "--", "true"}, "needs 9 GPU(s), the allocation has 8"},
		{"unknown run flag", nil, []string{"-n", "1", "--frobnicate", "--", "true"}, "unknown flag: --frobnicate"},
		{"CUDA_VISIBLE_DEVICES leaves too few GPUs", sched.Env{"CUDA_VISIBLE_DEVICES": "0,1"}, []string{"-n", "4", "--simulate", "dgx-h100", "--", "true"}, "the allocation has 2"},
		{"index ids need CUDA indices", sched.Env{"CUDA_VISIBLE_DEVICES": "GPU-nope"}, []string{"-n", "1", "--simulate", "dgx-h100", "--", "true"}, "the allocation has 0"},
		{"bad local rank env", sched.Env{"PMI_LOCAL_RANK": "-2"}, []string{"-n", "1", "-G", "0", "--", "true"}, "PMI_LOCAL_RANK"},
		{"unknown first word", nil, []string{"python", "train.py"}, "gpulaunch -n N -- python"},
		{"--tmux outside tmux", nil, []string{"-n", "2", "-G", "0", "--tmux", "--", "true"}, "this shell is not in tmux (TMUX is not set)"},
		{"--tmux with too many panes", sched.Env{"TMUX": "/tmp/tmux-0/default,1,0"}, []string{"-n", "17", "-G", "0", "-O", "--tmux", "--", "true"}, "17 panes do not fit a window (at most 16)"},
		{"status takes no argument", nil, []string{"status", "2"}, "status takes no arguments"},
		{"top: bad --interval", nil, []string{"top", "--interval", "often"}, `--interval "often": not a duration`},
		{"logs: negative --tail", nil, []string{"logs", "--tail", "-3", "0"}, "--tail -3: cannot be negative"},
		{"signal: bad instance", nil, []string{"signal", "two", "TERM"}, `signal "two": INSTANCE is an instance number or all`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := sched.Env{"PATH": os.Getenv("PATH")}
			for k, v := range tc.env {
				env[k] = v
			}
			_, stderr, code := runCLI(t, env, tc.args...)
			last := strings.TrimSpace(stderr)
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:]
			}
			if code != exitUsage || !strings.HasPrefix(last, "gpulaunch: error: ") || !strings.Contains(last, tc.words) {
				t.Fatalf("exit %d, last line %q; want exit 2 and %q", code, last, tc.words)
			}
			if strings.Contains(stderr, "started:") {
				t.Fatalf("something was started:\n%s", stderr)
			}
		})
	}
}

// nodeFile writes a node file of n fake GPUs on NUMA node 0 of this
// machine, whose device files do not exist (so none is hidden).
func nodeFile(t *testing.T, n int) string {
	t.Helper()
	var gpus []string
	for i := range n {
		gpus = append(gpus, fmt.Sprintf(`{"pci": "0000:%02x:00.0", "numa": 0, "uuid": "GPU-00000000-0000-4000-8000-%012d", "device": "/nonexistent/nvidia%d"}`, i+1, i, i))
	}
	file := filepath.Join(t.TempDir(), "node.json")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`{"name": "fake", "gpus": [%s]}`, strings.Join(gpus, ","))), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// Rank mode: the launcher's local rank picks the slot, and the app replaces
// gpulaunch (same pid), bound, with the launcher's global rank.
func TestRankModeExecsBoundApp(t *testing.T) {
	node := nodeFile(t, 2)
	status, _ := os.ReadFile("/proc/self/status")
	mine, _, _ := cgroup.ParseProcStatus(string(status))
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		rank int
	}{
		{"openmpi auto", nil, []string{"OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=6", "SLURM_LOCALID=0", "SLURM_PROCID=0"}, 1},
		{"hydra exec", []string{"exec"}, []string{"MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=2", "PMI_RANK=4", "PMI_SIZE=6"}, 0},
		{"srun step auto", nil, []string{"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_LOCALID=1", "SLURM_PROCID=3", "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_STEP_NODELIST=a,b", "SLURMD_NODENAME=b", "SLURM_NODEID=1", "CUDA_VISIBLE_DEVICES=0,1", "SLURM_GPUS_ON_NODE=2"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			cmd := gpulaunch(t, append(append(tc.args, "--node-file", node), helperArgs("report", out)...)...)
			cmd.Env = append(cmd.Env, tc.env...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			var rep map[string]string
			b, err := os.ReadFile(fmt.Sprintf("%s.%d", out, tc.rank))
			if err != nil || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("rank %d wrote no report: %v", tc.rank, err)
			}
			if rep["pid"] != strconv.Itoa(cmd.Process.Pid) {
				t.Errorf("app pid %s, gpulaunch pid %d: gpulaunch must exec the app, not fork it", rep["pid"], cmd.Process.Pid)
			}
			wantGPU := fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", tc.rank)
			if rep["env:CUDA_VISIBLE_DEVICES"] != wantGPU {
				t.Errorf("rank %d CUDA_VISIBLE_DEVICES %q, want %s", tc.rank, rep["env:CUDA_VISIBLE_DEVICES"], wantGPU)
			}
			if rep["env:LOCAL_RANK"] != strconv.Itoa(tc.rank) || rep["env:LOCAL_WORLD_SIZE"] != "2" {
				t.Errorf("LOCAL_RANK %s LOCAL_WORLD_SIZE %s", rep["env:LOCAL_RANK"], rep["env:LOCAL_WORLD_SIZE"])
			}
			global := map[string]string{"openmpi auto": "5/6", "hydra exec": "4/6", "srun step auto": "3/4"}[tc.name]
			if got := rep["env:RANK"] + "/" + rep["env:WORLD_SIZE"]; got != global {
				t.Errorf("RANK/WORLD_SIZE %s, want the launcher's %s", got, global)
			}
			if mine.Size() >= 2 {
				// two ranks on this machine's CPUs: each its own half
				cpus, _ := cpuset.Parse(rep["Cpus_allowed_list"])
				if cpus.Size() != mine.Size()/2 || !strings.Contains(rep["numa_maps_first"], "prefer:0") {
					t.Errorf("rank %d bound to CPUs %q (numa_maps %q), want half of %s with prefer:0", tc.rank, rep["Cpus_allowed_list"], rep["numa_maps_first"], mine)
				}
			}
		})
	}
}

// The guard: each of several ranks would start its own -n instances.
func TestRankModeGuardAndConflicts(t *testing.T) {
	node := nodeFile(t, 4)
	env := []string{"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_LOCALID=0", "SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_TASKS_PER_NODE=4", "SLURM_STEP_NODELIST=a", "SLURMD_NODENAME=a", "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_GPUS_ON_NODE=4"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "4"}, "srun --ntasks-per-node=1 gpulaunch -n 4"},
		{[]string{"-l", "-K"}, "--label, --kill-on-bad-exit: this is rank 0 of 4"},
	} {
		marker := marker(t)
		cmd := gpulaunch(t, append(append(tc.args, "--node-file", node), helperArgs("sleep", "0s", marker)...)...)
		cmd.Env = append(cmd.Env, env...)
		b, err := cmd.CombinedOutput()
		if exitStatus(err) != 2 || !strings.Contains(string(b), tc.want) || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want exit 2 and one line with %q", tc.args, exitStatus(err), b, tc.want)
		}
	}
}

// Telemetry end to end on a simulated node: the fake apps declare GPU use,
// the simulated NVML reports it, the summary shows it, and launch
// verification flags an instance on another GPU and one that never used
// its own. The apps pick their role by instance through a shell.
func TestRunTelemetryAndLaunchVerification(t *testing.T) {
	script := `case $GPULAUNCH_INSTANCE in 0) m=own;; 1) m=other;; *) m=none;; esac; exec "$0" gltest-helper gpu-use $m 60 1024 800ms`
	cmd := gpulaunch(t, "-n", "3", "--simulate", "dgx-h100", "--gpu-visibility", "all", "--monitor-interval", "100ms", "--", "sh", "-c", script, os.Args[0])
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	lines := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) > 8 && (f[0] == "0" || f[0] == "1" || f[0] == "2") {
			lines[f[0]] = l
		}
	}
	// The mean counts the samples taken before the app declared its use,
	// how many depends on the machine's load: only its range is asserted
	// here (the averaging itself is TestGPUWatch's).
	m := regexp.MustCompile(` (\d+)/60 +1\.0 GiB `).FindStringSubmatch(lines["0"])
	if mean := 0; m != nil {
		mean, _ = strconv.Atoi(m[1])
		if mean < 1 || mean > 60 {
			m = nil
		}
	}
	if m == nil {
		t.Errorf("instance 0 used its GPU at 60%% with 1 GiB: want mean 1-60, peak 60; summary row: %q\n%s", lines["0"], text)
	}
	if !regexp.MustCompile(`warning: instance 1: process \d+ runs on GPU GPU-\S+, (instance \d+'s|no instance's) GPU, not its own`).MatchString(text) {
		t.Errorf("instance 1 on another GPU is not flagged:\n%s", text)
	}
	if !strings.Contains(text, "warning: instance 2: no process of it used its GPU(s)") {
		t.Errorf("GPU-idle instance 2 is not flagged:\n%s", text)
	}
	if strings.Contains(text, "warning: instance 0:") {
		t.Errorf("instance 0 did everything right but was flagged:\n%s", text)
	}
}
