package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
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

// check says what is wrong with the queue flags, before anything starts.
func (tf *taskFlags) check(fs *pflag.FlagSet, argv []string) error {
	if !tf.queueMode() {
		for _, name := range []string{"shell", "joblog", "resume", "resume-failed", "retries", "halt", "colsep"} {
			if fs.Changed(name) {
				return usagef("--%s belongs to a task queue: give --tasks FILE or --each-line FILE", name)
			}
		}
		return nil
	}
	switch {
	case tf.tasks != "" && tf.eachLine != "":
		return usagef("--tasks and --each-line both give the tasks: use one")
	case tf.tasks != "" && len(argv) > 0:
		return usagef("--tasks FILE holds whole commands, so no COMMAND follows (got %q); to run COMMAND once per input line use --each-line FILE -- COMMAND {}", argv[0])
	case tf.eachLine != "" && len(argv) == 0:
		return usagef("--each-line FILE needs a COMMAND: gpulaunch --each-line FILE -- app {}")
	case tf.shell && tf.eachLine != "":
		return usagef("--shell is for --tasks lines; with --each-line give the shell yourself: -- sh -c '… \"$1\"' sh {}")
	case (tf.resume || tf.resumeFailed) && tf.joblog == "":
		return usagef("--resume and --resume-failed read the --joblog FILE of the earlier run: give it")
	case tf.resume && tf.resumeFailed:
		return usagef("--resume and --resume-failed exclude each other: --resume skips every recorded task, --resume-failed reruns the failed ones")
	case tf.retries < 0:
		return usagef("--retries %d: cannot be negative", tf.retries)
	case tf.retries == 0:
		return usagef("--retries 0: GNU parallel reads 0 as \"try forever\", which a queue on GPUs should not do; give the number of tries in all (--retries 3: at most 3 runs of a task)")
	case fs.Changed("colsep") && tf.eachLine == "":
		return usagef("--colsep splits --each-line's input lines into columns; a --tasks line is a whole command: give --each-line FILE -- COMMAND {1} {2}")
	case fs.Changed("colsep") && tf.colsep == "":
		return usagef("--colsep \"\": give the regular expression that separates the columns (--colsep ',' or --colsep '\\t')")
	case fs.Changed("ddp"):
		return usagef("--ddp makes a run's instances one distributed job; the tasks of a queue are independent of each other: drop --ddp, or run the job with -n N --ddp")
	}
	for _, name := range []string{"kill-on-bad-exit", "wait", "restarts"} {
		if fs.Changed(name) {
			hint := map[string]string{"kill-on-bad-exit": "--halt now,fail=1", "wait": "--halt", "restarts": "--retries"}[name]
			return usagef("--%s is for runs of N instances; a task queue has %s", name, hint)
		}
	}
	return tf.compileColsep()
}

// compileColsep reads --colsep, a Go regular expression (RE2: parallel's
// are Perl's, which agree for the usual ',' '\t' ' +' '[;:]').
func (tf *taskFlags) compileColsep() error {
	if tf.colsep == "" {
		return nil
	}
	re, err := regexp.Compile(tf.colsep)
	if err != nil {
		return usagef("--colsep %q: not a regular expression (%v): give one such as ',' or '\\t' or ' +'", tf.colsep, regexpWhy(err))
	}
	if re.MatchString("") {
		return usagef("--colsep %q matches the empty string, so it would split between every character: give one that matches the separator (' +', not ' *')", tf.colsep)
	}
	tf.cols = re
	return nil
}

// regexpWhy is a regexp error without Go's "error parsing regexp: " prefix.
func regexpWhy(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %q", se.Code, se.Expr)
	}
	return err.Error()
}

// readLines reads the task input, from a file or stdin (what, the flag).
func (a *app) readLines(what, name string, stdin io.Reader) ([]string, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := openInput(what, name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimSuffix(sc.Text(), "\r"))
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, usagef("%s %s line %d is longer than 1 MiB, the most a task line may hold: is it the right file? Nothing was started", what, name, len(lines)+1)
	case err != nil:
		return nil, usagef("%s %s: reading it failed after line %d: %v: nothing was started", what, name, len(lines), pathless(err))
	}
	return lines, nil
}

