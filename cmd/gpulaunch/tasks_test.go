package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// queueTaskScript is the fake task, a shell script because a queue test
// starts a thousand of them (the race-built test binary takes a second to
// start). Arguments: DIR SEQ [MODE [ARG]]. It appends a line saying where
// it ran to DIR/mark.SEQ — a task that ran twice has two lines — and
// does what MODE asks.
const queueTaskScript = `#!/bin/sh
dir=$1 seq=$2 mode=$3 arg=$4
while read -r k v; do [ "$k" = Cpus_allowed_list: ] && allowed=$v; done </proc/self/status
mark() { echo "run=$GLTEST_RUN slot=$GPULAUNCH_INSTANCE task=$GPULAUNCH_TASK gpu=$CUDA_VISIBLE_DEVICES cpus=$GPULAUNCH_CPUS allowed=$allowed" >>"$dir/mark.$seq"; }
case $mode in
crash-at-500)
  # in run 1, gpulaunch dies while 497-499 sleep (they die with it, unmarked)
  if [ "$GLTEST_RUN" = 1 ] && [ "$seq" -ge 497 ] && [ "$seq" -le 499 ]; then exec sleep 30; fi
  if [ "$GLTEST_RUN" = 1 ] && [ "$seq" = 500 ]; then sleep 0.3; kill -9 $PPID; exec sleep 10; fi ;;
fail-3s)
  if [ "$GLTEST_RUN" = 1 ] && [ $((seq % 10)) = 3 ]; then mark; exit 1; fi ;;
fail-at) # the others take a while, so that the halt finds one running
  if [ "$seq" = "$arg" ]; then mark; exit 4; fi; sleep 0.3 ;;
slow)
  sleep "$arg" || exit 99 ;;
flaky) # fails until it has run ARG times
  mark; n=0; while read -r l; do n=$((n + 1)); done <"$dir/mark.$seq"
  [ "$n" -ge "$arg" ] && exit 0; exit 2 ;;
esac
mark
echo "task $seq done"
`

// taskScript writes the fake task into dir.
func taskScript(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "task.sh")
	if err := os.WriteFile(p, []byte(queueTaskScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// seqInput writes the numbers 1..n, one per line, as --each-line input.
func seqInput(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintln(&b, i)
	}
	p := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// marks reads every DIR/mark.SEQ: task → its lines.
func marks(t *testing.T, dir string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "mark.*"))
	for _, f := range files {
		seq, _ := strconv.Atoi(strings.TrimPrefix(filepath.Ext(f), "."))
		b, _ := os.ReadFile(f)
		out[seq] = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	return out
}

// joblogSeqs reads a joblog: task → its records (Exitval and Signal).
func joblogSeqs(t *testing.T, path string) map[int][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int][]string{}
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		cols := strings.Split(sc.Text(), "\t")
		if n == 0 {
			if sc.Text() != "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand" {
				t.Fatalf("joblog header %q", sc.Text())
			}
			continue
		}
		if len(cols) != 9 {
			t.Fatalf("joblog line %d has %d columns: %q", n+1, len(cols), sc.Text())
		}
		seq, _ := strconv.Atoi(cols[0])
		out[seq] = append(out[seq], cols[6]+"/"+cols[7])
	}
	return out
}

func queueArgs(dir, input string, flags []string, mode ...string) []string {
	args := append(flags, "--each-line", input, "--", filepath.Join(dir, "task.sh"), dir, "{}")
	return append(args, mode...)
}

