package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/control"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/gpulaunch/gpulaunch/pkg/summary"
)

const statusUsage = `Usage: gpulaunch status [--json] [--pid PID | --socket PATH]

The live instance table of a running gpulaunch on this node: state, pid,
GPUs, CPUs, wall time since the first start, restarts, CPU %, RSS, GPU % and
GPU memory from the last sample, last exit status, and launch-verification
warnings; on a terminal fitted to its width (docs/interactive.md). Without
--pid or --socket it finds the gpulaunch of the current job (SLURM_JOB_ID),
or your only one outside a job.`

const topCommandUsage = `Usage: gpulaunch top [--interval D] [--pid PID | --socket PATH]

The status table, refreshed every --interval (the run's monitor interval by
default) while stdout is a terminal, until the run ends (its last frame shows
every exit) or Ctrl-C. Printed once otherwise.`

const logsUsage = `Usage: gpulaunch logs [-f] [--tail N] [--pid PID | --socket PATH] INSTANCE

Recent output of one instance (stdout and stderr, the last 128 KiB it wrote),
then with -f what it writes next, until it ends for good or Ctrl-C.`

const signalUsage = `Usage: gpulaunch signal [--pid PID | --socket PATH] INSTANCE|all SIGNAL

Sends SIGNAL (TERM, USR1, 10, …) to an instance's process group, or to every
running instance. The run's policies apply as to any signal: an instance that
dies of it counts as failed (--restarts, -K).`

// clientFlags choose the running gpulaunch to talk to.
type clientFlags struct {
	pid    int
	socket string
	// pidGiven: --pid was on the command line (0 given is not "none").
	pidGiven func() bool
}

func (cf *clientFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&cf.pid, "pid", 0, "the gpulaunch with this pid (on this node)")
	fs.StringVar(&cf.socket, "socket", "", "the gpulaunch listening on this control socket")
	cf.pidGiven = func() bool { return fs.Changed("pid") }
}

func statusFlagSet(cf *clientFlags, asJSON *bool) *pflag.FlagSet {
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	cf.register(fs)
	fs.BoolVar(asJSON, "json", false, "print the table as JSON (the run, then one object per instance)")
	return fs
}

func topFlagSet(cf *clientFlags, interval *string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("top", pflag.ContinueOnError)
	cf.register(fs)
	fs.StringVar(interval, "interval", "", "refresh this often (default: the run's monitor interval, or 2s)")
	return fs
}

func logsFlagSet(cf *clientFlags, follow *bool, tail *int) *pflag.FlagSet {
	fs := pflag.NewFlagSet("logs", pflag.ContinueOnError)
	cf.register(fs)
	fs.BoolVarP(follow, "follow", "f", false, "keep printing what the instance writes")
	fs.IntVar(tail, "tail", 0, "start with the last N lines only; with -f, 0 starts with what comes next (default: all that is kept)")
	return fs
}

func signalFlagSet(cf *clientFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("signal", pflag.ContinueOnError)
	cf.register(fs)
	return fs
}

// controlSide is what both sides of a control socket read of this
// invocation: the environment (where this user's sockets live, the job
// it is in), this user and this host.
type controlSide struct {
	env     sched.Env
	uid     int
	tmpRoot string // the system's temp directory (control.Dirs)
	host    string
}

// controlOf is what a reads of the control sockets.
func controlOf(a *app) controlSide { return controlSide{a.env, a.uid, a.tmpRoot, a.hostname} }

// dirs are where this user's control sockets live.
func (s controlSide) dirs() []string { return control.Dirs(control.Env(s.env), s.uid, s.tmpRoot) }

// find picks the running gpulaunch the user means (control.Choose).
func (s controlSide) find(cf clientFlags) (control.Client, error) {
	choice := control.Choice{PID: cf.pid, PIDGiven: cf.pidGiven != nil && cf.pidGiven(), Socket: cf.socket}
	granted, _ := sched.Detect(s.env)
	c, err := control.Choose(choice, s.dirs(), s.host, granted.JobID)
	if errors.As(err, new(control.Refusal)) {
		return c, usageError{err}
	}
	return c, err
}

// status finds the run and takes its table.
func (s controlSide) status(cf clientFlags) (control.Client, launcher.Snapshot, error) {
	c, err := s.find(cf)
	if err != nil {
		return c, launcher.Snapshot{}, err
	}
	snap, err := c.Status()
	return c, snap, err
}

func (a *app) status(args []string) error {
	var cf clientFlags
	var asJSON bool
	fs := statusFlagSet(&cf, &asJSON)
	if done, err := a.parseFlags(fs, args, statusUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("status takes no arguments (got %q): choose the run with --pid or --socket", fs.Arg(0))
	}
	_, snap, err := controlOf(a).status(cf)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(snap)
	}
	summary.WriteStatus(a.stdout, snap, termWidth(a.stdout), paint(a.stdout, a.env))
	return nil
}

