package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/launcher/control"
)

const statusUsage = `Usage: gpulaunch status [--json] [--pid PID | --socket PATH]

The live instance table of a running gpulaunch on this node: state, pid,
GPUs, CPUs, uptime, restarts, CPU %, RSS, GPU % and GPU memory from the last
sample, last exit status, and launch-verification warnings. Without --pid or
--socket it finds the gpulaunch of the current job (SLURM_JOB_ID), or your
only one outside a job.`

const topCommandUsage = `Usage: gpulaunch top [--interval D] [--pid PID | --socket PATH]

The status table, refreshed every --interval (the run's monitor interval by
default) while stdout is a terminal, until the run ends or Ctrl-C. Printed
once otherwise.`

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
}

func (cf *clientFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&cf.pid, "pid", 0, "the gpulaunch with this pid (on this node)")
	fs.StringVar(&cf.socket, "socket", "", "the gpulaunch listening on this control socket")
}

// socketDirs are where this user's control sockets live.
func (a *app) socketDirs() []string {
	return control.Dirs(control.Env(a.env), a.uid, a.tmpRoot)
}

// findRun picks the running gpulaunch the user means.
func (a *app) findRun(cf clientFlags) (control.Client, error) {
	dirs := a.socketDirs()
	switch {
	case cf.socket != "" && cf.pid != 0:
		return control.Client{}, usagef("--pid and --socket both choose the gpulaunch: give one")
	case cf.socket != "":
		return control.Client{Path: cf.socket}, nil
	case cf.pid != 0:
		for _, d := range dirs {
			p := filepath.Join(d, control.SocketName(a.hostname, cf.pid))
			if _, err := os.Lstat(p); err == nil {
				return control.Client{Path: p}, nil
			}
		}
		return control.Client{}, fmt.Errorf("no control socket of pid %d in %s: is that a running gpulaunch of yours on this node (%s)?", cf.pid, strings.Join(dirs, ", "), a.hostname)
	}
	job := a.env["SLURM_JOB_ID"]
	runs, err := control.Find(dirs, a.hostname, job)
	if err != nil {
		return control.Client{}, err
	}
	switch {
	case len(runs) == 1:
		return runs[0].Client, nil
	case len(runs) > 1:
		var list []string
		for _, r := range runs {
			list = append(list, describeRun(r))
		}
		return control.Client{}, usagef("%d gpulaunch runs%s on %s: %s; choose one with --pid", len(runs), ofJob(job), a.hostname, strings.Join(list, "; "))
	}
	msg := fmt.Sprintf("no running gpulaunch%s on %s (looked in %s)", ofJob(job), a.hostname, strings.Join(dirs, ", "))
	if job != "" {
		if others, _ := control.Find(dirs, a.hostname, ""); len(others) > 0 {
			var list []string
			for _, r := range others {
				list = append(list, describeRun(r))
			}
			msg += fmt.Sprintf("; %d of other jobs or none run here (%s): choose with --pid", len(others), strings.Join(list, "; "))
		} else {
			msg += fmt.Sprintf(": status talks to the gpulaunch of this node; for one on another node of the job use `srun --jobid %s --overlap -w NODE gpulaunch status`", job)
		}
	}
	return control.Client{}, fmt.Errorf("%s", msg)
}

func ofJob(job string) string {
	if job == "" {
		return ""
	}
	return " of job " + job
}

func describeRun(r control.Run) string {
	cmd := strings.Join(r.Info.Command, " ")
	if len(cmd) > 40 {
		cmd = cmd[:37] + "..."
	}
	return fmt.Sprintf("pid %d (%s, started %s)", r.Info.PID, cmd, r.Info.Started.Format("15:04:05"))
}

// runStatus finds the run and takes its table.
func (a *app) runStatus(cf clientFlags) (control.Client, launcher.Snapshot, error) {
	c, err := a.findRun(cf)
	if err != nil {
		return c, launcher.Snapshot{}, err
	}
	snap, err := c.Status()
	return c, snap, err
}

func (a *app) status(args []string) error {
	var cf clientFlags
	var asJSON bool
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	cf.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print the table as JSON (the run, then one object per instance)")
	if done, err := a.parseFlags(fs, args, statusUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("status takes no arguments (got %q): choose the run with --pid or --socket", fs.Arg(0))
	}
	_, snap, err := a.runStatus(cf)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(snap)
	}
	writeStatus(a.stdout, snap)
	return nil
}

