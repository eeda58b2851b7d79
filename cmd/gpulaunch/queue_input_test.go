package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readTaskFiles reads dir/o.1 … dir/o.n.
func readTaskFiles(t *testing.T, dir string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range n {
		b, err := os.ReadFile(filepath.Join(dir, "o."+string(rune('1'+i))))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// The command: GNU parallel's replacement strings are filled, in
// the file names the task writes too, and the line is not appended.
func TestQueueReplacementStrings(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "params", "data/run.1.json\n{#}.x\n")
	out, err := gpulaunch(t, "-n", "1", "-G", "0", "-o", dir+"/o.%t", "--each-line", in, "--",
		"echo", "{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}", "{1}", `{"a":1}`).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := readTaskFiles(t, dir, 2)
	want := []string{
		"data/run.1.json data/run.1 run.1.json data run.1 1 1 data/run.1.json {\"a\":1}\n",
		"{#}.x {#} {#}.x . {#} 2 1 {#}.x {\"a\":1}\n",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("task %d wrote %q, want %q", i+1, got[i], want[i])
		}
	}
}

// --colsep splits the line into columns; without a replacement string the
// columns are appended as arguments, as parallel appends them.
func TestQueueColsep(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "params", "a.b,c/d.e\nx,y\n")
	for _, tc := range []struct {
		argv []string
		want []string
	}{
		{[]string{"echo", "{2}", "{1.}", "{-1/}", "[{}]"}, []string{"c/d.e a d.e [a.b,c/d.e]\n", "y x y [x,y]\n"}},
		{[]string{"printf", "<%s>"}, []string{"<a.b><c/d.e>\n", "<x><y>\n"}},
	} {
		args := append([]string{"-n", "1", "-G", "0", "-o", dir + "/o.%t", "--colsep", ",", "--each-line", in, "--"}, tc.argv...)
		if out, err := gpulaunch(t, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got := readTaskFiles(t, dir, 2); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// What looks like one of parallel's replacement strings and is not
// supported, or a column a line lacks, refuses the queue before anything
// starts, in one line naming it; nothing is written.
func TestQueueRefusesUnknownReplacementStrings(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "params", "a,b\nc\n")
	mark := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--each-line", in, "--", "touch", mark, "{= s/a/b/ =}"}, "--each-line COMMAND: {= s/a/b/ =}: a Perl expression"},
		{[]string{"--each-line", in, "--", "touch", mark, "{+/}"}, "{+/}: not a replacement string gpulaunch knows; it supports {} {.}"},
		{[]string{"--each-line", in, "--", "touch", mark, "x{2.}"}, "{2.}: without --colsep the line is one column"},
		{[]string{"--each-line", in, "--", "touch", mark, "{0}"}, "{0}: not a replacement string"},
		{[]string{"--colsep", ",", "--each-line", in, "--", "touch", mark, "{2}"}, "--each-line " + in + " line 2: {2}: the line has 1 column(s)"},
		{[]string{"--colsep", "(", "--each-line", in, "--", "touch", mark}, "--colsep \"(\": not a regular expression (missing closing ) in \"(\")"},
		{[]string{"--colsep", "x*", "--each-line", in, "--", "touch", mark}, "matches the empty string"},
		{[]string{"--colsep", ",", "--tasks", in}, "--colsep splits --each-line's input lines"},
		{[]string{"--colsep", ",", "--", "touch", mark}, "belongs to a task queue"},
	} {
		args := append([]string{"-n", "1", "-G", "0", "--joblog", dir + "/joblog"}, tc.args...)
		_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, args...)
		if code != exitUsage || !strings.HasPrefix(stderr, "gpulaunch: error: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	if names, _ := filepath.Glob(dir + "/*"); len(names) != 1 {
		t.Errorf("a refused queue changed the directory: %q", names)
	}
}

// Lines that are empty or hold only blanks are not tasks (parallel's -r),
// for --each-line and --tasks alike.
func TestQueueSkipsBlankLines(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		flag  string
		input string
		argv  []string
	}{
		{"--each-line", "a\n   \n\t\n\nb\n", []string{"echo"}},
		{"--tasks", "echo a\n \t \necho b\n", nil},
	} {
		in := writeFile(t, dir, "input", tc.input)
		log := filepath.Join(dir, "joblog")
		args := append([]string{"-n", "1", "-G", "0", "--joblog", log, tc.flag, in}, append([]string{"--"}, tc.argv...)...)
		if tc.argv == nil {
			args = args[:len(args)-1]
		}
		out, err := gpulaunch(t, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "tasks: 2 of 2 finished") {
			t.Errorf("%s %q: %v\n%s", tc.flag, tc.input, err, out)
		}
		if seqs := joblogSeqs(t, log); len(seqs) != 2 {
			t.Errorf("%s %q: joblog records %v", tc.flag, tc.input, seqs)
		}
	}
}

// Every pattern run --help and docs/tasks.md name for a queue's files
// works: {%} a file per slot, {#} and %t (with a width) a file per task.
func TestQueueDocumentedOutputPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		files   map[string]string // name → content, every line of a slot's
	}{
		{"slot{%}.log", map[string]string{"slot1.log": "1\n2\n3\n"}},
		{"t{#}.log", map[string]string{"t1.log": "1\n", "t2.log": "2\n", "t3.log": "3\n"}},
		{"%t.log", map[string]string{"1.log": "1\n", "2.log": "2\n", "3.log": "3\n"}},
		{"%3t-%j.log", map[string]string{"001-none.log": "1\n", "002-none.log": "2\n", "003-none.log": "3\n"}},
		{"sweep.log", map[string]string{"sweep.log": "1\n2\n3\n"}},
		{"%n-%s-%%-{%}-{#}.log", map[string]string{"0-none-%-1-1.log": "1\n", "0-none-%-1-2.log": "2\n", "0-none-%-1-3.log": "3\n"}},
	} {
		dir := t.TempDir()
		in := writeFile(t, t.TempDir(), "in", "1\n2\n3\n")
		out, err := gpulaunch(t, "-n", "1", "-G", "0", "-o", filepath.Join(dir, tc.pattern), "--each-line", in, "--", "echo").CombinedOutput()
		if err != nil {
			t.Errorf("-o %s: %v\n%s", tc.pattern, err, out)
			continue
		}
		names, _ := filepath.Glob(dir + "/*")
		if len(names) != len(tc.files) {
			t.Errorf("-o %s wrote %q, want %v", tc.pattern, names, tc.files)
		}
		for name, want := range tc.files {
			if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
				t.Errorf("-o %s: %s holds %q, want %q", tc.pattern, name, b, want)
			}
		}
	}
	// a run's instance is %t: {%} and {#} are refused there, naming them
	_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "1", "-G", "0", "-o", "x{%}.log", "--", "true")
	if code != exitUsage || !strings.Contains(stderr, "-o \"x{%}.log\": {#} and {%} name a task queue's task and slot") {
		t.Errorf("-o x{%%}.log in a run: %d %q", code, stderr)
	}
}

// A task's own file is started afresh by its rerun: by a --resume after
// gpulaunch ended it, and by a retry. A file the queue shares keeps
// appending on a --resume; --open-mode append keeps every file.
func TestQueueRerunStartsItsOwnFileAfresh(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "1\n2\n")
	log := writeFile(t, dir, "joblog", "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n1\t:\t1.000\t     0.001\t0\t0\t0\t0\techo begin 1\n")
	// task 2 was ended by a Ctrl-C: its partial output, no record
	writeFile(t, dir, "o-1.out", "begin 1\n")
	writeFile(t, dir, "o-2.out", "begin 2\n")
	writeFile(t, dir, "shared.out", "begin 1\nbegin 2\n")
	out, err := gpulaunch(t, "-n", "1", "-G", "0", "--joblog", log, "--resume", "-o", dir+"/o-%t.out", "--each-line", in, "--", "echo", "begin").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for name, want := range map[string]string{"o-1.out": "begin 1\n", "o-2.out": "begin 2\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("after --resume %s holds %q, want %q", name, b, want)
		}
	}
	// one file for the queue: the rerun appends
	writeFile(t, dir, "o-2.out", "begin 2\n")
	os.WriteFile(log, []byte("Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n1\t:\t1.000\t     0.001\t0\t0\t0\t0\techo begin 1\n"), 0o644)
	if out, err := gpulaunch(t, "-n", "1", "-G", "0", "--joblog", log, "--resume", "-o", dir+"/shared.out", "--each-line", in, "--", "echo", "begin").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "shared.out")); string(b) != "begin 1\nbegin 2\nbegin 2\n" {
		t.Errorf("a shared file after --resume holds %q", b)
	}
	// a retry: the task fails on its first try, succeeds on its second
	script := `if [ -e "$0.tried" ]; then echo second; else touch "$0.tried"; echo first; exit 1; fi`
	one := writeFile(t, dir, "one", "x\n")
	if out, err := gpulaunch(t, "-n", "1", "-G", "0", "--retries", "2", "-o", dir+"/r-%t.out", "--each-line", one, "--", "sh", "-c", script, dir+"/r").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "r-1.out")); string(b) != "second\n" {
		t.Errorf("after a retry r-1.out holds %q, want the last try's output alone", b)
	}
	// --open-mode append keeps what the task's file held
	os.Remove(dir + "/r.tried")
	if out, err := gpulaunch(t, "-n", "1", "-G", "0", "--retries", "2", "--open-mode", "append", "-o", dir+"/r-%t.out", "--each-line", one, "--", "sh", "-c", script, dir+"/r").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "r-1.out")); string(b) != "second\nfirst\nsecond\n" {
		t.Errorf("with --open-mode append r-1.out holds %q", b)
	}
}

// An input file that cannot be read is one line naming the flag, the file
// and what to do, not Go's error.
func TestQueueInputFileErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good", "true\n")
	locked := writeFile(t, dir, "locked", "true\n")
	os.Chmod(locked, 0)
	long := writeFile(t, dir, "long", "true\n"+strings.Repeat("x", 2<<20)+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tasks", dir}, "--tasks " + dir + " is a directory: give the file that holds one task per line"},
		{[]string{"--each-line", dir, "--", "echo"}, "--each-line " + dir + " is a directory"},
		{[]string{"--tasks", dir + "/nope"}, "--tasks " + dir + "/nope: no such file: check the path"},
		{[]string{"--tasks", long}, "--tasks " + long + " line 2 is longer than 1 MiB"},
		{[]string{"--tasks", good, "--joblog", dir, "--resume"}, "--joblog " + dir + ": " + dir + " is a directory: give a file name"},
	} {
		args := append([]string{"-n", "1", "-G", "0"}, tc.args...)
		_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "read "+dir) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	if os.Geteuid() != 0 {
		_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "1", "-G", "0", "--tasks", locked)
		if code != exitUsage || !strings.Contains(stderr, "is not readable by you") {
			t.Errorf("an unreadable --tasks file: %d %q", code, stderr)
		}
	}
}

// One sweep owns a joblog: a second gpulaunch on it (the sweep submitted
// twice) is refused before it starts, naming the owner's host, pid and
// start, and changes nothing; once the owner is gone — here SIGKILLed,
// with no chance to clean up — the lock is gone with it.
func TestQueueJoblogLock(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "1\n2\n")
	log := filepath.Join(dir, "joblog")
	started := filepath.Join(dir, "started")
	owner := gpulaunch(t, "-n", "1", "-G", "0", "--joblog", log, "--resume", "--each-line", in, "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	waitFor(t, "the first task to start", func() bool { _, err := os.Stat(started); return err == nil })
	before, _ := os.ReadFile(log)
	second := filepath.Join(dir, "second")
	args := []string{"-n", "1", "-G", "0", "--joblog", log, "--resume", "--each-line", in, "--", "sh", "-c", `touch "$0"`, second}
	_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, args...)
	want := fmt.Sprintf("pid %d, since ", owner.Process.Pid)
	if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--joblog "+log+" is locked by host ") || !strings.Contains(stderr, want) {
		t.Errorf("a second sweep on a locked joblog: exit %d, stderr %q; want exit 2 naming %q", code, stderr, want)
	}
	if after, _ := os.ReadFile(log); string(after) != string(before) {
		t.Errorf("the refused sweep changed the joblog: %q → %q", before, after)
	}
	if _, err := os.Stat(second); err == nil {
		t.Errorf("the refused sweep ran a task")
	}
	owner.Process.Signal(syscall.SIGKILL)
	owner.Wait()
	if out, err := gpulaunch(t, args...).CombinedOutput(); err != nil {
		t.Fatalf("after the owner's SIGKILL: %v\n%s", err, out)
	}
	if _, err := os.Stat(second); err != nil {
		t.Errorf("after the owner's SIGKILL the sweep did not run: %v", err)
	}
	if _, err := os.Stat(log + ".owner"); err == nil {
		t.Errorf("the owner file outlived the sweep that wrote it")
	}
}

// A dry run refuses what the run would (issue 34): a joblog another sweep
// holds and a metrics file another run writes; its probes of their locks
// leave nothing behind, and a dry run that passes makes no joblog.
func TestDryRunRefusesLockedFiles(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "1\n2\n")
	log, prom := filepath.Join(dir, "joblog"), filepath.Join(dir, "m.prom")
	started := filepath.Join(dir, "started")
	owner := gpulaunch(t, "-n", "1", "-G", "0", "--joblog", log, "--metrics-file", prom, "--each-line", in, "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	waitFor(t, "the first task to start", func() bool { _, err := os.Stat(started); return err == nil })
	env := sched.Env{"PATH": os.Getenv("PATH")}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the joblog", []string{"--joblog", log}, "--joblog " + log + " is locked by host "},
		{"the joblog, resumed", []string{"--joblog", log, "--resume"}, "is locked by host "},
		{"the metrics file", []string{"--metrics-file", prom}, "another gpulaunch on this node is writing it"},
	} {
		args := append(append([]string{"-n", "1", "-G", "0", "--dry-run", "--each-line", in}, tc.args...), "--", "true")
		_, stderr, code := runCLI(t, env, args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("a dry run on %s: exit %d, stderr %q; want the run's refusal %q", tc.name, code, stderr, tc.want)
		}
	}
	fresh := filepath.Join(dir, "fresh.log")
	if _, stderr, code := runCLI(t, env, "-n", "1", "-G", "0", "--dry-run", "--each-line", in, "--joblog", fresh, "--", "true"); code != 0 {
		t.Fatalf("a dry run with a joblog of its own: exit %d, %s", code, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "fresh.log*")); len(left) > 0 {
		t.Errorf("a dry run left %v", left)
	}
}

// --resume with a joblog whose commands are not this sweep's goes by task
// number, as GNU parallel does: one warning names the file, counts the
// records that differ and shows the first; nothing is refused. Written by
// GNU parallel's quoting or with the slot filled in, a record is this
// sweep's command: no warning.
func TestQueueResumeWarnsOfChangedCommands(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "0.1\n0.2\n")
	head := "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"
	other := writeFile(t, dir, "other", head+"1\t:\t1.000\t     0.001\t0\t0\t0\t0\t./other --lr 0.1\n")
	_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "1", "-G", "0", "--joblog", other, "--resume", "--each-line", in, "--", "echo", "--lr")
	want := `--joblog ` + other + `: 1 of its 1 record(s) name another command than this sweep's task of that number (task 1: "./other --lr 0.1", now "echo --lr 0.1"): --resume goes by task number, as GNU parallel does`
	if code != 0 || strings.Count(stderr, want) != 1 || strings.Contains(stderr, "error") {
		t.Errorf("a changed command: exit %d, stderr %q; want exit 0 and one warning %q", code, stderr, want)
	}
	if recs := joblogRecords(t, other); len(recs) != 2 || recs[1].seq != 2 || recs[1].command != "echo --lr 0.2" {
		t.Errorf("the resume recorded %+v, want task 2 alone added", recs)
	}
	// the same sweep, written by GNU parallel's quoting or with the slot
	// filled in, is this sweep's
	mine := writeFile(t, dir, "mine", head+"1\t:\t1.000\t     0.001\t0\t0\t0\t0\techo a\\ b 3\n2\t:\t1.000\t     0.001\t0\t0\t0\t0\techo 'c d' 12\n")
	two := writeFile(t, dir, "two", "a b\nc d\n")
	_, stderr, code = runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "1", "-G", "0", "--joblog", mine, "--resume", "--each-line", two, "--", "echo", "{}", "{%}")
	if code != 0 || !strings.Contains(stderr, "all 2 tasks are done") || strings.Contains(stderr, "record(s)") {
		t.Errorf("this sweep's own joblog: exit %d, stderr %q", code, stderr)
	}
}

// The replacement strings gpulaunch fills agree with GNU parallel's, run
// on the same lines (where parallel is installed: the testbed installs
// it). The table tests of taskqueue.FillTemplate hold the same values for
// machines without it.
func TestReplacementStringsAgreeWithGNUParallel(t *testing.T) {
	if _, err := exec.LookPath("parallel"); err != nil {
		t.Skip("GNU parallel is not installed")
	}
	dir := t.TempDir()
	lines := writeFile(t, dir, "lines", "data/run.1.json\n.bashrc\na/b/\n/\na//b//\nx y\na.b/c\nnoext\na.\n")
	cols := writeFile(t, dir, "cols", "a.b,c/d.e\nx,y\n/p/q.r,s\n")
	for _, tc := range []struct {
		input  string
		colsep string
		argv   []string
	}{
		{lines, "", []string{"echo", "{}", "[{.}]", "[{/}]", "[{//}]", "[{/.}]", "{#}", "{%}", "{1}", "{1.}", "{-1/}", "{a}", "{print}"}},
		{lines, "", []string{"echo", "x"}},
		{lines, "", []string{"echo", "{#}"}},
		{cols, ",", []string{"echo", "{2}", "{1.}", "{-1/}", "{2//}", "{1/.}", "{-2}"}},
		{cols, ",", []string{"echo", "x"}},
	} {
		sep := []string{}
		if tc.colsep != "" {
			sep = []string{"--colsep", tc.colsep}
		}
		pArgs := append(append([]string{"--will-cite", "-k", "-j", "1"}, sep...), tc.argv...)
		want, err := exec.Command("parallel", append(pArgs, "::::", tc.input)...).Output()
		if err != nil {
			t.Fatalf("parallel %q: %v", pArgs, err)
		}
		gArgs := append(append([]string{"-n", "1", "-G", "0", "--monitor-interval", "0"}, sep...), append([]string{"--each-line", tc.input, "--"}, tc.argv...)...)
		cmd := gpulaunch(t, gArgs...)
		cmd.Stderr = nil
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpulaunch %q: %v", gArgs, err)
		}
		if string(got) != string(want) {
			t.Errorf("%q (--colsep %q):\ngpulaunch:\n%s\nparallel:\n%s", tc.argv, tc.colsep, got, want)
		}
	}
}

// A joblog named by one of gpulaunch's own descriptors — /dev/stdout,
// /proc/self/fd/1 — is written where gpulaunch's stdout goes, a pipe or a
// file: the same by either name, appended (a `>> log` keeps what it
// held), neither locked nor given an owner file (taskqueue.JoblogStream).
func TestQueueJoblogOnStdout(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "a\n")
	for _, name := range []string{"/dev/stdout", "/proc/self/fd/1"} {
		// a pipe
		out, err := gpulaunch(t, "-q", "-n", "1", "-G", "0", "--joblog", name, "--each-line", in, "--", "echo").Output()
		if err != nil || !regexpMatch(`^Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n(a\n1\t:\t[0-9.]+\t +[0-9.]+\t0\t0\t0\t0\techo a\n|1\t:\t[0-9.]+\t +[0-9.]+\t0\t0\t0\t0\techo a\na\n)$`, string(out)) {
			t.Errorf("--joblog %s to a pipe: %v, stdout %q", name, err, out)
		}
		// a file opened for appending
		file := writeFile(t, dir, "stdout", "before\n")
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := gpulaunch(t, "-q", "-n", "1", "-G", "0", "--joblog", name, "--each-line", in, "--", "echo")
		cmd.Stdout = f
		err = cmd.Run()
		f.Close()
		if b, _ := os.ReadFile(file); err != nil || !strings.HasPrefix(string(b), "before\nSeq\tHost\t") || !strings.Contains(string(b), "\techo a\n") {
			t.Errorf("--joblog %s to a file: %v, the file holds %q", name, err, b)
		}
	}
	if owners, _ := filepath.Glob("/dev/*.owner"); len(owners) > 0 {
		t.Errorf("owner files in /dev: %q", owners)
	}
}

// --joblog - into a pipe whose reader has gone (`… | head`): the records
// are dropped with one warning, as the tasks' output is, and the run's
// status stays its tasks' (JoblogStream's rule 4; it was 255, with an
// error per record and "a --resume would run those tasks again", which
// no stream can).
func TestQueueJoblogStreamReaderGone(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "1\n2\n3\n4\n5\n6\n7\n8\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first record
	cmd := gpulaunch(t, "-n", "2", "-G", "0", "--each-line", in, "--joblog", "-", "--", "echo")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	if code := exitStatus(err); code != 0 || strings.Count(stderr.String(), "--joblog") != 1 ||
		!strings.Contains(stderr.String(), "--joblog: -: its reader has gone") || strings.Contains(stderr.String(), "could not be written") {
		t.Errorf("exit %d, want 0 and one warning of the joblog:\n%s", code, stderr.String())
	}
}

// A replacement string inside the script a shell runs (sh -c 'echo {}')
// is filled shell-quoted, as GNU parallel quotes what its shell runs: a
// line that holds a command is printed, not run (issue 34's sweep: it ran).
func TestQueueShellScriptGetsQuotedValues(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	in := writeFile(t, dir, "in", "x; touch "+pwned+"\nit's $(id)\n")
	out, err := gpulaunch(t, "-q", "-n", "1", "-G", "0", "--each-line", in, "--", "sh", "-c", "echo {}").Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a line's text ran as a command of the shell")
	}
	if want := "x; touch " + pwned + "\nit's $(id)\n"; string(out) != want {
		t.Errorf("output %q, want each line as it is, %q", out, want)
	}
}