func TestQueueRunsEveryTaskOnceOnItsSlot(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	cmd := gpulaunch(t, queueArgs(dir, seqInput(t, 1000), []string{"-n", "4", "--simulate", "dgx-h100", "--joblog", dir + "/joblog"})...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := marks(t, dir)
	slots := map[string]string{} // slot → its GPU and CPUs, the same for every task
	gpus := map[string]string{}
	for seq := 1; seq <= 1000; seq++ {
		if len(m[seq]) != 1 {
			t.Fatalf("task %d ran %d times", seq, len(m[seq]))
		}
		f := strings.Fields(m[seq][0])
		slot, where := f[1], f[3]+" "+f[4]
		if f[2] != "task="+strconv.Itoa(seq) || !strings.HasPrefix(f[3], "gpu=GPU-") {
			t.Fatalf("task %d: %q", seq, m[seq][0])
		}
		if prev, ok := slots[slot]; ok && prev != where {
			t.Fatalf("%s ran tasks on %q and on %q", slot, prev, where)
		}
		slots[slot] = where
		if other, ok := gpus[f[3]]; ok && other != slot {
			t.Fatalf("%s is used by %s and %s", f[3], other, slot)
		}
		gpus[f[3]] = slot
	}
	if len(slots) != 4 {
		t.Errorf("tasks ran in %d slots, want 4: %v", len(slots), slots)
	}
	if jl := joblogSeqs(t, dir+"/joblog"); len(jl) != 1000 {
		t.Errorf("joblog has %d tasks", len(jl))
	}
	if !strings.Contains(string(out), "tasks: 1000 of 1000 finished") || !strings.Contains(string(out), "1000 succeeded, 0 failed") {
		t.Errorf("summary:\n%s", out)
	}
	if strings.Contains(string(out), "/1000 done") {
		t.Errorf("a progress line although stdout is not a terminal:\n%s", out)
	}
}

// On this machine's own CPUs the slots' binding is real: every task of a
// slot runs on that slot's CPUs.
func TestQueueTasksAreBound(t *testing.T) {
	topo, cpus := thisMachine(t)
	dir := t.TempDir()
	taskScript(t, dir)
	cmd := gpulaunch(t, queueArgs(dir, seqInput(t, 40), []string{"-n", strconv.Itoa(len(cpus)), "--simulate", topo})...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for seq, lines := range marks(t, dir) {
		f := strings.Fields(lines[0])
		slot, _ := strconv.Atoi(strings.TrimPrefix(f[1], "slot="))
		if f[5] != "allowed="+strconv.Itoa(cpus[slot]) || f[4] != "cpus="+strconv.Itoa(cpus[slot]) {
			t.Errorf("task %d in slot %d: %s, want CPU %d", seq, slot, lines[0], cpus[slot])
		}
	}
}

// gpulaunch SIGKILLed in the middle: the tasks it was running die with
// it, unrecorded, and --resume runs them; every task runs exactly once
// in all. The crash is placed so that it is deterministic: task 500 kills
// gpulaunch while the other three slots hold tasks 497-499, asleep.
func TestQueueCrashThenResumeRunsEachTaskOnce(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	input, joblog := seqInput(t, 1000), filepath.Join(dir, "joblog")
	flags := []string{"-n", "4", "--simulate", "dgx-h100", "--joblog", joblog}
	crash := gpulaunch(t, queueArgs(dir, input, flags, "crash-at-500")...)
	crash.Env = append(crash.Env, "GLTEST_RUN=1")
	out, err := crash.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the first run should have been SIGKILLed by task 500: %v\n%s", err, out)
	}
	waitFor(t, "the killed run's tasks to be gone", func() bool { return len(liveWithMarker(dir)) == 0 })
	before := joblogSeqs(t, joblog)
	for seq := 1; seq <= 500; seq++ {
		if _, ok := before[seq]; ok != (seq <= 496) || len(before) != 496 {
			t.Fatalf("the joblog of the crashed run has %d tasks (task %d: %v), want tasks 1-496", len(before), seq, ok)
		}
	}
	resume := gpulaunch(t, queueArgs(dir, input, append(flags, "--resume"), "crash-at-500")...)
	resume.Env = append(resume.Env, "GLTEST_RUN=2")
	out, err = resume.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "496 skipped, done in an earlier run") {
		t.Errorf("resume summary:\n%s", out)
	}
	m, jl := marks(t, dir), joblogSeqs(t, joblog)
	for seq := 1; seq <= 1000; seq++ {
		if len(m[seq]) != 1 || len(jl[seq]) != 1 {
			t.Errorf("task %d ran %d times, has %d joblog records", seq, len(m[seq]), len(jl[seq]))
		}
	}
}

