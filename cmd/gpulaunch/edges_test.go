package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// The rows of "nothing lost, nothing reported wrong": each case a user
// met in the first week, run with real processes and files.

// -o without %t is one file holding every instance's output, stderr too
// (srun's meaning), labelled with -l, every line whole; it is emptied
// once, at the start.
func TestRunOneFileForEveryInstance(t *testing.T) {
	all := filepath.Join(t.TempDir(), "all.log")
	if err := os.WriteFile(all, []byte("from an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `i=0; while [ $i -lt 300 ]; do echo "out $GPULAUNCH_INSTANCE $i"; echo "err $GPULAUNCH_INSTANCE $i" >&2; i=$((i+1)); done`
	if b, err := gpulaunch(t, "-n", "2", "-G", "0", "-l", "-o", all, "--", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, _ := os.ReadFile(all)
	next := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, l := range lines {
		var label, stream, inst string
		var i int
		if _, err := fmt.Sscanf(l, "%s %s %s %d", &label, &stream, &inst, &i); err != nil || label != inst+":" || i != next[stream+inst] {
			t.Fatalf("torn, mislabelled or lost line %q in:\n%s", l, b)
		}
		next[stream+inst]++
	}
	if len(lines) != 1200 {
		t.Errorf("%d lines, want 1200 (2 instances × 300 × stdout and stderr)", len(lines))
	}
}

// A queue's -o without a per-task pattern is one file for the whole
// queue; with {#} (or %t) a file per task.
func TestQueueOneFileOrOnePerTask(t *testing.T) {
	dir := t.TempDir()
	input := seqInput(t, 5)
	one := filepath.Join(dir, "one.log")
	if b, err := gpulaunch(t, "-n", "2", "-G", "0", "-o", one, "--each-line", input, "--", "sh", "-c", `echo "task $1"; echo "oops $1" >&2`, "sh", "{}").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, _ := os.ReadFile(one)
	for i := 1; i <= 5; i++ {
		if !strings.Contains(string(b), fmt.Sprintf("task %d\n", i)) || !strings.Contains(string(b), fmt.Sprintf("oops %d\n", i)) {
			t.Errorf("one.log lacks task %d's lines:\n%s", i, b)
		}
	}
	if n := strings.Count(string(b), "\n"); n != 10 {
		t.Errorf("one.log has %d lines, want 10", n)
	}
	if b, err := gpulaunch(t, "-n", "2", "-G", "0", "-o", filepath.Join(dir, "t{#}.log"), "--each-line", input, "--", "echo", "task", "{}").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for i := 1; i <= 5; i++ {
		if b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("t%d.log", i))); string(b) != fmt.Sprintf("task %d\n", i) {
			t.Errorf("t%d.log = %q", i, b)
		}
	}
}

// Every task's files are checked before anything starts: a directory
// missing for a later task refuses the queue, naming it, and changes
// nothing — not even a joblog that is there already.
func TestQueueOutputsCheckedBeforeTheStart(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "od", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	joblog := filepath.Join(dir, "joblog")
	old := "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n1\t:\t1.000\t     0.001\t0\t0\t0\t0\tx\n"
	if err := os.WriteFile(joblog, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(joblog)
	out, err := gpulaunch(t, queueArgs(dir, seqInput(t, 5), []string{"-n", "2", "-G", "0", "-o", filepath.Join(dir, "od", "%t", "x"), "--joblog", joblog})...).CombinedOutput()
	want := "task 2 writes " + filepath.Join(dir, "od", "2", "x") + ", but the directory " + filepath.Join(dir, "od", "2") + " does not exist"
	if exitStatus(err) != exitUsage || !strings.Contains(string(out), want) || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Fatalf("exit %d, output %q; want exit 2 and one line with %q", exitStatus(err), out, want)
	}
	if len(marks(t, dir)) != 0 {
		t.Error("tasks ran although the queue was refused")
	}
	after, _ := os.Stat(joblog)
	if b, _ := os.ReadFile(joblog); string(b) != old || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the refusal changed the joblog:\n%s", b)
	}
}

