//go:build linux

package mps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// PidFile is what a control daemon writes in its pipe directory once it
// is up (NVIDIA's MPS documentation).
const PidFile = "nvidia-cuda-mps-control.pid"

// Config is what the daemons of a run are started with.
type Config struct {
	// Control is nvidia-cuda-mps-control's path.
	Control string
	// Dir is the run's private directory (made 0700 by the caller, on a
	// node-local file system: MPS's pipes must be): each daemon's pipe
	// and log directories are made in it, and Stop removes it whole.
	Dir string
	// GPUs are the shared GPUs' UUIDs, one daemon each.
	GPUs []string
	// Env is the environment the daemons start from; their CUDA_MPS_*
	// and visible-devices variables are replaced.
	Env []string
	// Wait is how long a daemon has to write its pid file (CSCS's
	// wrapper waits 120 s).
	Wait time.Duration
	// Hurry is closed by a second Ctrl-C (README, "Signals"): daemons
	// that a failed start is stopping are ended at once, not asked to
	// quit first. Nil: never.
	Hurry <-chan struct{}
}

// Daemons are the control daemons of one run, one per shared GPU.
type Daemons struct {
	// Dir is the run's directory of the daemons' pipes and logs.
	Dir     string
	control string
	env     []string
	list    []*Daemon
}

// Daemon is one GPU's control daemon.
type Daemon struct {
	// GPU is its GPU's UUID (its CUDA_VISIBLE_DEVICES: a UUID, immune to
	// the renumbering a visible-devices variable causes).
	GPU             string
	PipeDir, LogDir string
	// PID is the daemon's; it leads its own process group.
	PID int
	// out is where the daemon's own stdout and stderr go.
	out string
	// kept is the daemon under its keeper: it and what it forks (its
	// servers) end with the run however the run ends.
	kept *process.Kept
}

// Start starts one control daemon per GPU in the foreground (-f), each
// under a keeper (process.StartKept) from the moment it is forked, so
// that neither it nor the servers it forks outlives the run, gpulaunch
// SIGKILLed included, and waits until each has written its pid file. On
// any failure — a daemon that exits, or does not come up within Wait, or
// ctx ending (a signal to gpulaunch; the error wraps ctx's cause) — the
// daemons started are stopped, the directory removed, and the error
// quotes what the daemon said (its directory is gone by then).
func Start(ctx context.Context, c Config) (*Daemons, error) {
	d := &Daemons{Dir: c.Dir, control: c.Control, env: daemonEnv(c.Env)}
	for k, uuid := range c.GPUs {
		if ctx.Err() != nil { // stopped already: no more daemons
			d.Stop(failedStartGrace, c.Hurry)
			return nil, fmt.Errorf("MPS: stopped while the control daemons started: %w", context.Cause(ctx))
		}
		dm, err := d.start(k, uuid)
		if err != nil {
			d.Stop(failedStartGrace, c.Hurry)
			return nil, err
		}
		d.list = append(d.list, dm)
	}
	if err := d.awaitPidFiles(ctx, c.Wait); err != nil {
		d.Stop(failedStartGrace, c.Hurry)
		return nil, err
	}
	return d, nil
}

// failedStartGrace is how long daemons of a start that failed have to
// quit before their keepers end them.
const failedStartGrace = time.Second