func TestQueueResumeFailedRerunsOnlyFailures(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	input, joblog := seqInput(t, 50), filepath.Join(dir, "joblog")
	flags := []string{"-n", "2", "-G", "0", "--joblog", joblog}
	first := gpulaunch(t, queueArgs(dir, input, flags, "fail-3s")...)
	first.Env = append(first.Env, "GLTEST_RUN=1")
	if err := first.Run(); exitStatus(err) != 5 {
		t.Fatalf("5 of 50 tasks failed: want exit 5 (GNU parallel's count), got %v", err)
	}
	second := gpulaunch(t, queueArgs(dir, input, append(flags, "--resume-failed"), "fail-3s")...)
	second.Env = append(second.Env, "GLTEST_RUN=2")
	if out, err := second.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for seq, lines := range marks(t, dir) {
		want := "run=1"
		if seq%10 == 3 {
			want = "run=1 run=2"
		}
		var runs []string
		for _, l := range lines {
			runs = append(runs, strings.Fields(l)[0])
		}
		if strings.Join(runs, " ") != want {
			t.Errorf("task %d ran in %v, want %s", seq, runs, want)
		}
	}
	if jl := joblogSeqs(t, joblog); strings.Join(jl[13], " ") != "1/0 0/0" || strings.Join(jl[14], " ") != "0/0" {
		t.Errorf("joblog records of tasks 13 and 14: %v %v", jl[13], jl[14])
	}
}

func TestQueueHaltNowAtFirstFailure(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	joblog := filepath.Join(dir, "joblog")
	cmd := gpulaunch(t, queueArgs(dir, seqInput(t, 100), []string{"-n", "2", "-G", "0", "--halt", "now,fail=1", "--kill-wait", "2s", "--joblog", joblog}, "fail-at", "5")...)
	out, err := cmd.CombinedOutput()
	if exitStatus(err) != 4 {
		t.Fatalf("want exit 4, the failing task's: %v\n%s", err, out)
	}
	m := marks(t, dir)
	for seq := range m {
		if seq > 6 {
			t.Errorf("task %d ran after the halt", seq)
		}
	}
	jl := joblogSeqs(t, joblog)
	if strings.Join(jl[5], "") != "4/0" {
		t.Errorf("task 5's record: %v", jl[5])
	}
	for seq := range jl {
		if seq > 5 {
			t.Errorf("task %d, ended by the halt, is in the joblog: %v", seq, jl[seq])
		}
	}
	if !strings.Contains(string(out), "--halt now,fail=1 reached at task 5") {
		t.Errorf("no halt message:\n%s", out)
	}
}

// --retries N is GNU parallel's: N tries in all. The flaky task succeeds
// on its third run.
func TestQueueRetries(t *testing.T) {
	for _, tc := range []struct {
		retries string
		code    int
		record  string
	}{{"3", 0, "0/0"}, {"2", 1, "2/0"}} {
		dir := t.TempDir()
		taskScript(t, dir)
		joblog := filepath.Join(dir, "joblog")
		cmd := gpulaunch(t, queueArgs(dir, seqInput(t, 1), []string{"-n", "1", "-G", "0", "--retries", tc.retries, "--joblog", joblog}, "flaky", "3")...)
		out, err := cmd.CombinedOutput()
		if exitStatus(err) != tc.code {
			t.Errorf("--retries %s: exit %v, want %d\n%s", tc.retries, err, tc.code, out)
		}
		if jl := joblogSeqs(t, joblog); strings.Join(jl[1], " ") != tc.record {
			t.Errorf("--retries %s: joblog %v, want one record %s", tc.retries, jl[1], tc.record)
		}
	}
}

