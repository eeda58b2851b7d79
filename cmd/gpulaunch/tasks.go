package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
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
}

func (tf *taskFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&tf.tasks, "tasks", "", "run the commands of FILE (- for stdin), one per line, on the slots as they free up (a task queue)")
	fs.StringVar(&tf.eachLine, "each-line", "", "a task per line of FILE (- for stdin): COMMAND with {} the line, {#} the task number, {%} the slot (from 1)")
	fs.BoolVar(&tf.shell, "shell", false, "--tasks: run each line with /bin/sh -c (pipes, redirections, variables)")
	fs.StringVar(&tf.joblog, "joblog", "", "record every finished task in FILE, in GNU parallel's joblog format")
	fs.BoolVar(&tf.resume, "resume", false, "skip the tasks the --joblog already records (run the rest)")
	fs.BoolVar(&tf.resumeFailed, "resume-failed", false, "skip the tasks the --joblog records as succeeded (rerun its failures, run the rest)")
	fs.IntVar(&tf.retries, "retries", 1, "run a failing task up to N times in all, as GNU parallel's --retries, before it counts as failed")
	fs.StringVar(&tf.halt, "halt", "never", "stop early as GNU parallel: now|soon,fail=N|P% (success=, done= too)")
}

func (tf taskFlags) queueMode() bool { return tf.tasks != "" || tf.eachLine != "" }