// openInput opens the queue's input (--tasks, --each-line), or says in
// one line what is wrong with it and what to do.
func openInput(what, name string) (*os.File, error) {
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usagef("%s %s: no such file: check the path; nothing was started", what, name)
	case errors.Is(err, fs.ErrPermission):
		return nil, usagef("%s %s: a directory on its path is not searchable by you: nothing was started", what, name)
	case err != nil:
		return nil, usagef("%s %s: %v: nothing was started", what, name, pathless(err))
	case fi.IsDir():
		return nil, usagef("%s %s is a directory: give the file that holds one task per line; nothing was started", what, name)
	}
	f, err := os.Open(name)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return nil, usagef("%s %s is not readable by you (chmod u+r %s): nothing was started", what, name, name)
	case err != nil:
		return nil, usagef("%s %s: %v: nothing was started", what, name, pathless(err))
	}
	return f, nil
}

// pathless is an OS error without Go's "open NAME: " wrapping, for a
// message that names the file itself.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// buildTasks turns the input into tasks, each command resolved, so that a
// bad line stops the queue before anything starts. Blank lines — empty or
// only blanks, as GNU parallel's -r — are not tasks; for --tasks neither
// are # comments. Task numbers count tasks, so they stay the same from run
// to run of the same input, which --resume relies on.
func (a *app) buildTasks(tf taskFlags, argv []string, files []outputPattern, stdin io.Reader) ([]job.Task, error) {
	src := tf.tasks + tf.eachLine
	what := "--tasks"
	if tf.eachLine != "" {
		what = "--each-line"
	}
	lines, err := a.readLines(what, src, stdin)
	if err != nil {
		return nil, err
	}
	resolved := map[string]string{}
	resolve := func(name string) (string, error) {
		if p, ok := resolved[name]; ok {
			return p, nil
		}
		p, err := lookPath(name, a.env["PATH"])
		resolved[name] = p
		return p, err
	}
	var tasks []job.Task
	for n, line := range lines {
		if strings.IndexByte(line, 0) >= 0 {
			return nil, usagef("%s %s line %d holds a NUL byte, which no program argument can carry: remove it (is the file binary?)", what, src, n+1)
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || tf.tasks != "" && strings.HasPrefix(trimmed, "#") {
			continue
		}
		t, err := lineTask(tf, argv, line, len(tasks)+1)
		if err != nil {
			return nil, lineError(err, what, src, n+1, line)
		}
		if err := checkLineFiles(files, t); err != nil {
			return nil, usagef("%s %s line %d: %v", what, src, n+1, err)
		}
		if len(t.Args) == 0 || t.Args[0] == "" {
			return nil, usagef("%s %s line %d: the command is an empty word: give the program to run", what, src, n+1)
		}
		path, err := resolve(t.Args[0])
		var ce commandError
		if errors.As(err, &ce) {
			return nil, commandError{ce.code, fmt.Sprintf("%s %s line %d: %s", what, src, n+1, ce.msg)}
		} else if err != nil {
			return nil, err
		}
		t.Path = path
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, usagef("%s %s holds no task", what, src)
	}
	return tasks, nil
}

// lineTask is the task of one input line, numbered seq, its program not
// yet resolved: a --tasks line split into words (or given to the shell),
// or --each-line's COMMAND filled from the line (FillTemplate; {%} waits
// for the slot).
func lineTask(tf taskFlags, argv []string, line string, seq int) (job.Task, error) {
	t := job.Task{Seq: seq, Command: line}
	var err error
	switch {
	case tf.tasks != "" && tf.shell:
		t.Args = []string{"/bin/sh", "-c", line}
	case tf.tasks != "":
		t.Args, err = taskqueue.SplitWords(line)
	default:
		in := job.Input{Line: line, Seq: seq}
		if tf.cols != nil {
			in.Cols = tf.cols.Split(line, -1)
		}
		if t.Args, err = taskqueue.FillTemplate(argv, in); err == nil {
			t.Template, t.Input, t.Command = argv, &in, shellJoin(t.Args)
		}
	}
	return t, err
}

// lineError says what is wrong with an input line, or with --each-line's
// COMMAND, in one line with the fix (a --tasks line's: its
// taskqueue.LineError).
func lineError(err error, what, src string, n int, line string) error {
	var te *taskqueue.TemplateError
	switch {
	case errors.As(err, &te) && te.Line:
		return usagef("%s %s line %d: %v", what, src, n, err)
	case errors.As(err, &te):
		return usagef("--each-line COMMAND: %v", err)
	}
	return usagef("%s %s line %d (%s): %v", what, src, n, line, err)
}

// outputPattern is an -o or -e file pattern and the flag that gave it.
type outputPattern struct{ flag, pattern string }

// outputPatterns are the -o and -e patterns a queue's tasks are named
// by; -e only when given (without it, stderr goes to -o's file).
func (o *runOptions) outputPatterns() []outputPattern {
	var pats []outputPattern
	if o.flags.output != "" {
		pats = append(pats, outputPattern{"-o", o.flags.output})
	}
	if o.flags.error != "" && o.fs.Changed("error") {
		pats = append(pats, outputPattern{"-e", o.flags.error})
	}
	return pats
}

// checkLineFiles refuses an -o/-e pattern that task t's line cannot fill
// (a column the line lacks), naming the flag; what the pattern alone
// gets wrong was refused before the input was read (checkPattern).
func checkLineFiles(files []outputPattern, t job.Task) error {
	if t.Input == nil {
		return nil
	}
	for _, f := range files {
		in := *t.Input
		in.Slot = 1
		if _, err := taskqueue.FillFileName(f.pattern, in, false, srunLiteral); err != nil {
			return fmt.Errorf("%s %q: %v", f.flag, f.pattern, err)
		}
	}
	return nil
}

// taskFiles are what a queue's task files are named from: the -o and -e
// patterns and the names they expand.
type taskFiles struct {
	out, err string
	names    instance.Names
	// ownOut and ownErr: the pattern names the task (namesTask), and
	// --open-mode append was not given, so that each try of a task starts
	// its file afresh.
	ownOut, ownErr bool
}

// newTaskFiles are the task files of the -o and -e patterns; appendAll:
// --open-mode append, which keeps even a task's own files.
func newTaskFiles(out, err string, names instance.Names, appendAll bool) taskFiles {
	return taskFiles{out: out, err: err, names: names,
		ownOut: !appendAll && namesTask(out, names), ownErr: !appendAll && namesTask(err, names)}
}

// forSlot completes a task handed to slot (from 0): an --each-line
// COMMAND is filled again from its template with {%} (the slot, from 1,
// like parallel's) — never the filled text, so a line holding "{%}"
// stays —, a --tasks line gets {%} as before, and the task's files are
// named (taskFile). A pattern that names the task gives the task files of
// its own, which each try starts afresh; one without names a file that
// every task (or every task of a slot, or of a line) shares line by line.
func forSlot(t job.Task, slot int, tf taskFiles) job.Task {
	s := strconv.Itoa(slot + 1)
	if t.Template != nil && t.Input != nil {
		in := *t.Input
		in.Slot = slot + 1
		if args, err := taskqueue.FillTemplate(t.Template, in); err == nil {
			t.Args, t.Command = args, shellJoin(args)
		}
	} else {
		args := make([]string, len(t.Args))
		for i, a := range t.Args {
			args[i] = strings.ReplaceAll(a, "{%}", s)
		}
		t.Args, t.Command = args, strings.ReplaceAll(t.Command, "{%}", s)
	}
	t.Stdout, t.OwnStdout = taskFile(tf.out, t, slot, tf.names), tf.ownOut
	t.Stderr, t.OwnStderr = taskFile(tf.err, t, slot, tf.names), tf.ownErr
	return t
}

// taskFile is the file pattern pat names for task t in slot (from 0): in
// a queue's -o and -e patterns every replacement string of --each-line
// is filled from the task's line (taskqueue.FillFileName: {} {.} {/}
// {//} {/.} {N}…), {#} is the task number and {%} the slot, from 1; then
// srun's % letters, %t the task number. A --tasks line is no input: only
// {#} and {%} (checkPattern refused the rest). The patterns were checked
// before the start (checkPattern, checkLineFiles): an error here cannot
// happen, and names no file.
func taskFile(pat string, t job.Task, slot int, names instance.Names) string {
	if pat == "" {
		return ""
	}
	in := job.Input{Seq: t.Seq}
	if t.Input != nil {
		in = *t.Input
	}
	in.Slot = slot + 1
	name, err := taskqueue.FillFileName(pat, in, t.Input == nil, srunLiteral)
	if err != nil {
		return ""
	}
	path, _ := instance.ExpandPattern(name, t.Seq, names)
	return path
}

// srunLiteral quotes what a replacement string writes into a file name
// for srun's % letters, which are read after: a line holding "50%" is
// the name's "50%".
func srunLiteral(s string) string { return strings.ReplaceAll(s, "%", "%%") }

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

// checkPattern refuses an -o/-e pattern (flag) that no run could expand,
// before anything starts. In a queue it is filled for a task first
// (taskqueue.FillFileName): a replacement string gpulaunch does not know
// is refused, and in --tasks queues every string of an input line; a
// column a line may lack is left to that line (checkLineFiles). In a run
// {#} and {%} are refused: an instance is %t.
func checkPattern(flag, pat string, tf taskFlags) error {
	switch {
	case tf.queueMode():
		in := job.Input{Line: "x", Seq: 1, Slot: 1}
		if tf.cols != nil {
			in.Cols = []string{"x"}
		}
		name, err := taskqueue.FillFileName(pat, in, tf.tasks != "", srunLiteral)
		var te *taskqueue.TemplateError
		switch {
		case errors.As(err, &te) && te.Line:
		case err != nil:
			return usagef("%s %q: %v", flag, pat, err)
		default:
			pat = name
		}
	case strings.Contains(pat, "{#}") || strings.Contains(pat, "{%}"):
		return usagef("%s %q: {#} and {%%} name a task queue's task and slot (--tasks, --each-line); a run's instance is %%t", flag, pat)
	}
	if _, err := instance.ExpandPattern(pat, 0, instance.Names{}); err != nil {
		return usagef("%s: %v", flag, err)
	}
	return nil
}

// resumeFlag is the flag that reads the joblog back, as the user gave it.
func (tf taskFlags) resumeFlag() string {
	if tf.resumeFailed {
		return "--resume-failed"
	}
	return "--resume"
}

// skipDone leaves out what an earlier run did, by its joblog, by task
// number whatever the command, as GNU parallel (taskqueue.Resume); a
// record whose command has changed since is one warning that counts
// them, never a refusal. A joblog that cannot be read back (a stream:
// taskqueue.JoblogStream) is refused.
func skipDone(tasks []job.Task, tf taskFlags, log *zap.Logger) ([]job.Task, int, error) {
	if !tf.resume && !tf.resumeFailed {
		return tasks, 0, nil
	}
	if taskqueue.JoblogStream(tf.joblog) {
		return nil, 0, usagef("%s reads the --joblog of an earlier run back, and %s is not a file but a stream (gpulaunch's own output, a pipe, a terminal or a device): give the joblog's file, or drop %s", tf.resumeFlag(), tf.joblog, tf.resumeFlag())
	}
	done, err := taskqueue.ReadJoblog(tf.joblog)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return nil, 0, usagef("--joblog %s: %v: %s cannot read it; nothing was started", tf.joblog, pe.Err, tf.resumeFlag())
	case err != nil:
		return nil, 0, usagef("--joblog %v: %s reads it as the joblog of an earlier run; nothing was started", err, tf.resumeFlag())
	}
	r := taskqueue.Resume(tasks, done, tf.resumeFailed)
	if w := resumeWarning(r, tf); w != "" {
		log.Warn(w)
	}
	return r.Todo, r.Skipped, nil
}