// SIGHUP: the running tasks finish (they are not signalled), none starts;
// the queue did not finish, so the exit status says so (255).
func TestQueueSIGHUPFinishesRunningTasks(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	cmd := gpulaunch(t, queueArgs(dir, seqInput(t, 50), []string{"-n", "2", "-G", "0"}, "slow", "0.4")...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two tasks done", func() bool { return len(marks(t, dir)) >= 2 })
	_ = cmd.Process.Signal(syscall.SIGHUP)
	err := cmd.Wait()
	n := len(marks(t, dir))
	if exitStatus(err) != 255 || n < 2 || n > 6 || !strings.Contains(out.String(), "SIGHUP: the running tasks finish") {
		t.Errorf("exit %v, %d tasks ran (want the 2-4 done or running at the HUP, then none)\n%s", err, n, out.String())
	}
	if !strings.Contains(out.String(), "not finished (SIGHUP): --resume runs them") {
		t.Errorf("summary:\n%s", out.String())
	}
}

func TestQueueTasksFileAndOutputFiles(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	tasks := filepath.Join(dir, "tasks")
	lines := fmt.Sprintf("# a comment\n%[1]s/task.sh %[1]s 1\n\n%[1]s/task.sh '%[1]s' 2\necho \"two words\" 'and more'\n", dir)
	if err := os.WriteFile(tasks, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := gpulaunch(t, "-n", "2", "-G", "0", "--tasks", tasks, "-o", dir+"/out.%t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for seq, want := range map[int]string{1: "task 1 done\n", 2: "task 2 done\n", 3: "two words and more\n"} {
		if b, _ := os.ReadFile(fmt.Sprintf("%s/out.%d", dir, seq)); string(b) != want {
			t.Errorf("out.%d = %q, want %q", seq, b, want)
		}
	}
}

func TestQueueStatusShowsTheQueue(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	r := startLiveRun(t, nil, queueArgs(dir, seqInput(t, 40), []string{"-n", "2", "-G", "0"}, "slow", "0.3")...)
	var snap launcher.Snapshot
	waitFor(t, "the queue in status", func() bool {
		out, _, code := r.client(t, "status", "--json", "--pid", r.pid())
		return code == 0 && jsonInto(out, &snap) && snap.Queue != nil && snap.Queue.Done >= 2
	})
	if snap.Queue.Total != 40 || snap.Queue.Remaining > 0 && (snap.Queue.Running != 2 || snap.Instances[0].Task == 0) {
		t.Errorf("queue %+v, slot 0 task %d", *snap.Queue, snap.Instances[0].Task)
	}
	out, _, _ := r.client(t, "status", "--pid", r.pid())
	if !regexpMatch(`queue: \d+/40 done, 0 failed, [0-2] running, \d+ left`, out) || !strings.Contains(out, "TASK") {
		t.Errorf("status:\n%s", out)
	}
	if code := r.wait(t); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// A queue's status header shows its COMMAND quoted as the joblog quotes
// a task's command: it reads back as the words it is.
func TestQueueStatusQuotesTheCommand(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "joblog")
	started := filepath.Join(dir, "started")
	in := writeFile(t, dir, "in", "a b\n")
	r := startLiveRun(t, nil, "-n", "1", "-G", "0", "--joblog", log, "--each-line", in, "--", "sh", "-c", `touch "$1"; sleep 1; echo "$0 done"`, "{}", started)
	waitFor(t, "the task to start", func() bool { _, err := os.Stat(started); return err == nil })
	out, _, code := r.client(t, "status", "--pid", r.pid())
	header := "\n  sh -c 'touch \"$1\"; sleep 1; echo \"$0 done\"' '{}' " + started + "\n"
	if code != 0 || !strings.Contains(out, header) {
		t.Errorf("status (exit %d):\n%s\nwant the header line %q", code, out, header)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if recs := joblogRecords(t, log); len(recs) != 1 || recs[0].command != `sh -c 'touch "$1"; sleep 1; echo "$0 done"' 'a b' `+started {
		t.Errorf("the joblog records %+v", recs)
	}
}

// On a terminal a progress line is drawn (script(1) gives the run a pty).
func TestQueueProgressOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed (util-linux)")
	}
	dir := t.TempDir()
	taskScript(t, dir)
	args := shellQuoteAll(append([]string{os.Args[0]}, queueArgs(dir, seqInput(t, 20), []string{"-n", "2", "-G", "0"}, "slow", "0.05")...))
	cmd := exec.Command("script", "-qec", strings.Join(args, " "), "/dev/null")
	cmd.Env = append(os.Environ(), "GLTEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tasks: 20/20 done, 0 failed, 0 running, 0 left") {
		t.Errorf("%v\n%q", err, out)
	}
	// stdout a terminal, stderr a file (OpenMPI's rank 0): no line in the file
	errFile := filepath.Join(dir, "stderr")
	cmd = exec.Command("script", "-qec", strings.Join(args, " ")+" 2>"+taskqueue.ShellQuote(errFile), "/dev/null")
	cmd.Env = append(os.Environ(), "GLTEST_MAIN=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(errFile); strings.Contains(string(b), "done, 0 failed") || !strings.Contains(string(b), "tasks: 20 of 20 finished") {
		t.Errorf("stderr to a file holds the progress line, or lacks the summary:\n%q", b)
	}
}

func jsonInto(s string, v any) bool { return json.Unmarshal([]byte(s), v) == nil }

func TestQueueBadInput(t *testing.T) {
	dir := t.TempDir()
	taskScript(t, dir)
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", "true\n")
	pipe := file("pipe", "true\nsort data | uniq -c\n")
	missing := file("missing", "true\nno-such-program-xyz --flag\n")
	empty := file("empty", "# nothing\n\n")
	badLog := file("badlog", "Seq\tHost\nnot a record\n")
	assign := file("assign", "true\nVAR=1 echo hi\n")
	unclosed := file("unclosed", "echo \"it's\n")
	continued := file("continued", "./train --lr 0.1 \\\n  --bs 32\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-n", "1", "-G", "0", "--tasks", pipe}, exitUsage, "--tasks " + pipe + " line 2 (sort data | uniq -c): '|' (a shell feature), which needs a shell: add --shell"},
		{[]string{"-n", "1", "-G", "0", "--tasks", assign}, exitUsage, "--tasks " + assign + " line 2 (VAR=1 echo hi): VAR=1 (a variable set for the command, a shell feature), which needs a shell: add --shell"},
		{[]string{"-n", "1", "-G", "0", "--tasks", unclosed}, exitUsage, "--tasks " + unclosed + " line 1 (echo \"it's): an unclosed double quote (column 6): a syntax error, which a shell refuses too (--shell does not help): close the quote"},
		{[]string{"-n", "1", "-G", "0", "--tasks", continued}, exitUsage, "--tasks " + continued + " line 1 (./train --lr 0.1 \\): the line ends in a backslash, as if the next line continued it: a task is one line"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--joblog", badLog, "--resume-failed"}, exitUsage, "line 2: not a joblog record (want 9 tab-separated columns, Seq … Command): --resume-failed reads it"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--joblog", "/dev/null", "--resume-failed"}, exitUsage, "--resume-failed reads the --joblog of an earlier run back, and /dev/null is not a file but a stream"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--joblog", "/proc/self/fd/2", "--resume"}, exitUsage, "--resume reads the --joblog of an earlier run back, and /proc/self/fd/2 is not a file but a stream"},
		{[]string{"-n", "1", "-G", "0", "--tasks", missing}, 127, "line 2: no-such-program-xyz: command not found in PATH: nothing was started"},
		{[]string{"-n", "1", "-G", "0", "--tasks", empty}, exitUsage, "holds no task"},
		{[]string{"-n", "1", "-G", "0", "--tasks", dir + "/nope"}, exitUsage, ": no such file: check the path; nothing was started"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--", "true"}, exitUsage, "no COMMAND follows"},
		{[]string{"-n", "1", "-G", "0", "--each-line", good}, exitUsage, "--each-line FILE needs a COMMAND"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--each-line", good, "--", "true"}, exitUsage, "use one"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--resume"}, exitUsage, "read the --joblog FILE"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--joblog", badLog, "--resume"}, exitUsage, "line 2: not a joblog record"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--halt", "now,fail=x"}, exitUsage, "the count must be a whole number"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--halt", "sometimes"}, exitUsage, "use never, now,fail=N"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--restarts", "2"}, exitUsage, "a task queue has --retries"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "-K"}, exitUsage, "a task queue has --halt now,fail=1"},
		{[]string{"-n", "1", "-G", "0", "--joblog", "x", "--", "true"}, exitUsage, "--joblog belongs to a task queue"},
		{[]string{"-n", "1", "-G", "0", "--tasks", good, "--joblog", dir + "/no/dir/log"}, exitUsage, "--joblog " + dir + "/no/dir/log: the directory " + dir + "/no/dir does not exist"},
	} {
		_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, tc.args...)
		if code != tc.code || !strings.HasPrefix(stderr, "gpulaunch: error: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	// a resume with nothing left starts nothing and says so
	log := file("donelog", "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n1\th\t1.000\t     0.001\t0\t0\t0\t0\ttrue\n")
	_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "1", "-G", "0", "--tasks", good, "--joblog", log, "--resume")
	if code != 0 || !strings.Contains(stderr, "all 1 tasks are done by the --joblog") {
		t.Errorf("resume of a finished queue: %d %q", code, stderr)
	}
}