// check says what is wrong with the queue flags, before anything starts.
func (tf taskFlags) check(fs *pflag.FlagSet, argv []string) error {
	if !tf.queueMode() {
		for _, name := range []string{"shell", "joblog", "resume", "resume-failed", "retries", "halt"} {
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
	case fs.Changed("ddp"):
		return usagef("--ddp makes a run's instances one distributed job; the tasks of a queue are independent of each other: drop --ddp, or run the job with -n N --ddp")
	}
	for _, name := range []string{"kill-on-bad-exit", "wait", "restarts"} {
		if fs.Changed(name) {
			hint := map[string]string{"kill-on-bad-exit": "--halt now,fail=1", "wait": "--halt", "restarts": "--retries"}[name]
			return usagef("--%s is for runs of N instances; a task queue has %s", name, hint)
		}
	}
	return nil
}

// readLines reads the task input, from a file or stdin.
func (a *app) readLines(name string, stdin io.Reader) ([]string, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("%v: nothing was started", err)
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
	if err := sc.Err(); err != nil {
		return nil, usagef("reading %s: %v", name, err)
	}
	return lines, nil
}

// buildTasks turns the input into tasks, each command resolved, so that a
// bad line stops the queue before anything starts. --tasks: blank lines
// and # comments are not tasks; --each-line: blank lines are not. Task
// numbers count tasks, so they stay the same from run to run of the same
// input, which --resume relies on.
func (a *app) buildTasks(tf taskFlags, argv []string, stdin io.Reader) ([]launcher.Task, error) {
	src := tf.tasks + tf.eachLine
	what := "--tasks"
	if tf.eachLine != "" {
		what = "--each-line"
	}
	lines, err := a.readLines(src, stdin)
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
	var tasks []launcher.Task
	for n, line := range lines {
		if strings.IndexByte(line, 0) >= 0 {
			return nil, usagef("%s %s line %d holds a NUL byte, which no program argument can carry: remove it (is the file binary?)", what, src, n+1)
		}
		var args []string
		switch {
		case tf.tasks != "":
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			if tf.shell {
				args = []string{"/bin/sh", "-c", line}
				break
			}
			if args, err = launcher.SplitWords(line); err != nil {
				return nil, usagef("%s %s line %d: %v: add --shell to run each line with /bin/sh -c, or quote it: %s", what, src, n+1, err, line)
			}
		default:
			if line == "" {
				continue
			}
			args = templateArgs(argv, line, len(tasks)+1)
		}
		path, err := resolve(args[0])
		if ce, ok := err.(commandError); ok {
			return nil, commandError{ce.code, fmt.Sprintf("%s %s line %d: %s", what, src, n+1, ce.msg)}
		} else if err != nil {
			return nil, err
		}
		cmd := line
		if tf.eachLine != "" {
			cmd = shellJoin(args)
		}
		tasks = append(tasks, launcher.Task{Seq: len(tasks) + 1, Path: path, Args: args, Command: cmd})
	}
	if len(tasks) == 0 {
		return nil, usagef("%s %s holds no task", what, src)
	}
	return tasks, nil
}

// templateArgs fills an --each-line COMMAND for one input line: {} is the
// line (one argument, never split), {#} the task number; without {} the
// line is the last argument, as in parallel. {%} waits for the slot.
func templateArgs(argv []string, line string, seq int) []string {
	out := make([]string, len(argv))
	used := false
	for i, a := range argv {
		used = used || strings.Contains(a, "{}")
		out[i] = fillTemplate(a, line, seq)
	}
	if !used {
		out = append(out, line)
	}
	return out
}

// fillTemplate replaces {} and {#} in one pass, so that a line holding
// "{#}" stays as it is.
func fillTemplate(a, line string, seq int) string {
	if !strings.Contains(a, "{") {
		return a
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(a, '{')
		if i < 0 {
			b.WriteString(a)
			return b.String()
		}
		b.WriteString(a[:i])
		switch rest := a[i:]; {
		case strings.HasPrefix(rest, "{}"):
			b.WriteString(line)
			a = rest[2:]
		case strings.HasPrefix(rest, "{#}"):
			b.WriteString(strconv.Itoa(seq))
			a = rest[3:]
		default:
			b.WriteByte('{')
			a = rest[1:]
		}
	}
}

// forSlot fills {%} (the slot, from 1 like parallel's) into a task handed
// to slot, and names its output files: in the -o and -e patterns %t and
// {#} are the task number, {%} the slot. A pattern with neither %t nor
// {#} names one file for every task, which they share line by line.
func forSlot(t launcher.Task, slot int, outPat, errPat string, names launcher.Names) launcher.Task {
	s := strconv.Itoa(slot + 1)
	args := make([]string, len(t.Args))
	for i, a := range t.Args {
		args[i] = strings.ReplaceAll(a, "{%}", s)
	}
	t.Args, t.Command = args, strings.ReplaceAll(t.Command, "{%}", s)
	file := func(pat string) string {
		if pat == "" {
			return ""
		}
		pat = strings.ReplaceAll(strings.ReplaceAll(pat, "{#}", strconv.Itoa(t.Seq)), "{%}", s)
		path, _ := launcher.ExpandPattern(pat, t.Seq, names)
		return path
	}
	t.Stdout, t.Stderr = file(outPat), file(errPat)
	return t
}

// skipDone leaves out what an earlier run finished, by its joblog.
func skipDone(tasks []launcher.Task, tf taskFlags) ([]launcher.Task, int, error) {
	if !tf.resume && !tf.resumeFailed {
		return tasks, 0, nil
	}
	done, err := launcher.ReadJoblog(tf.joblog)
	if err != nil {
		return nil, 0, usagef("--joblog %v", err)
	}
	var left []launcher.Task
	for _, t := range tasks {
		e, ran := done[t.Seq]
		if ran && (tf.resume || e.Exit == 0 && e.Signal == 0) {
			continue
		}
		left = append(left, t)
	}
	return left, len(tasks) - len(left), nil
}

// shellJoin writes argv as a shell would read it back.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", r)
		}) < 0 {
			out[i] = a
		} else {
			out[i] = shellQuote(a)
		}
	}
	return strings.Join(out, " ")
}

// progressLine keeps one line of queue progress at the bottom of a
// terminal. Everything else written to the terminal goes through its
// writers, which clear the line first; the next update draws it again.
type progressLine struct {
	mu      sync.Mutex
	term    io.Writer
	shown   bool
	last    launcher.QueueStatus
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
func (p *progressLine) update(qs launcher.QueueStatus) {
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
