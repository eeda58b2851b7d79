package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// taskFlags are the task queue's flags (run's, in queue mode).
type taskFlags struct {
	tasks        string
	eachLine     string
	shell        bool
	joblog       string
	resume       bool
	resumeFailed bool
	retries      int
	halt         string
	colsep       string
	// cols is --colsep compiled; nil without it.
	cols *regexp.Regexp
}

func (tf *taskFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&tf.tasks, "tasks", "", "run the commands of `FILE` (- for stdin), one per line, on the slots as they free up (a task queue)")
	fs.StringVar(&tf.eachLine, "each-line", "", "a task per non-blank line of `FILE` (- for stdin): COMMAND with GNU parallel's replacement strings: {} the line, {.} without its extension, {/} without its directory, {//} its directory, {/.} both, {#} the task number, {%} the slot (from 1), {N} column N (--colsep); without any, the line is appended; others ({= … =}, {+/}) are refused")
	fs.StringVar(&tf.colsep, "colsep", "", "--each-line: split each line into columns at the regular expression `REGEX` (Go's syntax), as GNU parallel's --colsep: {1} {2} … {-1} are the columns, each with the modifiers of {} ({2.} {2/}); without a replacement string the columns are appended as arguments")
	fs.BoolVar(&tf.shell, "shell", false, "--tasks: run each line with /bin/sh -c (pipes, redirections, variables)")
	fs.StringVar(&tf.joblog, "joblog", "", "record every finished task in `FILE`, in GNU parallel's joblog format; one sweep at a time owns FILE (a lock: a second is refused, naming the owner); /dev/stdout and other streams are appended to, and cannot be resumed")
	fs.BoolVar(&tf.resume, "resume", false, "skip the tasks the --joblog already records, by task number as GNU parallel (run the rest); records whose command has changed since are counted in a warning")
	fs.BoolVar(&tf.resumeFailed, "resume-failed", false, "skip the tasks the --joblog records as succeeded, by task number (rerun its failures with this COMMAND, run the rest)")
	fs.IntVar(&tf.retries, "retries", 1, "run a failing task up to N times in all, as GNU parallel's --retries, before it counts as failed")
	fs.StringVar(&tf.halt, "halt", "never", "stop early as GNU parallel: now|soon,fail=N|P% (success=, done= too)")
}

func (tf taskFlags) queueMode() bool { return tf.tasks != "" || tf.eachLine != "" }

// check says what is wrong with the queue flags, before anything starts
// (taskqueue.Choices), and compiles --colsep.
func (tf *taskFlags) check(fs *pflag.FlagSet, argv []string) error {
	c := taskqueue.Choices{Tasks: tf.tasks, EachLine: tf.eachLine, Shell: tf.shell, Joblog: tf.joblog, Resume: tf.resume, ResumeFailed: tf.resumeFailed,
		Retries: tf.retries, Colsep: tf.colsep, Command: argv, Given: fs.Changed}
	var err error
	tf.cols, err = c.Check()
	return asUsage(err)
}

// buildTasks turns the input (taskqueue.ReadInput) into tasks
// (taskqueue.Lines.Task, which says which lines are tasks), each command
// resolved in PATH, so that a bad line stops the queue before anything
// starts.
func buildTasks(tf taskFlags, argv []string, files []taskqueue.FilePattern, stdin io.Reader, PATH string) ([]job.Task, error) {
	in := taskqueue.Lines{What: "--tasks", Src: tf.tasks + tf.eachLine, Whole: tf.tasks != "", Shell: tf.shell, Template: argv, Cols: tf.cols, Files: files}
	if tf.eachLine != "" {
		in.What = "--each-line"
	}
	lines, err := taskqueue.ReadInput(in.What, in.Src, stdin)
	if err != nil {
		return nil, usageError{err}
	}
	resolved := map[string]string{}
	resolve := func(name string) (string, error) {
		if p, ok := resolved[name]; ok {
			return p, nil
		}
		p, err := lookPath(name, PATH)
		resolved[name] = p
		return p, err
	}
	var tasks []job.Task
	for n, line := range lines {
		t, ok, err := in.Task(n+1, line, len(tasks)+1)
		if err != nil {
			return nil, usageError{err}
		} else if !ok {
			continue
		}
		path, err := resolve(t.Args[0])
		var ce commandError
		if errors.As(err, &ce) {
			return nil, commandError{ce.code, fmt.Sprintf("%s %s line %d: %s", in.What, in.Src, n+1, ce.msg)}
		} else if err != nil {
			return nil, err
		}
		t.Path = path
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, usagef("%s %s holds no task", in.What, in.Src)
	}
	return tasks, nil
}

// outputPatterns are the -o and -e patterns a queue's tasks are named
// by; -e only when given (without it, stderr goes to -o's file).
func (o *runOptions) outputPatterns() []taskqueue.FilePattern {
	var pats []taskqueue.FilePattern
	if o.flags.output != "" {
		pats = append(pats, taskqueue.FilePattern{Flag: "-o", Pattern: o.flags.output})
	}
	if o.flags.error != "" && o.fs.Changed("error") {
		pats = append(pats, taskqueue.FilePattern{Flag: "-e", Pattern: o.flags.error})
	}
	return pats
}

// checkPattern refuses an -o/-e pattern (flag) that no run could expand
// (taskqueue.CheckPattern).
func checkPattern(flag, pat string, tf taskFlags) error {
	return asUsage(taskqueue.CheckPattern(flag, pat, tf.queueMode(), tf.tasks != "", tf.cols != nil))
}

// skipDone leaves out what an earlier run did, by its joblog
// (taskqueue.SkipDone); a record whose command has changed since is one
// warning that counts them, never a refusal.
func skipDone(tasks []job.Task, tf taskFlags, log *zap.Logger) ([]job.Task, int, error) {
	if !tf.resume && !tf.resumeFailed {
		return tasks, 0, nil
	}
	r, err := taskqueue.SkipDone(tasks, tf.joblog, tf.resumeFailed)
	if err != nil {
		return nil, 0, usageError{err}
	}
	if w := r.Warning(tf.joblog, tf.resumeFailed); w != "" {
		log.Warn(w)
	}
	return r.Todo, r.Skipped, nil
}