func (a *app) top(args []string) error {
	var cf clientFlags
	var interval string
	fs := pflag.NewFlagSet("top", pflag.ContinueOnError)
	cf.register(fs)
	fs.StringVar(&interval, "interval", "", "refresh this often (default: the run's monitor interval, or 2s)")
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
	c, snap, err := a.runStatus(cf)
	if err != nil {
		return err
	}
	if !isTerminal(a.stdout) {
		writeStatus(a.stdout, snap)
		return nil
	}
	if every == 0 {
		every = 2 * time.Second
		if d, err := time.ParseDuration(snap.Run.Monitor); err == nil && d > 0 {
			every = d
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		// home, draw, clear what the last frame left below: no flicker
		var b strings.Builder
		writeStatus(&b, snap)
		fmt.Fprintf(a.stdout, "\x1b[H%s\x1b[J", strings.ReplaceAll(b.String(), "\n", "\x1b[K\n"))
		if snap.Run.Finished {
			fmt.Fprintf(a.stdout, "gpulaunch pid %d has finished.\n", snap.Run.PID)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		next, err := c.Status()
		if err != nil {
			fmt.Fprintf(a.stdout, "gpulaunch pid %d has ended.\n", snap.Run.PID)
			return nil
		}
		snap = next
	}
}

func (a *app) logs(args []string) error {
	var cf clientFlags
	var follow bool
	var tail int
	fs := pflag.NewFlagSet("logs", pflag.ContinueOnError)
	cf.register(fs)
	fs.BoolVarP(&follow, "follow", "f", false, "keep printing what the instance writes")
	fs.IntVar(&tail, "tail", 0, "start with the last N lines only (default: all that is kept)")
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
	if tail < 0 {
		return usagef("--tail %d: cannot be negative", tail)
	}
	c, err := a.findRun(cf)
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
	fs := pflag.NewFlagSet("signal", pflag.ContinueOnError)
	cf.register(fs)
	if done, err := a.parseFlags(fs, args, signalUsage); done || err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("signal needs INSTANCE|all and SIGNAL: gpulaunch signal 2 USR1")
	}
	target := launcher.AllInstances
	if fs.Arg(0) != "all" {
		n, err := strconv.Atoi(fs.Arg(0))
		if err != nil || n < 0 {
			return usagef("signal %q: INSTANCE is an instance number or all", fs.Arg(0))
		}
		target = n
	}
	sig, err := control.ParseSignal(fs.Arg(1))
	if err != nil {
		return usageError{err.Error()}
	}
	c, err := a.findRun(cf)
	if err != nil {
		return err
	}
	sent, err := c.Signal(target, sig)
	if err != nil {
		return err
	}
	for _, s := range sent {
		fmt.Fprintf(a.stdout, "sent %s to instance %d (pid %d)\n", launcher.SignalName(sig), s.Instance, s.PID)
	}
	return nil
}

// writeStatus renders a snapshot as the live table.
func writeStatus(w io.Writer, s launcher.Snapshot) {
	counts := map[string]int{}
	for _, r := range s.Instances {
		counts[r.State]++
	}
	var parts []string
	for _, st := range []string{launcher.StateStarting, launcher.StateRunning, launcher.StateStopping, launcher.StateRestarting, launcher.StateExited} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	where := "pid " + strconv.Itoa(s.Run.PID) + " on " + s.Run.Host
	if s.Run.JobID != "" {
		where += ", job " + s.Run.JobID
		if s.Run.StepID != "" {
			where += " step " + s.Run.StepID
		}
	}
	sampled := "telemetry off"
	if s.Run.Monitor != "" && s.Run.Monitor != "0s" {
		sampled = "sampled every " + s.Run.Monitor
		if s.Run.GPUTelemetry != "" {
			sampled += ", GPU use unmeasured (" + strings.TrimPrefix(s.Run.GPUTelemetry, "no GPU telemetry: ") + ")"
		}
	}
	state := "up " + s.Taken.Sub(s.Run.Started).Round(time.Second).String()
	if s.Run.Finished {
		state = "finished"
	}
	fmt.Fprintf(w, "gpulaunch %s · %s · %d instances: %s · %s\n", where, state, len(s.Instances), strings.Join(parts, ", "), sampled)
	fmt.Fprintf(w, "  %s\n", strings.Join(s.Run.Command, " "))
	multiNode := s.Run.Nodes > 1
	if multiNode && len(s.Instances) > 0 {
		fmt.Fprintf(w, "node %d of %d: ranks %d..%d of %d (the other nodes' instances: gpulaunch status on each node)\n",
			s.Run.Node, s.Run.Nodes, s.Instances[0].Rank, s.Instances[len(s.Instances)-1].Rank, s.Run.WorldSize)
	}
	if q := s.Queue; q != nil {
		fmt.Fprintf(w, "queue: %d/%d done, %d failed, %d running, %d left", q.Done, q.Total-q.Skipped, q.Failed, q.Running, q.Remaining)
		if q.Skipped > 0 {
			fmt.Fprintf(w, " (%d done before, by the joblog)", q.Skipped)
		}
		if q.Halted != "" {
			fmt.Fprintf(w, " · stopping: %s", q.Halted)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// second is the column after the first, if any: a queue slot's task,
	// or an instance's rank over several nodes
	second := func(r launcher.InstanceStatus) string { return "" }
	if s.Queue != nil {
		// a queue's instances are slots; each row says which task it runs
		fmt.Fprint(tw, "SLOT\tTASK\t")
		second = func(r launcher.InstanceStatus) string {
			if r.Task == 0 {
				return "-\t"
			}
			return strconv.Itoa(r.Task) + "\t"
		}
	} else if multiNode {
		fmt.Fprint(tw, "INSTANCE\tRANK\t")
		second = func(r launcher.InstanceStatus) string { return strconv.Itoa(r.Rank) + "\t" }
	} else {
		fmt.Fprint(tw, "INSTANCE\t")
	}
	fmt.Fprintln(tw, "STATE\tPID\tGPU\tCPUS\tUPTIME\tRESTARTS\tCPU%\tRSS\tGPU%\tGPU MEM\tLAST EXIT")
	var warnings []string
	for _, r := range s.Instances {
		pid, up, cpu, rss, util, mem := "-", "-", "-", "-", "-", "-"
		if r.PID > 0 {
			pid = strconv.Itoa(r.PID)
			up = r.Wall.Round(time.Second).String()
		}
		if r.State == launcher.StateRunning || r.State == launcher.StateStopping {
			if r.RSS > 0 {
				cpu, rss = fmt.Sprintf("%.0f", r.CPUPercent), humanBytes(r.RSS)
			}
			if r.GPUUtil >= 0 {
				util, mem = strconv.Itoa(r.GPUUtil), humanBytes(r.GPUMem)
			}
		}
		exit := r.Exit
		if r.EndedBy != "" && exit != "" {
			exit += " (" + string(r.EndedBy) + ")"
		}
		fmt.Fprintf(tw, "%d\t%s%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Index, second(r), r.State, pid, orDash(r.GPUs), orDash(r.CPUs),
			up, r.Restarts, cpu, rss, util, mem, orDash(exit))
		warnings = append(warnings, r.Warnings...)
	}
	tw.Flush()
	for _, m := range warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
}

func humanBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0fM", float64(b)/(1<<20))
	case b > 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return "0"
}

// listenControl opens this run's control socket. A run goes on without
// one (a read-only temp dir, a planted directory), with a warning — unless
// it is required (--tmux's panes read it): then the run is refused, and
// nothing it made is left.
func (a *app) listenControl(board *launcher.Board, log *zap.Logger, required bool) (*control.Server, error) {
	dir := a.socketDirs()[0]
	_, statErr := os.Lstat(dir)
	srv, err := control.Listen(dir, a.hostname, a.pid, a.uid, board, log)
	if err == nil {
		board.SetSocket(srv.Path())
		return srv, nil
	}
	if required {
		if statErr != nil {
			_ = os.Remove(dir) // made just now, and empty
		}
		return nil, usagef("--tmux: its panes follow the run through the control socket, which cannot be opened: %v: nothing was started (drop --tmux to run without it)", err)
	}
	log.Warn(fmt.Sprintf("no control socket (gpulaunch status/top/logs/signal will not find this run): %v", err))
	return nil, nil
}