func (a *app) top(args []string) error {
	var cf clientFlags
	var interval string
	fs := topFlagSet(&cf, &interval)
	if done, err := a.parseFlags(fs, args, topCommandUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("top takes no arguments (got %q): choose the run with --pid or --socket", fs.Arg(0))
	}
	every, err := parseDuration("--interval", interval)
	if err != nil {
		return err
	}
	if fs.Changed("interval") && every < launcher.MinMonitorInterval {
		return usagef("--interval %s: below the floor of %s, top would ask the run for its table faster than it can change (or, at 0, never wait); give %s or more, or leave it out for the run's monitor interval",
			interval, launcher.MinMonitorInterval, launcher.MinMonitorInterval)
	}
	c, snap, err := controlOf(a).status(cf)
	if err != nil {
		return err
	}
	if !isTerminal(a.stdout) {
		summary.WriteStatus(a.stdout, snap, 0, false)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	w := c.Watch(ctx, snap, every) // every 0: the run's monitor interval
	defer w.Stop()
	for w.Next(ctx) {
		drawTop(a.stdout, w.Snapshot(), paint(a.stdout, a.env))
	}
	switch w.End() {
	case control.Finished:
		fmt.Fprintf(a.stdout, "gpulaunch pid %d has finished.\n", snap.Run.PID)
	case control.Gone:
		fmt.Fprintf(a.stdout, "gpulaunch pid %d has ended.\n", snap.Run.PID)
	}
	return nil
}

// drawTop draws one frame of top: home, the table fitted to the terminal,
// clear what the last frame left below: no flicker.
func drawTop(w io.Writer, snap launcher.Snapshot, p summary.Paint) {
	var b strings.Builder
	summary.WriteStatus(&b, snap, termWidth(w), p)
	fmt.Fprintf(w, "\x1b[H%s\x1b[J", strings.ReplaceAll(b.String(), "\n", "\x1b[K\n"))
}

func (a *app) logs(args []string) error {
	var cf clientFlags
	var follow bool
	var tail int
	fs := logsFlagSet(&cf, &follow, &tail)
	if done, err := a.parseFlags(fs, args, logsUsage); done || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("logs needs one INSTANCE number: gpulaunch logs [-f] INSTANCE")
	}
	i, err := strconv.Atoi(fs.Arg(0))
	if err != nil || i < 0 {
		return usagef("logs %q: INSTANCE is an instance number (0, 1, …; see gpulaunch status)", fs.Arg(0))
	}
	if tail, err = control.Tail(tail, fs.Changed("tail"), follow); err != nil {
		return usageError{err}
	}
	c, err := controlOf(a).find(cf)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := c.Logs(ctx, i, follow, tail, a.stdout); !errors.Is(err, syscall.EPIPE) {
		return err
	}
	// the reader has gone (`gpulaunch logs -f 2 | head`): done, as cat is
	return nil
}

func (a *app) signal(args []string) error {
	var cf clientFlags
	fs := signalFlagSet(&cf)
	if done, err := a.parseFlags(fs, args, signalUsage); done || err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("signal needs INSTANCE|all and SIGNAL: gpulaunch signal 2 USR1")
	}
	target, err := control.ParseTarget(fs.Arg(0))
	if err != nil {
		return usageError{err}
	}
	sig, err := control.ParseSignal(fs.Arg(1))
	if err != nil {
		return usageError{err}
	}
	c, err := controlOf(a).find(cf)
	if err != nil {
		return err
	}
	sent, err := c.Signal(target, sig)
	if err != nil {
		return err
	}
	for _, s := range sent {
		fmt.Fprintf(a.stdout, "sent %s to instance %d (pid %d)\n", job.SignalName(sig), s.Instance, s.PID)
	}
	return nil
}

// paint is how gpulaunch's tables on w are coloured (summary.UseColour).
func paint(w io.Writer, env sched.Env) summary.Paint {
	return summary.Paint(summary.UseColour(isTerminal(w), env))
}

// listen opens the control socket of this run (pid's): a run goes on
// without one (a read-only temp dir, a planted directory), with a warning
// — unless it is required (--tmux's panes read it): then the run is
// refused, and nothing it made is left (control.ListenRun).
func (s controlSide) listen(pid int, board *launcher.Board, log *zap.Logger, required bool) (*control.Server, error) {
	srv, err := control.ListenRun(s.dirs(), s.host, pid, s.uid, board, log, required)
	switch {
	case err == nil:
		return srv, nil
	case required:
		return nil, usagef("--tmux: its panes follow the run through the control socket, which cannot be opened: %v: nothing was started (drop --tmux to run without it)", err)
	}
	log.Warn(fmt.Sprintf("no control socket (gpulaunch status/top/logs/signal will not find this run): %v", err))
	return nil, nil
}
