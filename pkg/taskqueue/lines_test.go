package taskqueue

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Lines.Task's rules, by number.
func TestLinesTask(t *testing.T) {
	tasks := Lines{What: "--tasks", Src: "t.txt", Whole: true}
	shell := tasks
	shell.Shell = true
	each := Lines{What: "--each-line", Src: "in.txt", Template: []string{"app", "{1}", "{%}"}, Cols: regexp.MustCompile(",")}
	withFiles := each
	withFiles.Files = []FilePattern{{Flag: "-o", Pattern: "o/{2}.log"}}
	for _, tc := range []struct {
		rule  string
		lines Lines
		line  string
		skip  bool
		args  []string // the task's, when no error
		cmd   string
		bad   string
	}{
		{rule: "1: a NUL byte is refused", lines: tasks, line: "app \x00", bad: "--tasks t.txt line 3 holds a NUL byte"},
		{rule: "2: a blank line is no task", lines: tasks, line: " \t", skip: true},
		{rule: "2: a --tasks comment is no task", lines: tasks, line: "  # app", skip: true},
		{rule: "2: an --each-line # line is a task", lines: each, line: "#x,y", args: []string{"app", "#x", "{%}"}, cmd: "app '#x' '{%}'"},
		{rule: "3: a --tasks line is split into words", lines: tasks, line: `app "a b" c`, args: []string{"app", "a b", "c"}, cmd: `app "a b" c`},
		{rule: "3: --shell gives the line to /bin/sh", lines: shell, line: "a | b", args: []string{"/bin/sh", "-c", "a | b"}, cmd: "a | b"},
		{rule: "3: a --tasks line's fault names the line", lines: tasks, line: `app "open`, bad: `--tasks t.txt line 3 (app "open): `},
		{rule: "3: --each-line's COMMAND is filled from the line's columns", lines: each, line: "x,y", args: []string{"app", "x", "{%}"}, cmd: "app x '{%}'"},
		{rule: "3: a column the line lacks names the line", lines: Lines{What: "--each-line", Src: "in.txt", Template: []string{"app", "{3}"}, Cols: regexp.MustCompile(",")}, line: "x,y", bad: "--each-line in.txt line 3: "},
		{rule: "3: a fault of COMMAND names COMMAND", lines: Lines{What: "--each-line", Src: "in.txt", Template: []string{"app", "{= 1 =}"}}, line: "x", bad: "--each-line COMMAND: "},
		{rule: "4: a pattern the line cannot fill names the flag", lines: withFiles, line: "x", bad: `--each-line in.txt line 3: -o "o/{2}.log": `},
		{rule: "4: a pattern the line fills", lines: withFiles, line: "x,y", args: []string{"app", "x", "{%}"}, cmd: "app x '{%}'"},
		{rule: "5: an empty command word is refused", lines: tasks, line: `"" x`, bad: "--tasks t.txt line 3: the command is an empty word"},
	} {
		got, ok, err := tc.lines.Task(3, tc.line, 2)
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("rule %s: %v, want an error with %q", tc.rule, err, tc.bad)
		case tc.bad != "":
		case err != nil || ok == tc.skip:
			t.Errorf("rule %s: ok %v, %v", tc.rule, ok, err)
		case !tc.skip && (!slices.Equal(got.Args, tc.args) || got.Command != tc.cmd || got.Seq != 2):
			t.Errorf("rule %s: %q %q #%d, want %q %q #2", tc.rule, got.Args, got.Command, got.Seq, tc.args, tc.cmd)
		}
	}
}

// CheckPattern: in a queue every replacement string gpulaunch knows
// passes, in a run {#} and {%} are refused, and srun's letters are
// checked in both.
func TestCheckPattern(t *testing.T) {
	for _, tc := range []struct {
		rule               string
		pat                string
		queue, whole, cols bool
		bad                string
	}{
		{rule: "a queue's -o fills the line's strings", pat: "o/{/.}-{#}-%j.log", queue: true},
		{rule: "a queue's -o may name a column with --colsep", pat: "o/{1}.log", queue: true, cols: true},
		{rule: "a --tasks line is no input: {} is refused", pat: "o/{}.log", queue: true, whole: true, bad: `-o "o/{}.log": `},
		{rule: "an unknown string is refused", pat: "o/{+/}.log", queue: true, bad: "not a replacement string"},
		{rule: "a run's instance is %t, not {#}", pat: "o/{#}.log", bad: "{#} and {%} name a task queue's task and slot"},
		{rule: "a run's instance is %t, not {%}", pat: "o/{%}.log", bad: "a run's instance is %t"},
		{rule: "srun's letters are checked in a run", pat: "o/%x.log", bad: "-o: "},
		{rule: "srun's letters are checked in a queue", pat: "o/{}-%99t.log", queue: true, bad: "width 99"},
		{rule: "a line's % is a literal", pat: "o/%t.log", queue: true},
	} {
		err := CheckPattern("-o", tc.pat, tc.queue, tc.whole, tc.cols)
		if (err == nil) != (tc.bad == "") || err != nil && !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("%s: %q: %v, want %q", tc.rule, tc.pat, err, tc.bad)
		}
	}
}

