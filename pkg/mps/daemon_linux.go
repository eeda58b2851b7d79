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
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	// exited is closed once the daemon has exited and been waited for.
	exited chan struct{}
}

// Start starts one control daemon per GPU in the foreground (-f), each a
// child of gpulaunch with a parent-death signal (TERM), so that none
// outlives a gpulaunch that is SIGKILLed, and waits until each has
// written its pid file. On any failure — a daemon that exits, or does
// not come up within Wait, or ctx ending (a signal to gpulaunch) — the
// daemons started are stopped, the directory removed, and the error
// carries the daemon's log.
func Start(ctx context.Context, c Config) (*Daemons, error) {
	d := &Daemons{Dir: c.Dir, control: c.Control, env: daemonEnv(c.Env)}
	for k, uuid := range c.GPUs {
		dm, err := d.start(k, uuid)
		if err != nil {
			d.Stop(time.Second)
			return nil, err
		}
		d.list = append(d.list, dm)
	}
	if err := d.awaitPidFiles(ctx, c.Wait); err != nil {
		d.Stop(time.Second)
		return nil, err
	}
	return d, nil
}

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
	dm := &Daemon{GPU: uuid, PipeDir: filepath.Join(base, "pipe"), LogDir: filepath.Join(base, "log"), out: filepath.Join(base, "daemon.out"), exited: make(chan struct{})}
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
	started := make(chan error, 1)
	go func() {
		// The parent-death signal is sent when the thread that forked
		// the daemon ends, not the process: this thread stays locked,
		// and so alive, until the daemon has exited.
		runtime.LockOSThread()
		defer close(dm.exited)
		cmd := exec.Command(d.control, "-f")
		cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, out, out, "/"
		// Own process group: a Ctrl-C at the terminal reaches gpulaunch,
		// which stops the daemons after the instances, not before.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		dm.PID = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait() // an error too when the run's reaper took its status first
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("MPS: starting %s for GPU %s: %w", d.control, uuid, err)
	}
	return dm, nil
}

// awaitPidFiles waits until every daemon has written its pid file.
func (d *Daemons) awaitPidFiles(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for _, dm := range d.list {
		for !dm.up() {
			select {
			case <-dm.exited:
				return fmt.Errorf("MPS: the control daemon for GPU %s exited before it was up%s", dm.GPU, dm.tail())
			case <-ctx.Done():
				return fmt.Errorf("MPS: stopped while the control daemons started: %w", context.Cause(ctx))
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("MPS: the control daemon for GPU %s (pid %d) wrote no %s in %s%s", dm.GPU, dm.PID, filepath.Join(dm.PipeDir, PidFile), wait, dm.tail())
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

// tail is the end of what the daemon said, for an error.
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
		return ": it said nothing (see its log directory " + dm.LogDir + ")"
	}
	return "; its log ends: " + strings.Join(said, " | ")
}

// List is the daemons, in GPU order.
func (d *Daemons) List() []*Daemon { return d.list }

// PIDs are the daemons' pids: the run spares them and what they started
// when it ends the processes its instances left behind.
func (d *Daemons) PIDs() []int {
	var pids []int
	for _, dm := range d.list {
		pids = append(pids, dm.PID)
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
// nvidia-cuda-mps-control`), waits up to grace for it to exit, KILLs the
// process group of any still there, and removes the run's directory. It
// says how many were killed.
func (d *Daemons) Stop(grace time.Duration) (killed int) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for _, dm := range d.list {
		select {
		case <-dm.exited:
			continue
		default:
		}
		q := exec.CommandContext(ctx, d.control)
		q.Env = append(append([]string{}, d.env...), "CUDA_MPS_PIPE_DIRECTORY="+dm.PipeDir, "CUDA_MPS_LOG_DIRECTORY="+dm.LogDir)
		q.Stdin = bytes.NewBufferString("quit\n")
		_ = q.Run()
	}
	for _, dm := range d.list {
		select {
		case <-dm.exited:
		case <-ctx.Done():
			_ = syscall.Kill(-dm.PID, syscall.SIGKILL)
			<-dm.exited
			killed++
		}
	}
	_ = os.RemoveAll(d.Dir)
	return killed
}

// Answers says whether a control daemon answers at pipeDir, asking it
// with control's client (get_server_list) for at most a few seconds.
func Answers(control, pipeDir string, env []string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q := exec.CommandContext(ctx, control)
	q.Env = append(daemonEnv(env), "CUDA_MPS_PIPE_DIRECTORY="+pipeDir)
	q.Stdin = bytes.NewBufferString("get_server_list\n")
	err := q.Run()
	return err == nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}