// resumeWarning is the one line that says how many of the joblog's
// records are not this sweep's commands; "" when all are.
func resumeWarning(r taskqueue.Resumed, tf taskFlags) string {
	if r.Changed == 0 && r.Beyond == 0 {
		return ""
	}
	var what []string
	if r.Changed > 0 {
		what = append(what, fmt.Sprintf("%d of its %d record(s) name another command than this sweep's task of that number (task %d: %q, now %q)",
			r.Changed, r.Records, r.First.Seq, r.First.Recorded, r.First.Now))
	}
	if r.Beyond > 0 {
		what = append(what, fmt.Sprintf("%d record(s) name task numbers beyond this input's %d tasks", r.Beyond, r.Skipped+len(r.Todo)))
	}
	then := "the recorded tasks are skipped"
	if tf.resumeFailed {
		then = "the failed ones run again with this sweep's command, the others count as done"
	}
	return fmt.Sprintf("--joblog %s: %s: %s goes by task number, as GNU parallel does, so %s; if the input changed, give this sweep its own --joblog",
		tf.joblog, strings.Join(what, "; "), tf.resumeFlag(), then)
}

// shellJoin is taskqueue.ShellJoin: argv as the joblog's Command column
// writes it.
func shellJoin(args []string) string { return taskqueue.ShellJoin(args) }

