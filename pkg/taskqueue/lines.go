package taskqueue

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Lines is how the input's lines become a queue's tasks: --tasks (each
// line a whole command) or --each-line (COMMAND filled from each line).
type Lines struct {
	// What and Src name the input in messages: the flag and its file.
	What, Src string
	// Whole: --tasks; false: --each-line, whose COMMAND is Template.
	Whole bool
	// Shell: --shell, a --tasks line is given to /bin/sh -c.
	Shell    bool
	Template []string
	// Cols is --colsep compiled; nil without it.
	Cols *regexp.Regexp
	// Files are the -o and -e patterns the tasks are named by.
	Files []FilePattern
}

// FilePattern is an -o or -e file pattern and the flag that gave it.
type FilePattern struct{ Flag, Pattern string }

// Task is the task of input line n (from 1), numbered seq, its program
// not yet resolved; false: the line is no task. The rules, in order:
//  1. A line holding a NUL byte is refused: no program argument can
//     carry one (the file is likely binary).
//  2. Blank lines — empty or only blanks, as GNU parallel's -r — are no
//     task; for --tasks neither are # comments. Task numbers (seq) count
//     tasks, so they stay the same from run to run of the same input,
//     which --resume relies on.
//  3. A --tasks line is split into words (SplitWords), or given whole to
//     /bin/sh -c with --shell; --each-line's COMMAND is filled from the
//     line (FillTemplate; {%} waits for the slot). What is wrong is said
//     with the line (lineError).
//  4. An -o or -e pattern the line cannot fill (a column it lacks) is
//     refused, naming the flag (lineFiles).
//  5. A command that is an empty word is refused.
func (l Lines) Task(n int, line string, seq int) (job.Task, bool, error) {
	if strings.IndexByte(line, 0) >= 0 {
		return job.Task{}, false, fmt.Errorf("%s %s line %d holds a NUL byte, which no program argument can carry: remove it (is the file binary?)", l.What, l.Src, n)
	}
	trimmed := strings.TrimSpace(line)
	if trimmed == "" || l.Whole && strings.HasPrefix(trimmed, "#") {
		return job.Task{}, false, nil
	}
	t, err := l.lineTask(line, seq)
	if err != nil {
		return job.Task{}, false, l.lineError(err, n, line)
	}
	if err := l.lineFiles(t); err != nil {
		return job.Task{}, false, fmt.Errorf("%s %s line %d: %v", l.What, l.Src, n, err)
	}
	if len(t.Args) == 0 || t.Args[0] == "" {
		return job.Task{}, false, fmt.Errorf("%s %s line %d: the command is an empty word: give the program to run", l.What, l.Src, n)
	}
	return t, true, nil
}

// lineTask is rule 3: the task of one input line, numbered seq.
func (l Lines) lineTask(line string, seq int) (job.Task, error) {
	t := job.Task{Seq: seq, Command: line}
	var err error
	switch {
	case l.Whole && l.Shell:
		t.Args = []string{"/bin/sh", "-c", line}
	case l.Whole:
		t.Args, err = SplitWords(line)
	default:
		in := job.Input{Line: line, Seq: seq}
		if l.Cols != nil {
			in.Cols = l.Cols.Split(line, -1)
		}
		if t.Args, err = FillTemplate(l.Template, in); err == nil {
			t.Template, t.Input, t.Command = l.Template, &in, ShellJoin(t.Args)
		}
	}
	return t, err
}

// lineError says what is wrong with an input line, or with --each-line's
// COMMAND, in one line with the fix (a --tasks line's: its LineError).
func (l Lines) lineError(err error, n int, line string) error {
	var te *TemplateError
	switch {
	case errors.As(err, &te) && te.Line:
		return fmt.Errorf("%s %s line %d: %v", l.What, l.Src, n, err)
	case errors.As(err, &te):
		return fmt.Errorf("--each-line COMMAND: %v", err)
	}
	return fmt.Errorf("%s %s line %d (%s): %v", l.What, l.Src, n, line, err)
}

// lineFiles is rule 4: an -o/-e pattern that task t's line cannot fill
// (a column the line lacks), naming the flag; what the pattern alone
// gets wrong was refused before the input was read (CheckPattern).
func (l Lines) lineFiles(t job.Task) error {
	if t.Input == nil {
		return nil
	}
	for _, f := range l.Files {
		in := *t.Input
		in.Slot = 1
		if _, err := FillFileName(f.Pattern, in, false, instance.SrunLiteral); err != nil {
			return fmt.Errorf("%s %q: %v", f.Flag, f.Pattern, err)
		}
	}
	return nil
}

// CheckPattern refuses an -o/-e pattern (flag) that no run could expand,
// before anything starts. queue: the run is a task queue, whole: of
// --tasks lines, cols: with --colsep. In a queue it is filled for a task
// first (FillFileName): a replacement string gpulaunch does not know is
// refused, and in --tasks queues every string of an input line; a column
// a line may lack is left to that line (Lines.Task, rule 4). In a run {#}
// and {%} are refused: an instance is %t.
func CheckPattern(flag, pat string, queue, whole, cols bool) error {
	switch {
	case queue:
		in := job.Input{Line: "x", Seq: 1, Slot: 1}
		if cols {
			in.Cols = []string{"x"}
		}
		name, err := FillFileName(pat, in, whole, instance.SrunLiteral)
		var te *TemplateError
		switch {
		case errors.As(err, &te) && te.Line:
		case err != nil:
			return fmt.Errorf("%s %q: %v", flag, pat, err)
		default:
			pat = name
		}
	case strings.Contains(pat, "{#}") || strings.Contains(pat, "{%}"):
		return fmt.Errorf("%s %q: {#} and {%%} name a task queue's task and slot (--tasks, --each-line); a run's instance is %%t", flag, pat)
	}
	if _, err := instance.ExpandPattern(pat, 0, instance.Names{}); err != nil {
		return fmt.Errorf("%s: %v", flag, err)
	}
	return nil
}
