package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mpsBed is one test's world for --mps: the stand-in control program and
// its client mpsclient on PATH (the test binary by those names:
// TestMain), its lifecycle events
// file, a private runtime directory, and the instances' files.
type mpsBed struct {
	dir, events, runtime, bin string
}

func newMPSBed(t *testing.T) mpsBed {
	t.Helper()
	// a short runtime directory: MPS's sockets must fit 108 bytes
	runtime, err := os.MkdirTemp("/tmp", "glm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	b := mpsBed{dir: t.TempDir(), bin: t.TempDir(), runtime: runtime}
	b.events = filepath.Join(b.dir, "events")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// the stand-in's control program and its CUDA client (an instance's
	// app: `mpsclient run 1s`, `mpsclient fault 100ms`): this binary
	for _, name := range []string{"nvidia-cuda-mps-control", "mpsclient"} {
		if err := os.Symlink(self, filepath.Join(b.bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// mpsApp is an instance that checks, as it starts, that its GPU's daemon
// is up and answers, writes what it was told to up.N, then runs rest.
const mpsApp = `f=$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid
test -s "$f" || { echo "no pid file $f" >&2; exit 9; }
echo get_server_list | nvidia-cuda-mps-control || exit 8
echo "$CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" > "$UPDIR/up.$GPULAUNCH_INSTANCE"
`

func (b mpsBed) cmd(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := gpulaunch(t, args...)
	cmd.Env = append(withoutSlurm(cmd.Env), "PATH="+b.bin+":"+os.Getenv("PATH"), "MPS_STANDIN_EVENTS="+b.events,
		"XDG_RUNTIME_DIR="+b.runtime, "UPDIR="+b.dir, "GLTEST_TMP="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// daemons are the pids the stand-in's events file says started, and how
// many quit.
func (b mpsBed) daemons(t *testing.T) (started []int, quit int) {
	data, _ := os.ReadFile(b.events)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "start":
			pid, _ := strconv.Atoi(f[1])
			started = append(started, pid)
		case len(f) >= 2 && f[0] == "quit":
			quit++
		}
	}
	return started, quit
}

// left are the run directories of daemons still in the runtime directory.
func (b mpsBed) left() []string {
	dirs, _ := filepath.Glob(filepath.Join(b.runtime, "gpulaunch", "mps-*"))
	return dirs
}

// (-O: this machine may have fewer CPUs than instances.)

// gone waits until none of pids runs (a zombie has ended).
func gone(t *testing.T, pids []int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var alive []int
		for _, pid := range pids {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running after 30s: %v", alive)
		}
	}
}

func waitUp(t *testing.T, dir string, n int, said fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ups, _ := filepath.Glob(filepath.Join(dir, "up.*")); len(ups) == n {
			return
		}
	}
	t.Fatalf("the %d instances never all came up:\n%s", n, said)
}

// The whole lifecycle with real processes: one daemon per shared GPU,
// up before any instance starts (each finds its GPU's pid file and an
// answer), every instance of a GPU told that GPU's pipe directory and its
// share; after the run each daemon has quit and the directories are gone.
func TestMPSLifecycle(t *testing.T) {
	b := newMPSBed(t)
	cmd := b.cmd(t, nil, "-n", "4", "-O", "--node-file", nodeFile(t, 2), "--mps", "--mps-mem-limit", "2G", "--monitor-interval", "0", "--", "sh", "-c", mpsApp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	started, quit := b.daemons(t)
	if len(started) != 2 || quit != 2 {
		t.Fatalf("%d daemons started and %d quit, want 2 and 2\n%s", len(started), quit, out)
	}
	gone(t, started)
	told := map[int]string{}
	for i := range 4 {
		up, err := os.ReadFile(filepath.Join(b.dir, "up."+strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("instance %d: %v\n%s", i, err, out)
		}
		told[i] = strings.TrimSpace(string(up))
		if f := strings.Fields(told[i]); len(f) != 3 || f[1] != "50" || f[2] != "0=2G" || !strings.HasPrefix(f[0], filepath.Join(b.runtime, "gpulaunch", "mps-")) {
			t.Errorf("instance %d was told %q, want its GPU's pipe directory, 50 and 0=2G", i, told[i])
		}
	}
	// the plan puts instances 0 and 2 on GPU 0, 1 and 3 on GPU 1
	if told[0] != told[2] || told[1] != told[3] || told[0] == told[1] {
		t.Errorf("pipe directories per instance: %v", told)
	}
	if left := b.left(); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
	for _, want := range []string{"Sharing:   GPU 0 (", "): instances 0,2 under MPS, 50% of its SMs each\n", "MPS: 2 control daemon(s) up"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// running starts 4 instances on 2 GPUs under --mps that wait, and
// returns once all 4 have found their daemon up.
func (b mpsBed) running(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := b.cmd(t, nil, "-n", "4", "-O", "--node-file", nodeFile(t, 2), "--mps", "--monitor-interval", "0", "--", "sh", "-c", mpsApp+"exec sleep 60")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitUp(t, b.dir, 4, &errb)
	return cmd
}

// Every way a run ends stops the daemons: a Ctrl-C (quit, directories
// removed, 130), and a SIGKILL of gpulaunch itself (the daemons' parent-
// death signal ends them; the next run removes what was left).
func TestMPSDaemonsEndWithTheRun(t *testing.T) {
	t.Run("Ctrl-C", func(t *testing.T) {
		b := newMPSBed(t)
		cmd := b.running(t)
		// status from another shell shows the sharing
		st := b.cmd(t, nil, "status", "--json")
		got, err := st.Output()
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		validateAgainstSchema(t, "status", got)
		if !strings.Contains(string(got), "instances 0,2 under MPS, 50% of its SMs each") {
			t.Errorf("status lacks the sharing:\n%s", got)
		}
		// each instance an MPS client, though --mps names its pipe
		// directory after the live table was made
		var snap struct {
			Instances []struct {
				MPSClient bool `json:"mps_client"`
			} `json:"instances"`
		}
		if err := json.Unmarshal(got, &snap); err != nil || len(snap.Instances) != 4 {
			t.Fatalf("status --json: %v\n%s", err, got)
		}
		for i, in := range snap.Instances {
			if !in.MPSClient {
				t.Errorf("instance %d: not an MPS client in status --json:\n%s", i, got)
			}
		}
		cmd.Process.Signal(syscall.SIGINT)
		if code := exitStatus(cmd.Wait()); code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
		started, quit := b.daemons(t)
		gone(t, started)
		if len(started) != 2 || quit != 2 || len(b.left()) > 0 {
			t.Errorf("%d started, %d quit, left %q", len(started), quit, b.left())
		}
	})
	t.Run("SIGKILL of gpulaunch", func(t *testing.T) {
		b := newMPSBed(t)
		cmd := b.running(t)
		cmd.Process.Kill()
		cmd.Wait()
		started, _ := b.daemons(t)
		if len(started) != 2 {
			t.Fatalf("%d daemons started, want 2", len(started))
		}
		gone(t, started)
		if len(b.left()) != 1 {
			t.Fatalf("a SIGKILLed gpulaunch's directory: %q", b.left())
		}
		os.Remove(b.events)
		os.Remove(filepath.Join(b.dir, "up.0"))
		again := b.cmd(t, nil, "-n", "2", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "--", "sh", "-c", mpsApp)
		if out, err := again.CombinedOutput(); err != nil {
			t.Fatalf("the next run: %v\n%s", err, out)
		}
		if left := b.left(); len(left) > 0 {
			t.Errorf("the next run left the dead run's directory: %q", left)
		}
	})
}

// A daemon that does not come up: one clear line with its log, a
// non-zero exit, no instance started, no daemon and no directory left.
func TestMPSDaemonThatDoesNotComeUp(t *testing.T) {
	b := newMPSBed(t)
	cmd := b.cmd(t, []string{"GPULAUNCH_MPS_WAIT=300ms", "MPS_STANDIN_NO_PIDFILE=1"}, "-n", "2", "--node-file", nodeFile(t, 1), "--mps", "--", "sh", "-c", mpsApp)
	var errb strings.Builder
	cmd.Stderr = &errb
	code := exitStatus(cmd.Run())
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	last := lines[len(lines)-1]
	if code == 0 || !strings.HasPrefix(last, "gpulaunch: error: MPS: the control daemon for GPU GPU-") || !strings.Contains(last, "wrote no") || !strings.Contains(last, "its log ends:") || !strings.HasSuffix(last, "nothing was started") {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	if ups, _ := filepath.Glob(filepath.Join(b.dir, "up.*")); len(ups) > 0 {
		t.Errorf("instances started: %q", ups)
	}
	started, _ := b.daemons(t)
	gone(t, started)
	if left := b.left(); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// The job's own MPS is used, not doubled: with CUDA_MPS_PIPE_DIRECTORY
// set (a site's prolog started a daemon there), no daemon starts and the
// instances keep the job's directory; a pipe directory gpulaunch would
// make in a place open to others is refused before anything starts.
func TestMPSOfTheJobAndPrivacy(t *testing.T) {
	t.Run("the job's own", func(t *testing.T) {
		b := newMPSBed(t)
		// Under b.runtime (/tmp), not t.TempDir: its control socket must
		// fit in sun_path whatever the checkout's path.
		site := filepath.Join(b.runtime, "site-mps")
		daemon := exec.Command(filepath.Join(b.bin, "nvidia-cuda-mps-control"), "-f")
		daemon.Env = append(os.Environ(), "CUDA_MPS_PIPE_DIRECTORY="+site, "CUDA_MPS_LOG_DIRECTORY="+site+"-log")
		if err := daemon.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { daemon.Process.Signal(syscall.SIGTERM); daemon.Wait() }()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(site, "nvidia-cuda-mps-control.pid")); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatal("the site's daemon never came up")
			}
		}
		cmd := b.cmd(t, []string{"CUDA_MPS_PIPE_DIRECTORY=" + site}, "-n", "2", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "--", "sh", "-c", mpsApp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if started, _ := b.daemons(t); len(started) != 0 {
			t.Errorf("gpulaunch started %d daemons beside the job's", len(started))
		}
		up, _ := os.ReadFile(filepath.Join(b.dir, "up.1"))
		if strings.TrimSpace(string(up)) != site || !strings.Contains(string(out), "MPS: using the job's own, at "+site) {
			t.Errorf("instance 1 was told %q\n%s", up, out)
		}
	})
	t.Run("a pipe directory open to others", func(t *testing.T) {
		b := newMPSBed(t)
		if err := os.Mkdir(filepath.Join(b.runtime, "gpulaunch"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(b.runtime, "gpulaunch"), 0o755)
		cmd := b.cmd(t, nil, "-n", "2", "--node-file", nodeFile(t, 1), "--mps", "--", "sh", "-c", mpsApp)
		out, _ := cmd.CombinedOutput()
		want := "gpulaunch: error: --mps: the MPS pipe directories would go in " + filepath.Join(b.runtime, "gpulaunch") + ", which is not private: "
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.HasPrefix(string(out), want) || strings.Count(string(out), "\n") != 1 {
			t.Errorf("exit %d:\n%s", code, out)
		}
		if started, _ := b.daemons(t); len(started) != 0 {
			t.Errorf("%d daemons started", len(started))
		}
	})
}

// plan shows the sharing: which instances on which GPU, under MPS with
// their share, or taking turns; in JSON by docs/plan.schema.json.
func TestPlanShowsSharing(t *testing.T) {
	stdout, stderr, code := runCLI(t, nil, "plan", "--simulate", "dgx-h100", "-n", "16", "--mps", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	validateAgainstSchema(t, "plan", []byte(stdout))
	if !strings.Contains(stdout, `"mode": "mps"`) || !strings.Contains(stdout, `"active_thread_percentage": 50`) || !strings.Contains(stdout, `"instances": [`) {
		t.Errorf("plan --json lacks the sharing:\n%s", stdout)
	}
	stdout, _, _ = runCLI(t, nil, "plan", "--simulate", "dgx-h100", "-n", "12", "--share-gpus")
	if !strings.Contains(stdout, "): instances 0,8 taking turns (time slicing; --mps to share it through MPS)\n") || strings.Contains(stdout, "instances 4 ") {
		t.Errorf("plan without --mps:\n%s", stdout)
	}
}

// info says what --mps would find on an NVIDIA node, in text and JSON.
func TestInfoSaysMPS(t *testing.T) {
	stdout, stderr, code := runCLI(t, map[string]string{"PATH": "/nonexistent"}, "info", "--simulate", "dgx-h100", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	validateAgainstSchema(t, "info", []byte(stdout))
	if !strings.Contains(stdout, `"says": "nvidia-cuda-mps-control is not on PATH: --mps needs it`) {
		t.Errorf("info --json:\n%s", stdout)
	}
	stdout, _, _ = runCLI(t, map[string]string{"PATH": "/nonexistent", "CUDA_MPS_PIPE_DIRECTORY": "/site/mps"}, "info", "--simulate", "dgx-h100")
	if !strings.Contains(stdout, "MPS:       the job's own at /site/mps (from CUDA_MPS_PIPE_DIRECTORY): --mps uses it\n") {
		t.Errorf("info:\n%s", stdout)
	}
}

// After the run gpulaunch waits up to 10 s for its daemons to quit; a
// daemon that does not quit is killed then. A Ctrl-C meanwhile ends that
// wait at once: the daemon and its server are killed, and the run's
// status (0) stands. Before, the signal was dropped (the run was over)
// and gpulaunch sat out the 10 s.
func TestMPSStopAfterTheRunAnswersSignals(t *testing.T) {
	b := newMPSBed(t)
	mark := marker(t)
	r := startSignalRunEnv(t, mark, b.runtime, []string{"PATH=" + b.bin + ":" + os.Getenv("PATH"), "MPS_STANDIN_EVENTS=" + b.events,
		"UPDIR=" + b.dir, "MPS_STANDIN_SERVER=1", "MPS_STANDIN_QUIT=ignore"},
		"-n", "2", "--node-file", nodeFile(t, 1), "--mps", "--monitor-interval", "0", "--", "sh", "-c", mpsApp)
	// the daemon was told to quit: gpulaunch waits in the stop, its
	// signals caught since before it asked
	waitFor(t, "the daemon told to quit", func() bool {
		logs, _ := filepath.Glob(filepath.Join(b.runtime, "gpulaunch", "mps-*", "0", "log", "control.log"))
		for _, l := range logs {
			if data, _ := os.ReadFile(l); strings.Contains(string(data), "Quit ignored") {
				return true
			}
		}
		return false
	})
	asked := time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	code, exited := r.waitExit(30 * time.Second)
	if !exited || code != 0 {
		t.Fatalf("exited %v with %d, want 0 (the run's):\n%s", exited, code, r.out)
	}
	// the wait is 10 s: ending well before it is the signal's doing
	if waited := time.Since(asked); waited > 8*time.Second {
		t.Errorf("gpulaunch took %s after the INT: it sat out the daemons' 10 s", waited)
	}
	if !strings.Contains(r.out.String(), "were killed") {
		t.Errorf("no word of the daemons killed:\n%s", r.out)
	}
	noSurvivors(t, mark, r.out)
}

// -n 5 --mps on 4 GPUs shares GPU 0 alone (instances 0 and 4): one daemon,
// for GPU 0; instances 1-3 have a GPU each to themselves and are told no
// MPS variable; the log line, the summary's Sharing line and the report
// say the same. Before, 4 daemons started ("one per shared GPU") and
// instances 1-3 got a pipe directory and 100% of their GPU's SMs.
func TestMPSDaemonsOnlyWhereGPUsAreShared(t *testing.T) {
	b := newMPSBed(t)
	report := filepath.Join(t.TempDir(), "r.json")
	app := `if [ -n "$CUDA_MPS_PIPE_DIRECTORY" ]; then test -s "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid" || exit 9; fi
echo "pipe=$CUDA_MPS_PIPE_DIRECTORY threads=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" > "$UPDIR/up.$GPULAUNCH_INSTANCE"`
	out, err := b.cmd(t, nil, "-n", "5", "-O", "--node-file", nodeFile(t, 4), "--mps", "--monitor-interval", "0", "--report", report, "--", "sh", "-c", app).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	started, quit := b.daemons(t)
	if len(started) != 1 || quit != 1 {
		t.Errorf("%d daemons started, %d quit; want 1 (GPU 0's)\n%s", len(started), quit, out)
	}
	ev, _ := os.ReadFile(b.events)
	if !strings.Contains(string(ev), "GPU-00000000-0000-4000-8000-000000000000\n") {
		t.Errorf("the daemon is not GPU 0's:\n%s", ev)
	}
	for i := range 5 {
		up, _ := os.ReadFile(filepath.Join(b.dir, "up."+strconv.Itoa(i)))
		told := strings.TrimSpace(string(up))
		shared := i == 0 || i == 4
		if shared != strings.HasPrefix(told, "pipe="+filepath.Join(b.runtime, "gpulaunch", "mps-")) || shared != strings.HasSuffix(told, "threads=50") {
			t.Errorf("instance %d (shared: %v) was told %q", i, shared, told)
		}
		if !shared && told != "pipe= threads=" {
			t.Errorf("instance %d, alone on its GPU, was told %q, want no MPS variable", i, told)
		}
	}
	for _, want := range []string{"MPS: 1 control daemon(s) up, one per shared GPU (GPU 0), in ", "MPS: instance(s) 1,2,3 have a GPU each to themselves: no daemon, no MPS variables",
		"Sharing:   GPU 0 (", "): instances 0,4 under MPS, 50% of its SMs each\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), "Sharing:   GPU "); n != 1 {
		t.Errorf("%d GPUs in the Sharing lines, want 1:\n%s", n, out)
	}
	var rep struct {
		Plan struct {
			Sharing struct {
				GPUs []struct {
					Index     int   `json:"index"`
					Instances []int `json:"instances"`
				} `json:"gpus"`
			} `json:"gpu_sharing"`
		} `json:"plan"`
	}
	data, _ := os.ReadFile(report)
	if err := json.Unmarshal(data, &rep); err != nil || len(rep.Plan.Sharing.GPUs) != 1 || rep.Plan.Sharing.GPUs[0].Index != 0 || len(rep.Plan.Sharing.GPUs[0].Instances) != 2 {
		t.Errorf("the report's sharing: %+v (%v)", rep.Plan.Sharing, err)
	}
}