// A signal that stops a queue with tasks left gives 255, as GNU
// parallel's: `gpulaunch … && next` must not go on.
func TestQueueStoppedBySignalFails(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			taskScript(t, dir)
			cmd := gpulaunch(t, queueArgs(dir, seqInput(t, 50), []string{"-n", "2", "-G", "0", "--kill-wait", "2s"}, "slow", "0.3")...)
			var out lockedBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "two tasks done", func() bool { return len(marks(t, dir)) >= 2 })
			_ = cmd.Process.Signal(sig)
			err := cmd.Wait()
			if exitStatus(err) != 255 || !strings.Contains(out.String(), "not finished") {
				t.Errorf("exit %d, want 255 and the unfinished tasks named:\n%s", exitStatus(err), out.String())
			}
		})
	}
}

// The exit status and joblog of a queue, as GNU parallel's: the failed
// share for --halt fail=P% when it is not reached; a signalled task's
// Exitval 128+signal and the local host ":".
func TestQueueParallelExitStatusAndJoblog(t *testing.T) {
	dir := t.TempDir()
	joblog := filepath.Join(dir, "joblog")
	out, err := gpulaunch(t, "-n", "2", "-G", "0", "--halt", "now,fail=70%", "--joblog", joblog, "--each-line", seqInput(t, 10),
		"--", "sh", "-c", `[ "$1" = 3 ] && kill -ABRT $$; exit $(( $1 % 2 ))`, "sh", "{}").CombinedOutput()
	if exitStatus(err) != 50 {
		t.Errorf("5 of 10 failed under --halt now,fail=70%%: exit %d, want 50 (the failed share)\n%s", exitStatus(err), out)
	}
	f, _ := os.Open(joblog)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if c[0] == "Seq" {
			continue
		}
		if c[1] != ":" {
			t.Errorf("Host %q, want \":\" (the local host, as parallel writes it)", c[1])
		}
		if c[0] == "3" && (c[6] != "134" || c[7] != "6") {
			t.Errorf("task 3, killed by SIGABRT: Exitval %s Signal %s, want 134 6", c[6], c[7])
		}
	}
}

// --report naming a directory is refused before anything starts, and
// leaves no stray file.
func TestRunReportIntoADirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	mk := marker(t)
	out, err := gpulaunch(t, append([]string{"-n", "1", "-G", "0", "--report", dir}, helperArgs("sleep", "0s", mk)...)...).CombinedOutput()
	if exitStatus(err) != exitUsage || !strings.Contains(string(out), "is a directory: give a file name") || strings.Contains(string(out), "started:") {
		t.Fatalf("exit %d:\n%s", exitStatus(err), out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refusal left %v behind", entries)
	}
}

