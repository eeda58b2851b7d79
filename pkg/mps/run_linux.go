//go:build linux

package mps

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/privatedir"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// UnderJobsMPS says whether a run's instances are clients of the job's own
// MPS, for what its sharing line and figures say (SharingOf's jobsMPS):
//  1. under --mps (r not nil): when the job's own was found (Existing);
//  2. without --mps: when the environment the instances inherit names a
//     pipe directory (FindExisting's E1), which makes each of them a
//     client of the daemon there, as telemetry reads them
//     (telemetry.MPSClient).
func UnderJobsMPS(r *Run, env map[string]string) bool {
	if r != nil {
		return r.Existing != nil
	}
	return env[gpu.MPSPipeEnv] != ""
}

// Run is how a run has MPS, decided before anything starts (Prepare): the
// job's own (Existing), or daemons gpulaunch starts (Start).
type Run struct {
	Settings Settings
	Shares   []Share
	// Existing is the job's own MPS; nil: the run starts daemons of its
	// own.
	Existing *Existing
	// control is nvidia-cuda-mps-control's path, for daemons of the run.
	control string
	// parent is the private directory the run's own directory is made in.
	parent string
	// wait is how long a daemon has to come up.
	wait time.Duration
	env  []string
}

// Prepare decides a run's MPS from its plan, or refuses it, before
// anything starts. ctx ends at a signal to gpulaunch: asking the job's
// MPS is given up. The rules, in order:
//
//	R1. The plan suits MPS (Check: M1–M4).
//	R2. How long a daemon has to come up is GPULAUNCH_MPS_WAIT's (WaitOf).
//	R3. The job's own MPS is used when it has one (FindExisting: E1–E3;
//	    E3 asks with the control program, when it is on PATH).
//	R4. Otherwise gpulaunch starts its own: the control program is on
//	    PATH,
//	R5. the directory its pipes go in is private where it exists
//	    (privatedir.Check),
//	R6. and short enough for a Unix socket (CheckPipeParent).
//
// Each refusal says why, with the fix, and that nothing was started.
func Prepare(ctx context.Context, p binding.Plan, vendor gpu.Vendor, s Settings, n Node) (*Run, error) {
	if err := Check(p, vendor, n.Host()); err != nil {
		return nil, fmt.Errorf("%v; nothing was started", err)
	}
	r := &Run{Settings: s, Shares: Shares(p), env: n.BaseEnv}
	var err error
	if r.wait, err = WaitOf(n.Env[WaitEnv]); err != nil {
		return nil, fmt.Errorf("%v; nothing was started", err)
	}
	answers := func(dir string) bool { return n.Control != "" && Answers(ctx, n.Control, dir, n.BaseEnv) }
	if r.Existing = FindExisting(n.Env, answers); r.Existing != nil {
		return r, nil
	}
	if n.Control == "" {
		return nil, fmt.Errorf("--mps: nvidia-cuda-mps-control is not on PATH, and the job has no MPS of its own (no CUDA_MPS_* set, no daemon at %s): load the CUDA module or install NVIDIA's nvidia-cuda-mps package; nothing was started", DefaultPipeDir)
	}
	r.control, r.parent = n.Control, n.Parent
	if _, err := os.Lstat(r.parent); err == nil {
		if err := privatedir.Check(r.parent, n.UID, "set TMPDIR to a directory of yours"); err != nil {
			return nil, fmt.Errorf("--mps: the MPS pipe directories would go in %s, which is not private: %v; nothing was started", r.parent, err)
		}
	}
	if err := CheckPipeParent(r.parent, len(r.Shares)); err != nil {
		return nil, fmt.Errorf("%v; nothing was started", err)
	}
	return r, nil
}

// Start starts the run's daemons, one per shared GPU, in a directory of
// its own (NewRunDir); nil under the job's own MPS, which it only logs. ctx
// ending (a signal to gpulaunch while they start) gives the start up, and
// hurry (a second one) ends the daemons started at once: the error wraps
// ctx's cause.
func (r *Run) Start(ctx context.Context, hurry <-chan struct{}, log *zap.Logger) (*Daemons, error) {
	if r.Existing != nil {
		log.Info(fmt.Sprintf("MPS: using the job's own, at %s (from %s)", r.Existing.PipeDir, r.Existing.From))
		return nil, nil
	}
	dir, err := NewRunDir(r.parent)
	if err != nil {
		return nil, fmt.Errorf("--mps: %w", err)
	}
	var gpus, indices []string
	for _, s := range SharedGPUs(r.Shares) {
		gpus, indices = append(gpus, s.GPU.UUID), append(indices, strconv.Itoa(s.GPU.Index))
	}
	log.Info(fmt.Sprintf("MPS: waiting up to %s for %d control daemon(s) to come up (%s sets how long)", r.wait, len(gpus), WaitEnv))
	d, err := Start(ctx, Config{Control: r.control, Dir: dir, GPUs: gpus, Env: r.env, Wait: r.wait, Hurry: hurry})
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was started", err)
	}
	log.Info(fmt.Sprintf("MPS: %d control daemon(s) up, one per shared GPU (GPU %s), in %s", len(gpus), strings.Join(indices, ", "), dir))
	if alone := r.alone(); alone != "" {
		log.Info(fmt.Sprintf("MPS: instance(s) %s have a GPU each to themselves: no daemon, no MPS variables", alone))
	}
	return d, nil
}