// progressLine keeps one line of queue progress at the bottom of a
// terminal. Everything else written to the terminal goes through its
// writers, which clear the line first; the next update draws it again.
type progressLine struct {
	mu      sync.Mutex
	term    io.Writer
	shown   bool
	last    taskqueue.QueueStatus
	drawn   time.Time
	started time.Time
}

type progressWriter struct {
	p *progressLine
	w io.Writer
}

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.clearLocked()
	return w.w.Write(b)
}

func (p *progressLine) wrap(w io.Writer) io.Writer { return progressWriter{p, w} }

func (p *progressLine) clearLocked() {
	if p.shown {
		io.WriteString(p.term, "\r\x1b[K")
		p.shown = false
	}
}

// update takes new counts; the line is redrawn at most ten times a second.
func (p *progressLine) update(qs taskqueue.QueueStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = qs
	if time.Since(p.drawn) >= 100*time.Millisecond {
		p.drawLocked()
	}
}

func (p *progressLine) drawLocked() {
	q := p.last
	text := fmt.Sprintf("tasks: %d/%d done", q.Done, q.Total-q.Skipped)
	if q.Skipped > 0 {
		text += fmt.Sprintf(" (+%d from the joblog)", q.Skipped)
	}
	text += fmt.Sprintf(", %d failed, %d running, %d left", q.Failed, q.Running, q.Remaining)
	elapsed := time.Since(p.started)
	if q.Done > 0 && elapsed > 0 {
		rate := float64(q.Done) / elapsed.Seconds()
		eta := time.Duration(float64(q.Remaining+q.Running) / rate * float64(time.Second)).Round(time.Second)
		text += fmt.Sprintf(" · %.1f/s · ETA %s", rate, eta)
	}
	if q.Halted != "" {
		text += " · stopping: " + q.Halted
	}
	io.WriteString(p.term, "\r\x1b[K"+text)
	p.shown, p.drawn = true, time.Now()
}

// tick redraws now and then, so that the ETA moves while long tasks run.
func (p *progressLine) tick(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// done leaves the last counts on their own line.
func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked()
	io.WriteString(p.term, "\n")
	p.shown = false
}