// An instance that ends between two samples still reports its CPU time
// and peak memory: the kernel's, from wait4.
func TestRunShortInstanceCPUFromTheKernel(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.json")
	out, err := gpulaunch(t, append([]string{"-n", "1", "-G", "0", "--monitor-interval", "1h", "--report", report}, helperArgs("burn", "200ms")...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r struct {
		Instances []struct {
			CPU float64 `json:"cpu_seconds"`
			RSS uint64  `json:"rss_peak_bytes"`
		} `json:"instances"`
	}
	b, _ := os.ReadFile(report)
	validateAgainstSchema(t, "report", b)
	if err := json.Unmarshal(b, &r); err != nil || len(r.Instances) != 1 {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if i := r.Instances[0]; i.CPU < 0.15 || i.RSS < 1<<20 {
		t.Errorf("cpu_seconds %.3f, rss_peak_bytes %d: want the 0.2 s it burned and its resident memory", i.CPU, i.RSS)
	}
	// the summary's row: … PEAK RSS  CPU  ENDED BY
	m := regexp.MustCompile(`(?m)^0 .* (\d+) KiB +(\d+\.\d)s +-$|^0 .* (\d+\.\d) MiB +(\d+\.\d)s +-$`).FindStringSubmatch(string(out))
	if m == nil || (m[2] == "0.0" || m[2] == "") && (m[4] == "0.0" || m[4] == "") {
		t.Errorf("the summary shows no CPU time or peak RSS:\n%s", out)
	}
}

// `gpulaunch … | head`: the reader goes, the output is dropped with one
// warning, the instances run to their end, and gpulaunch ends cleanly,
// its control socket removed.
func TestRunSurvivesAClosedStdout(t *testing.T) {
	runtime := t.TempDir()
	cmd := gpulaunch(t, append([]string{"-n", "2", "-G", "0"}, helperArgs("lines", "200000")...)...)
	cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+runtime)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(pipe).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	err = cmd.Wait()
	if err != nil || strings.Count(stderr.String(), "writing stdout failed") != 1 {
		t.Errorf("exit %v; want 0 and one warning:\n%s", err, stderr.String())
	}
	if socks, _ := filepath.Glob(filepath.Join(runtime, "gpulaunch", "*.sock")); len(socks) > 0 {
		t.Errorf("control socket left behind: %v", socks)
	}
}

// --ddp: one rank's failure restarts the whole group (torchrun's
// semantics), every rank in its slot with TORCHELASTIC_RESTART_COUNT; with
// no restart left, it ends the others as -K does.
func TestDDPGroupFailsAndRestartsWhole(t *testing.T) {
	script := `echo "$GPULAUNCH_INSTANCE $RANK $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS" >>"$0"
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  if [ "$GPULAUNCH_INSTANCE" = 1 ]; then sleep 0.3; exit 3; fi
  exec sleep 60
fi`
	t.Run("restarts", func(t *testing.T) {
		runs := filepath.Join(t.TempDir(), "runs")
		begin := time.Now()
		out, err := gpulaunch(t, "-n", "3", "-G", "0", "-O", "--ddp", "--restarts", "1", "--kill-wait", "2s", "--", "sh", "-c", script, runs).CombinedOutput()
		if err != nil || time.Since(begin) > 40*time.Second {
			t.Fatalf("%v after %s\n%s", err, time.Since(begin), out)
		}
		b, _ := os.ReadFile(runs)
		for i := range 3 {
			for _, count := range []string{"0", "1"} {
				if line := fmt.Sprintf("%d %d %s 1\n", i, i, count); !strings.Contains(string(b), line) {
					t.Errorf("instance %d never ran with TORCHELASTIC_RESTART_COUNT=%s (rank %d); runs:\n%s", i, count, i, b)
				}
			}
		}
	})
	// A rank that fails at once, at every start, fails while the group's
	// other ranks are still being started again: every rank must take part
	// in every restart (the group waits for all before it starts all
	// again), none twice, and the group end after the last as by -K.
	t.Run("a rank that fails at every start", func(t *testing.T) {
		dir := t.TempDir()
		runs, report := filepath.Join(dir, "runs"), filepath.Join(dir, "report.json")
		every := `echo "$GPULAUNCH_INSTANCE $RANK $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS" >>"$0"
if [ "$GPULAUNCH_INSTANCE" = 0 ]; then exit 3; fi
exec sleep 60`
		out, err := gpulaunch(t, "-n", "3", "-G", "0", "-O", "--ddp", "--restarts", "2", "--kill-wait", "2s", "--report", report, "--", "sh", "-c", every, runs).CombinedOutput()
		if exitStatus(err) != 3 {
			t.Fatalf("exit %d, want the failing rank's 3:\n%s", exitStatus(err), out)
		}
		b, _ := os.ReadFile(runs)
		for _, count := range []string{"0", "1", "2"} {
			if line := fmt.Sprintf("0 0 %s 2\n", count); strings.Count(string(b), line) != 1 {
				t.Errorf("instance 0 ran %d times with TORCHELASTIC_RESTART_COUNT=%s, want once; runs:\n%s", strings.Count(string(b), line), count, b)
			}
		}
		var r struct {
			Instances []struct {
				Restarts int `json:"restarts"`
			} `json:"instances"`
		}
		if rb, err := os.ReadFile(report); err != nil || json.Unmarshal(rb, &r) != nil || len(r.Instances) != 3 {
			t.Fatalf("report: %v\n%s", err, rb)
		}
		for i, inst := range r.Instances {
			if inst.Restarts != 2 {
				t.Errorf("instance %d: %d restarts, want the group's 2; runs:\n%s", i, inst.Restarts, b)
			}
		}
	})
	t.Run("no restart left", func(t *testing.T) {
		runs := filepath.Join(t.TempDir(), "runs")
		out, err := gpulaunch(t, "-n", "3", "-G", "0", "-O", "--ddp", "--kill-wait", "2s", "--", "sh", "-c", script, runs).CombinedOutput()
		if exitStatus(err) != 3 || strings.Count(string(out), "kill-on-bad-exit\n") != 2 {
			t.Errorf("exit %d, want the failing rank's 3 with the two others ended:\n%s", exitStatus(err), out)
		}
	})
}

// The error line carries the reason itself, and the fix.
func TestNoGPUErrorSaysWhy(t *testing.T) {
	node := nodeFile(t, 2)
	for _, tc := range []struct {
		name  string
		env   sched.Env
		words []string
	}{
		{"no GPU on this machine", nil, []string{"the allocation has 0", "sees no GPU on this node:", "no NVIDIA driver", "-G 0", "--node-file"}},
		{"a GPU named twice", sched.Env{"GPULAUNCH_NODE_FILE": node, "CUDA_VISIBLE_DEVICES": "0,0"}, []string{"CUDA_VISIBLE_DEVICES=0,0: it names GPU 0 twice"}},
		{"junk", sched.Env{"GPULAUNCH_NODE_FILE": node, "CUDA_VISIBLE_DEVICES": "junk"}, []string{`CUDA_VISIBLE_DEVICES=junk: "junk" is not a GPU index or UUID`}},
		{"beyond the GPUs", sched.Env{"GPULAUNCH_NODE_FILE": node, "CUDA_VISIBLE_DEVICES": "9"}, []string{"CUDA_VISIBLE_DEVICES=9: index 9 is beyond the 2 GPU(s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := sched.Env{"PATH": os.Getenv("PATH")}
			for k, v := range tc.env {
				env[k] = v
			}
			_, stderr, code := runCLI(t, env, "-n", "2", "--", "true")
			if code != exitUsage || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q: want exit 2 and one line", code, stderr)
			}
			for _, w := range tc.words {
				if !strings.Contains(stderr, w) {
					t.Errorf("%q lacks %q", stderr, w)
				}
			}
		})
	}
}

// Bad input gets one plain line that names the flag or line, without the
// parser's own words.
func TestMessagesInPlainWords(t *testing.T) {
	dir := t.TempDir()
	nul := filepath.Join(dir, "lines")
	if err := os.WriteFile(nul, []byte("a\nb\x00c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "abc", "--", "true"}, `-n/--ntasks: invalid argument "abc": not a whole number`},
		{[]string{"-n", "1", "-G", "0", "--", ""}, "the COMMAND after -- is an empty word"},
		{[]string{"-n", "1", "-G", "0", "--each-line", nul, "--", "echo", "{}"}, "line 2 holds a NUL byte"},
		{[]string{"-n", "5000", "-G", "0", "--", "true"}, "-n 5000 puts 5000 instances without a GPU of their own on 2 allowed CPU(s)"},
		{[]string{"-n", "1", "-G", "0", "--json", "--", "true"}, "--json: a run writes its summary as a table"},
		{[]string{"-n", "1", "-G", "0", "--retries", "0", "--each-line", nul, "--", "echo"}, `--retries 0: GNU parallel reads 0 as "try forever"`},
	} {
		_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, tc.args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) ||
			strings.Contains(stderr, "strconv") || strings.Contains(stderr, "invalid syntax") {
			t.Errorf("%q: exit %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	// --dry-run --json does what it says: the plan, as JSON
	stdout, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "2", "-G", "0", "--dry-run", "--json")
	var plan planOut
	if code != 0 || json.Unmarshal([]byte(stdout), &plan) != nil || len(plan.Slots) != 2 {
		t.Errorf("--dry-run --json: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// `gpulaunch logs -f 0 | head` ends quietly when head has had enough.
func TestLogsIntoAClosedPipe(t *testing.T) {
	r := startLiveRun(t, nil, append([]string{"-n", "1", "-G", "0"}, helperArgs("control-app")...)...)
	r.waitRunning(t)
	cmd := gpulaunch(t, "logs", "-f", "--pid", r.pid(), "0")
	cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+r.runtime)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(pipe).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	err = cmd.Wait()
	if code := exitStatus(err); (code != 0 && code != 128+int(syscall.SIGPIPE) && code != -1) || stderr.String() != "" {
		t.Errorf("logs -f into a closed pipe: exit %v, stderr %q; want a quiet end", err, stderr.String())
	}
	_, _, _ = r.client(t, "signal", "--pid", r.pid(), "all", "TERM")
	r.wait(t)
}

// burnCPU spins until this process has used d of CPU time.
func burnCPU(d time.Duration) {
	for {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
			return
		}
		for i := 0; i < 1e6; i++ {
			_ = strconv.Itoa(i)
		}
	}
}