// alone lists the instances alone on their GPUs: "1,2,3"; "" when none
// is.
func (r *Run) alone() string {
	var ids []string
	for _, s := range r.Shares {
		if len(s.Slots) == 1 {
			ids = append(ids, strconv.Itoa(s.Slots[0]))
		}
	}
	return strings.Join(ids, ",")
}

// ClientEnvs are the MPS variables each instance (by slot) adds to its
// environment: its GPU's daemon's (d, from Start), or the job's MPS's (d
// nil), with its share (ClientThreads) and memory limit. An instance
// alone on its GPU has no daemon of the run's, and is told nothing
// (SharedGPUs).
func (r *Run) ClientEnvs(d *Daemons) map[int][]string {
	out := map[int][]string{}
	for _, s := range r.Shares {
		threads := ClientThreads(r.Settings.Threads, len(s.Slots), r.Existing != nil)
		pipe, logDir := "", ""
		if d != nil {
			dm := d.Of(s.GPU.UUID)
			if dm == nil {
				continue
			}
			pipe, logDir = dm.PipeDir, dm.LogDir
		}
		for _, i := range s.Slots {
			out[i] = append(out[i], ClientEnv(pipe, logDir, threads, r.Settings.MemLimit)...)
		}
	}
	return out
}

// NewRunDir makes the run's private directory of daemons in parent
// (made 0700 if missing), named after this gpulaunch (runDirPrefix),
// after removing the stale ones (RemoveStaleDirs).
func NewRunDir(parent string) (string, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	RemoveStaleDirs(parent)
	return os.MkdirTemp(parent, runDirPrefix(os.Getpid()))
}

// RemoveStaleDirs removes what gpulaunchs that were SIGKILLed left in
// parent (staleRunDir): a pid no process has is a gpulaunch gone.
func RemoveStaleDirs(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "mps-*-*"))
	gone := func(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
	for _, d := range dirs {
		if staleRunDir(filepath.Base(d), os.Getpid(), gone) {
			_ = os.RemoveAll(d)
		}
	}
}

// StopAfterRun stops the run's daemons (none: d nil), whatever way the
// run ended. It waits up to 10 s for them to quit; INT, TERM, HUP or QUIT
// to gpulaunch meanwhile ends them at once (the run's status stands:
// README, "Signals", 8).
func (d *Daemons) StopAfterRun(log *zap.Logger) {
	if d == nil {
		return
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	hurry, stopped := make(chan struct{}), make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-sigs:
			close(hurry)
		case <-stopped:
		}
	}()
	if killed := d.Stop(10*time.Second, hurry); killed > 0 {
		log.Warn(fmt.Sprintf("MPS: %d control daemon(s) did not quit within 10s, or a signal came first, and were killed", killed))
	}
}

// Info is what `info` says of MPS here: the job's own, or whether --mps
// could start daemons of its own.
type Info struct {
	// Control is nvidia-cuda-mps-control's path; "" when not on PATH.
	Control string `json:"control,omitempty"`
	// JobsPipeDir is where the job's own MPS answers; "" when it has none.
	JobsPipeDir string `json:"jobs_pipe_directory,omitempty"`
	Says        string `json:"says"`
}

// NodeOf is what this node offers --mps: gpulaunch's environment, the
// control program found on its PATH ("" when it is not there), and the
// private directory (parent) and uid the run's daemons are kept under.
func NodeOf(env sched.Env, parent string, uid int) Node {
	control, err := process.LookPath("nvidia-cuda-mps-control", env["PATH"])
	if err != nil {
		control = ""
	}
	return Node{Env: env, BaseEnv: env.List(), Control: control, Parent: parent, UID: uid}
}

// Describe is the node's Info: the job's MPS as Prepare would find it
// (R3), else whether the control program is there (R4).
func Describe(n Node) *Info {
	m := &Info{Control: n.Control}
	answers := func(dir string) bool {
		return n.Control != "" && Answers(context.Background(), n.Control, dir, n.BaseEnv)
	}
	switch e := FindExisting(n.Env, answers); {
	case e != nil:
		m.JobsPipeDir = e.PipeDir
		m.Says = fmt.Sprintf("the job's own at %s (from %s): --mps uses it", e.PipeDir, e.From)
	case n.Control != "":
		m.Says = n.Control + ": --mps starts one control daemon per shared GPU"
	default:
		m.Says = "nvidia-cuda-mps-control is not on PATH: --mps needs it (load the CUDA module, or NVIDIA's nvidia-cuda-mps package)"
	}
	return m
}

// Fates are the run's GPUs whose instances share a fate: those of the
// daemons the run started (d), one per shared GPU. Under the job's own
// MPS (d nil) there are none: its servers' logs are the job's, and may
// serve other runs' clients, so gpulaunch reads no fault of them.
func (r *Run) Fates(d *Daemons) []Fate {
	if d == nil {
		return nil
	}
	var out []Fate
	for _, s := range SharedGPUs(r.Shares) {
		if dm := d.Of(s.GPU.UUID); dm != nil {
			out = append(out, Fate{GPU: s.GPU.UUID, Index: s.GPU.Index, Slots: s.Slots, LogDir: dm.LogDir})
		}
	}
	return out
}