// Slots.Complete's rules, by number: {%} over every node's slots, and the
// task's files.
func TestSlotsComplete(t *testing.T) {
	names := instance.Names{JobID: "9"}
	line := func(seq int, l string) job.Task {
		in := job.Input{Line: l, Seq: seq}
		return job.Task{Seq: seq, Template: []string{"app", "{}", "{%}"}, Input: &in, Args: []string{"app", l, "{%}"}, Command: "app " + l + " '{%}'"}
	}
	whole := job.Task{Seq: 3, Args: []string{"app", "gpu{%}"}, Command: "app gpu{%}"}
	for _, tc := range []struct {
		rule           string
		slots          *Slots
		task           job.Task
		slot           int
		args           []string
		cmd            string
		stdout, stderr string
		ownOut, ownErr bool
	}{
		{rule: "nil: the task as it is", task: whole, slot: 1, args: []string{"app", "gpu{%}"}, cmd: "app gpu{%}"},
		{rule: "1: --each-line: filled again with the slot, from 1", slots: &Slots{}, task: line(2, "a.txt"), slot: 1, args: []string{"app", "a.txt", "2"}, cmd: "app a.txt 2"},
		{rule: "1: --each-line: a line holding {%} stays", slots: &Slots{}, task: line(2, "{%}"), slot: 0, args: []string{"app", "{%}", "1"}, cmd: "app '{%}' 1"},
		{rule: "1: the slot over every node: this node's first is 8", slots: &Slots{First: 8}, task: whole, slot: 1, args: []string{"app", "gpu10"}, cmd: "app gpu10"},
		{rule: "2: a pattern naming the task: its own file", slots: &Slots{First: 2, Files: NewTaskFiles("o/%j-{#}-{%}.log", "e/%t.log", names, false)}, task: whole, slot: 0,
			args: []string{"app", "gpu3"}, cmd: "app gpu3", stdout: "o/9-3-3.log", stderr: "e/3.log", ownOut: true, ownErr: true},
		{rule: "2: a pattern of the line alone: a shared file", slots: &Slots{Files: NewTaskFiles("o/{.}.log", "", names, false)}, task: line(4, "d/a.txt"), slot: 0,
			args: []string{"app", "d/a.txt", "1"}, cmd: "app d/a.txt 1", stdout: "o/d/a.log"},
		{rule: "2: --open-mode append keeps even a task's own files", slots: &Slots{Files: NewTaskFiles("o/{#}.log", "", names, true)}, task: whole, slot: 0,
			args: []string{"app", "gpu1"}, cmd: "app gpu1", stdout: "o/3.log"},
	} {
		got := tc.slots.Complete(tc.task, tc.slot)
		if !slices.Equal(got.Args, tc.args) || got.Command != tc.cmd || got.Stdout != tc.stdout || got.Stderr != tc.stderr || got.OwnStdout != tc.ownOut || got.OwnStderr != tc.ownErr {
			t.Errorf("rule %s: %q %q out %q(%v) err %q(%v)", tc.rule, got.Args, got.Command, got.Stdout, got.OwnStdout, got.Stderr, got.OwnStderr)
		}
	}
}

// SkipDone refuses a joblog it cannot read back, in one line with the
// fix; Resumed.Warning counts the records that are not this sweep's.
func TestSkipDone(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "joblog")
	header := "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"
	os.WriteFile(log, []byte(header+"1\t:\t1\t1\t0\t0\t0\t0\tapp a\n2\t:\t1\t1\t0\t0\t1\t0\tapp old\n9\t:\t1\t1\t0\t0\t0\t0\tapp z\n"), 0o644)
	tasks := []job.Task{{Seq: 1, Command: "app a"}, {Seq: 2, Command: "app b"}, {Seq: 3, Command: "app c"}}
	for _, tc := range []struct {
		rule    string
		joblog  string
		failed  bool
		todo    []int
		bad     string
		warning string
	}{
		{rule: "a stream cannot be read back", joblog: "/dev/stdout", bad: "--resume reads the --joblog of an earlier run back, and /dev/stdout is not a file but a stream"},
		{rule: "a missing joblog is an empty one: the first run", joblog: filepath.Join(dir, "none"), todo: []int{1, 2, 3}},
		{rule: "a directory is no joblog", joblog: dir, failed: true, bad: "--joblog " + dir + " is a directory: give the joblog file: --resume-failed reads it as the joblog of an earlier run"},
		{rule: "--resume skips every recorded task; the changed and the beyond are one warning", joblog: log, todo: []int{3},
			warning: `1 of its 3 record(s) name another command than this sweep's task of that number (task 2: "app old", now "app b"); 1 record(s) name task numbers beyond this input's 3 tasks: --resume goes by task number`},
		{rule: "--resume-failed runs the failed ones again", joblog: log, failed: true, todo: []int{2, 3}, warning: "the failed ones run again with this sweep's command"},
	} {
		r, err := SkipDone(tasks, tc.joblog, tc.failed)
		var todo []int
		for _, t := range r.Todo {
			todo = append(todo, t.Seq)
		}
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s: %v, want %q", tc.rule, err, tc.bad)
		case tc.bad == "" && (err != nil || !slices.Equal(todo, tc.todo) || !strings.Contains(r.Warning(tc.joblog, tc.failed), tc.warning)):
			t.Errorf("%s: %v %v, warning %q", tc.rule, todo, err, r.Warning(tc.joblog, tc.failed))
		}
	}
	if w := (Resumed{Records: 2}).Warning(log, false); w != "" {
		t.Errorf("every record this sweep's: warning %q", w)
	}
}
