package taskqueue

import (
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// TaskFiles are what a queue's task files are named from: the -o and -e
// patterns and the names they expand.
type TaskFiles struct {
	Out, Err string
	Names    instance.Names
	// ownOut and ownErr: the pattern names the task (namesTask), and
	// --open-mode append was not given, so that each try of a task starts
	// its file afresh.
	ownOut, ownErr bool
}

// NewTaskFiles are the task files of the -o and -e patterns; appendAll:
// --open-mode append, which keeps even a task's own files.
func NewTaskFiles(out, err string, names instance.Names, appendAll bool) TaskFiles {
	return TaskFiles{Out: out, Err: err, Names: names,
		ownOut: !appendAll && namesTask(out, names), ownErr: !appendAll && namesTask(err, names)}
}

// Slots complete a task for the slot it is handed to (a Queue's and a
// Feed's: Complete), a value the caller hands over once.
type Slots struct {
	// First is this node's first slot among every node's slots, from 0
	// (binding.NodeGroup.Ranks(0).Rank): {%} numbers the slots of every
	// node of the launch.
	First int
	Files TaskFiles
}

// Complete is t for slot (from 0, this node's); a nil Slots leaves t as
// it is. Its rules:
//  1. An --each-line COMMAND is filled again from its template with {%}
//     (the slot over every node, from 1, like parallel's) — never the
//     filled text, so a line holding "{%}" stays —; a --tasks line gets
//     {%} replaced as it is.
//  2. The task's files are named (taskFile). A pattern that names the
//     task gives the task files of its own, which each try starts
//     afresh; one without names a file that every task (or every task of
//     a slot, or of a line) shares line by line.
func (s *Slots) Complete(t job.Task, slot int) job.Task {
	if s == nil {
		return t
	}
	slot += s.First
	n := strconv.Itoa(slot + 1)
	if t.Template != nil && t.Input != nil {
		in := *t.Input
		in.Slot = slot + 1
		if args, err := FillTemplate(t.Template, in); err == nil {
			t.Args, t.Command = args, ShellJoin(args)
		}
	} else {
		args := make([]string, len(t.Args))
		for i, a := range t.Args {
			args[i] = strings.ReplaceAll(a, "{%}", n)
		}
		t.Args, t.Command = args, strings.ReplaceAll(t.Command, "{%}", n)
	}
	f := s.Files
	t.Stdout, t.OwnStdout = taskFile(f.Out, t, slot, f.Names), f.ownOut
	t.Stderr, t.OwnStderr = taskFile(f.Err, t, slot, f.Names), f.ownErr
	return t
}

// taskFile is the file pattern pat names for task t in slot (from 0): in
// a queue's -o and -e patterns every replacement string of --each-line
// is filled from the task's line (FillFileName: {} {.} {/} {//} {/.}
// {N}…), {#} is the task number and {%} the slot, from 1; then srun's %
// letters (instance.ExpandPattern), %t the task number. A --tasks line is
// no input: only {#} and {%} (CheckPattern refused the rest). The
// patterns were checked before the start (CheckPattern, Lines.Task): an
// error here cannot happen, and names no file.
func taskFile(pat string, t job.Task, slot int, names instance.Names) string {
	if pat == "" {
		return ""
	}
	in := job.Input{Seq: t.Seq}
	if t.Input != nil {
		in = *t.Input
	}
	in.Slot = slot + 1
	name, err := FillFileName(pat, in, t.Input == nil, instance.SrunLiteral)
	if err != nil {
		return ""
	}
	path, _ := instance.ExpandPattern(name, t.Seq, names)
	return path
}

// namesTask: pat gives every task a file of its own (%t, %3t, {#}): two
// tasks of the same line in one slot get two files. A pattern named by
// the line alone ({} {/.}) names a file that the tasks of one line share
// (appended to, as a file of the queue's): two lines may name one file
// ({//} of a.json and b.json), and no task's output may start it afresh.
func namesTask(pat string, names instance.Names) bool {
	one := job.Task{Seq: 1, Input: &job.Input{Line: "x", Seq: 1}}
	two := job.Task{Seq: 2, Input: &job.Input{Line: "x", Seq: 2}}
	return pat != "" && taskFile(pat, one, 0, names) != taskFile(pat, two, 0, names)
}
