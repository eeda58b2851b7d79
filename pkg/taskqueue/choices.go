package taskqueue

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// Choices are a task queue's flags as given: run's, read before anything
// is looked up.
type Choices struct {
	Tasks, EachLine string // the input: --tasks FILE or --each-line FILE
	Shell           bool
	Joblog          string
	Resume          bool
	ResumeFailed    bool
	Retries         int
	Colsep          string
	// Command is the COMMAND after the flags (argv).
	Command []string
	// Given says whether the flag was on the command line.
	Given func(flag string) bool
}

// Check says what is wrong with the queue's flags, before anything
// starts, and is --colsep compiled (nil without it). The rules, in order:
//  1. Without --tasks or --each-line, a queue's own flag is refused.
//  2. The input is given once; --tasks lines are whole commands (no
//     COMMAND follows), --each-line needs a COMMAND, and --shell is for
//     --tasks lines.
//  3. --resume and --resume-failed read the --joblog, and exclude each
//     other.
//  4. --retries counts the tries in all: at least 1 (GNU parallel's 0,
//     "try forever", is refused).
//  5. --colsep is --each-line's, and not empty.
//  6. A run's flags for instances are refused with the queue's own:
//     --ddp, --kill-on-bad-exit (--halt), --wait (--halt), --restarts
//     (--retries).
//  7. --colsep is a regular expression that matches no empty string
//     (Colsep).
func (c Choices) Check() (*regexp.Regexp, error) {
	if c.Tasks == "" && c.EachLine == "" { // no queue
		for _, name := range []string{"shell", "joblog", "resume", "resume-failed", "retries", "halt", "colsep"} {
			if c.Given(name) {
				return nil, fmt.Errorf("--%s belongs to a task queue: give --tasks FILE or --each-line FILE", name)
			}
		}
		return nil, nil
	}
	if err := c.checkInput(); err != nil {
		return nil, err
	}
	for _, name := range []string{"kill-on-bad-exit", "wait", "restarts"} {
		if c.Given(name) {
			hint := map[string]string{"kill-on-bad-exit": "--halt now,fail=1", "wait": "--halt", "restarts": "--retries"}[name]
			return nil, fmt.Errorf("--%s is for runs of N instances; a task queue has %s", name, hint)
		}
	}
	return Colsep(c.Colsep)
}

// checkInput is Check's rules 2 to 6 but for the instances' flags.
func (c Choices) checkInput() error {
	switch {
	case c.Tasks != "" && c.EachLine != "":
		return errors.New("--tasks and --each-line both give the tasks: use one")
	case c.Tasks != "" && len(c.Command) > 0:
		return fmt.Errorf("--tasks FILE holds whole commands, so no COMMAND follows (got %q); to run COMMAND once per input line use --each-line FILE -- COMMAND {}", c.Command[0])
	case c.EachLine != "" && len(c.Command) == 0:
		return errors.New("--each-line FILE needs a COMMAND: gpulaunch --each-line FILE -- app {}")
	case c.Shell && c.EachLine != "":
		return errors.New("--shell is for --tasks lines; with --each-line give the shell yourself: -- sh -c '… \"$1\"' sh {}")
	case (c.Resume || c.ResumeFailed) && c.Joblog == "":
		return errors.New("--resume and --resume-failed read the --joblog FILE of the earlier run: give it")
	case c.Resume && c.ResumeFailed:
		return errors.New("--resume and --resume-failed exclude each other: --resume skips every recorded task, --resume-failed reruns the failed ones")
	case c.Retries < 0:
		return fmt.Errorf("--retries %d: cannot be negative", c.Retries)
	case c.Retries == 0:
		return errors.New("--retries 0: GNU parallel reads 0 as \"try forever\", which a queue on GPUs should not do; give the number of tries in all (--retries 3: at most 3 runs of a task)")
	case c.Given("colsep") && c.EachLine == "":
		return errors.New("--colsep splits --each-line's input lines into columns; a --tasks line is a whole command: give --each-line FILE -- COMMAND {1} {2}")
	case c.Given("colsep") && c.Colsep == "":
		return errors.New("--colsep \"\": give the regular expression that separates the columns (--colsep ',' or --colsep '\\t')")
	case c.Given("ddp"):
		return errors.New("--ddp makes a run's instances one distributed job; the tasks of a queue are independent of each other: drop --ddp, or run the job with -n N --ddp")
	}
	return nil
}

// Colsep reads --colsep, a Go regular expression (RE2: parallel's are
// Perl's, which agree for the usual ',' '\t' ' +' '[;:]'); nil without
// one. One that matches the empty string is refused: it would split
// between every character.
func Colsep(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("--colsep %q: not a regular expression (%v): give one such as ',' or '\\t' or ' +'", expr, regexpWhy(err))
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("--colsep %q matches the empty string, so it would split between every character: give one that matches the separator (' +', not ' *')", expr)
	}
	return re, nil
}

// regexpWhy is a regexp error without Go's "error parsing regexp: " prefix.
func regexpWhy(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %q", se.Code, se.Expr)
	}
	return err.Error()
}