// daemonEnv is base without the variables a daemon is given its own of.
func daemonEnv(base []string) []string {
	var env []string
	for _, kv := range base {
		if !strings.HasPrefix(kv, "CUDA_MPS_") && !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts GPU k's daemon.
func (d *Daemons) start(k int, uuid string) (*Daemon, error) {
	base := filepath.Join(d.Dir, strconv.Itoa(k))
	dm := &Daemon{GPU: uuid, PipeDir: filepath.Join(base, "pipe"), LogDir: filepath.Join(base, "log"), out: filepath.Join(base, "daemon.out")}
	for _, dir := range []string{dm.PipeDir, dm.LogDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("MPS: %w", err)
		}
	}
	out, err := os.OpenFile(dm.out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MPS: %w", err)
	}
	defer out.Close()
	env := append(append([]string{}, d.env...), "CUDA_VISIBLE_DEVICES="+uuid, "CUDA_MPS_PIPE_DIRECTORY="+dm.PipeDir, "CUDA_MPS_LOG_DIRECTORY="+dm.LogDir)
	// The keeper and the daemon lead process groups of their own: a
	// Ctrl-C at the terminal reaches gpulaunch's, which stops the daemons
	// after the instances, not before.
	if dm.kept, err = process.StartKept(d.control, []string{d.control, "-f"}, env, "/", out); err != nil {
		return nil, fmt.Errorf("MPS: starting %s for GPU %s: %w", d.control, uuid, err)
	}
	dm.PID = dm.kept.PID
	return dm, nil
}

// awaitPidFiles waits until every daemon has written its pid file.
func (d *Daemons) awaitPidFiles(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for _, dm := range d.list {
		for !dm.up() {
			select {
			case <-dm.kept.Exited():
				return fmt.Errorf("MPS: the control daemon for GPU %s exited before it was up%s", dm.GPU, dm.tail())
			case <-ctx.Done():
				return fmt.Errorf("MPS: stopped while the control daemons started: %w", context.Cause(ctx))
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("MPS: the control daemon for GPU %s (pid %d) wrote no pid file (%s) in %s%s", dm.GPU, dm.PID, PidFile, wait, dm.tail())
			}
		}
	}
	return nil
}

// up: the daemon's pid file is there.
func (dm *Daemon) up() bool {
	_, err := os.Stat(filepath.Join(dm.PipeDir, PidFile))
	return err == nil
}

// tail is the end of what the daemon said, for an error: quoted, for its
// directory is removed before the error is read (Stop).
func (dm *Daemon) tail() string {
	var said []string
	for _, f := range []string{dm.out, filepath.Join(dm.LogDir, "control.log")} {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, l := range lines[max(0, len(lines)-3):] {
			if l != "" {
				said = append(said, l)
			}
		}
	}
	if len(said) == 0 {
		return ": it said nothing, on its output or in its control.log"
	}
	return "; its log ends: " + strings.Join(said, " | ")
}

// List is the daemons, in GPU order.
func (d *Daemons) List() []*Daemon { return d.list }

// PIDs are the daemons' pids.
func (d *Daemons) PIDs() []int {
	var pids []int
	for _, dm := range d.list {
		pids = append(pids, dm.PID)
	}
	return pids
}

// Keepers are the daemons' keepers' pids, each daemon and what it started
// below its keeper: the run spares them when it ends the processes its
// instances left behind.
func (d *Daemons) Keepers() []int {
	var pids []int
	for _, dm := range d.list {
		pids = append(pids, dm.kept.Keeper)
	}
	return pids
}

// Of is the daemon of the GPU with uuid; nil if none.
func (d *Daemons) Of(uuid string) *Daemon {
	for _, dm := range d.list {
		if dm.GPU == uuid {
			return dm
		}
	}
	return nil
}

// Stop asks each daemon to quit, as NVIDIA documents (`echo quit |
// nvidia-cuda-mps-control`), waits up to grace for it to exit, then has
// its keeper end whatever is left of it — the daemon, if it did not
// quit, and anything it started (process.Keep) —, and removes the run's
// directory. A hurry closed (a Ctrl-C meanwhile; nil: none) cuts the
// grace short. It says how many daemons had to be killed.
func (d *Daemons) Stop(grace time.Duration, hurry <-chan struct{}) (killed int) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if hurry != nil {
		go func() {
			select {
			case <-hurry:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	for _, dm := range d.list {
		select {
		case <-dm.kept.Exited():
			continue
		default:
		}
		_ = client(ctx, d.control, append(append([]string{}, d.env...), "CUDA_MPS_PIPE_DIRECTORY="+dm.PipeDir, "CUDA_MPS_LOG_DIRECTORY="+dm.LogDir), "quit")
	}
	for _, dm := range d.list {
		select {
		case <-dm.kept.Exited():
		case <-ctx.Done():
			killed++
		}
	}
	for _, dm := range d.list {
		dm.kept.End(keeperWait)
	}
	_ = os.RemoveAll(d.Dir)
	return killed
}

// keeperWait bounds how long Stop waits for a keeper to have ended
// everything below it with KILL: only a process stuck in the kernel
// takes longer, and gpulaunch does not wait for that.
const keeperWait = 10 * time.Second

// client runs the control program as a client with one command, until
// ctx ends. It leads its own process group, and dies with gpulaunch: a
// client waiting on a daemon that does not answer must not outlive it.
func client(ctx context.Context, control string, env []string, command string) error {
	q := exec.CommandContext(ctx, control)
	q.Env = env
	q.Stdin = bytes.NewBufferString(command + "\n")
	q.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return q.Run()
}

// Answers says whether a control daemon answers at pipeDir, asking it
// with control's client (get_server_list) for at most a few seconds, or
// until ctx ends (a signal to gpulaunch).
func Answers(ctx context.Context, control, pipeDir string, env []string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := client(ctx, control, append(daemonEnv(env), "CUDA_MPS_PIPE_DIRECTORY="+pipeDir), "get_server_list")
	return err == nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}
