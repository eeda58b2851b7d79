package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/privatedir"
	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// mpsFlags are --mps and its settings (run and plan: the flags with -n).
type mpsFlags struct {
	on       bool
	threads  int
	memLimit string
}

func (m *mpsFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&m.on, "mps", false, "share GPUs through NVIDIA MPS: one control daemon per shared GPU for the run (or the job's own MPS); implies --share-gpus")
	fs.IntVar(&m.threads, "mps-threads", 0, "--mps: each instance's active thread percentage of its GPU, 1..100 (default: an even share, rounded up)")
	fs.StringVar(&m.memLimit, "mps-mem-limit", "", "--mps: the device memory each instance may pin, 512M or 10G (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)")
}

// check refuses --mps's settings without --mps, and values MPS would not
// take.
func (m mpsFlags) check(fs *pflag.FlagSet) error {
	for _, name := range []string{"mps-threads", "mps-mem-limit"} {
		if fs.Changed(name) && !m.on {
			return usagef("--%s only means something with --mps: add --mps (NVIDIA MPS), or drop --%s", name, name)
		}
	}
	if fs.Changed("mps-threads") {
		if err := mps.CheckThreads(m.threads); err != nil {
			return usageError{err}
		}
	}
	if m.memLimit != "" {
		if err := mps.CheckMemLimit(m.memLimit); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// mpsRun is how a run has MPS, decided before anything starts: the job's
// own (existing), or daemons gpulaunch starts (control).
type mpsRun struct {
	flags    mpsFlags
	shares   []mps.Share
	existing *mps.Existing
	// control is nvidia-cuda-mps-control's path, for daemons of the run.
	control string
	// parent is the private directory the run's own directory is made in.
	parent string
	// wait is how long a daemon has to come up.
	wait time.Duration
}

// checkMPS decides a run's MPS from its plan, or refuses it, before
// anything starts: the plan must suit MPS (mps.Check), and either the job
// has an MPS (mps.FindExisting) or gpulaunch can start its own — the
// control program is there, and the directory its pipes go in is private
// and short enough for a Unix socket. nil without --mps.
// ctx ends at a signal to gpulaunch: asking the job's MPS is given up.
func (a *app) checkMPS(ctx context.Context, o *runOptions, l *launch) (*mpsRun, error) {
	m := o.shape.mps
	if !m.on {
		return nil, nil
	}
	if err := mps.Check(l.plan, l.alloc.Vendor); err != nil {
		return nil, usagef("%v; nothing was started", err)
	}
	r := &mpsRun{flags: m, shares: mps.Shares(l.plan), wait: mpsWait}
	if v := a.env["GPULAUNCH_MPS_WAIT"]; v != "" {
		var err error
		if r.wait, err = time.ParseDuration(v); err != nil || r.wait <= 0 {
			return nil, usagef("GPULAUNCH_MPS_WAIT=%s: how long an MPS daemon has to come up is a duration, e.g. 300s; nothing was started", v)
		}
	}
	control, lookErr := lookPath("nvidia-cuda-mps-control", a.env["PATH"])
	answers := func(dir string) bool { return lookErr == nil && mps.Answers(ctx, control, dir, a.baseEnv()) }
	if r.existing = mps.FindExisting(a.env, answers); r.existing != nil {
		return r, nil
	}
	if lookErr != nil {
		return nil, usagef("--mps: nvidia-cuda-mps-control is not on PATH, and the job has no MPS of its own (no CUDA_MPS_* set, no daemon at %s): load the CUDA module or install NVIDIA's nvidia-cuda-mps package; nothing was started", mps.DefaultPipeDir)
	}
	r.control, r.parent = control, a.socketDirs()[0]
	if _, err := os.Lstat(r.parent); err == nil {
		if err := privatedir.Check(r.parent, a.uid, "set TMPDIR to a directory of yours"); err != nil {
			return nil, usagef("--mps: the MPS pipe directories would go in %s, which is not private: %v; nothing was started", r.parent, err)
		}
	}
	// pipe/control, under DIR/mps-XXXXXXXXXX/K/: a Unix socket's path has
	// 108 bytes at most
	if n := len(filepath.Join(r.parent, "mps-0123456789", strconv.Itoa(len(r.shares)), "pipe", "control")); n > 100 {
		return nil, usagef("--mps: the MPS pipe directories would go in %s, whose paths (%d bytes) are too long for MPS's Unix sockets: set TMPDIR (or XDG_RUNTIME_DIR) to a shorter directory; nothing was started", r.parent, n)
	}
	return r, nil
}

// start starts the run's daemons, one per shared GPU (none under the
// job's own MPS), and tells each instance its GPU's: it returns the
// daemons, nil under the job's MPS. A signal to gpulaunch while they
// start (wait's) gives the start up: the error wraps launcher.StoppedBy.
func (r *mpsRun) start(a *app, insts []launcher.Instance, log *zap.Logger, wait *launcher.Waiting) (*mps.Daemons, error) {
	var d *mps.Daemons
	if r.existing == nil {
		if err := os.MkdirAll(r.parent, 0o700); err != nil {
			return nil, fmt.Errorf("--mps: %w", err)
		}
		removeStaleMPSDirs(r.parent)
		dir, err := os.MkdirTemp(r.parent, "mps-"+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return nil, fmt.Errorf("--mps: %w", err)
		}
		var gpus, indices []string
		for _, s := range mps.SharedGPUs(r.shares) {
			gpus, indices = append(gpus, s.GPU.UUID), append(indices, strconv.Itoa(s.GPU.Index))
		}
		log.Info(fmt.Sprintf("MPS: waiting up to %s for %d control daemon(s) to come up (GPULAUNCH_MPS_WAIT sets how long)", r.wait, len(gpus)))
		if d, err = mps.Start(wait.Context(), mps.Config{Control: r.control, Dir: dir, GPUs: gpus, Env: a.baseEnv(), Wait: r.wait, Hurry: wait.Hurry()}); err != nil {
			return nil, fmt.Errorf("%w; nothing was started", err)
		}
		log.Info(fmt.Sprintf("MPS: %d control daemon(s) up, one per shared GPU (GPU %s), in %s", len(gpus), strings.Join(indices, ", "), dir))
		if alone := r.alone(); alone != "" {
			log.Info(fmt.Sprintf("MPS: instance(s) %s have a GPU each to themselves: no daemon, no MPS variables", alone))
		}
	} else {
		log.Info(fmt.Sprintf("MPS: using the job's own, at %s (from %s)", r.existing.PipeDir, r.existing.From))
	}
	r.tell(insts, d)
	return d, nil
}

// mpsWait is how long a daemon has to come up, unless
// GPULAUNCH_MPS_WAIT says: CSCS's wrapper waits 120 s for the pid file on
// a loaded node.
const mpsWait = 120 * time.Second

// removeStaleMPSDirs removes what a gpulaunch that was SIGKILLed left in
// parent: its daemons died with it (their keepers ended them), but
// nothing removed their directories. A directory names its gpulaunch's
// pid (mps-PID-*); one whose gpulaunch no longer runs is stale.
func removeStaleMPSDirs(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "mps-*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.Split(filepath.Base(d), "-")[1])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			_ = os.RemoveAll(d)
		}
	}
}

// alone lists the instances alone on their GPUs: "1,2,3"; "" when none
// is.
func (r *mpsRun) alone() string {
	var ids []string
	for _, s := range r.shares {
		if len(s.Slots) == 1 {
			ids = append(ids, strconv.Itoa(s.Slots[0]))
		}
	}
	return strings.Join(ids, ",")
}

// tell adds each instance's MPS variables to its environment: its GPU's
// daemon's, or the job's MPS's. An instance alone on its GPU has no
// daemon of the run's, and is told nothing (mps.SharedGPUs).
func (r *mpsRun) tell(insts []launcher.Instance, d *mps.Daemons) {
	for _, s := range r.shares {
		threads := mps.Threads(r.flags.threads, len(s.Slots))
		if r.existing != nil && r.flags.threads == 0 {
			threads = 0 // the job's MPS has its own shares (gres/mps)
		}
		pipe, logDir := "", ""
		if d != nil {
			dm := d.Of(s.GPU.UUID)
			if dm == nil {
				continue
			}
			pipe, logDir = dm.PipeDir, dm.LogDir
		}
		for _, i := range s.Slots {
			insts[i].Env = append(insts[i].Env, mps.ClientEnv(pipe, logDir, threads, r.flags.memLimit)...)
		}
	}
}

// stopMPS stops the run's daemons, whatever way the run ended. It waits
// up to 10 s for them to quit; INT, TERM, HUP or QUIT to gpulaunch
// meanwhile ends them at once (the run's status stands: README,
// "Signals", 8).
func stopMPS(d *mps.Daemons, log *zap.Logger) {
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

// sharing is how a plan's instances share GPUs, for the plan, the
// summary and the report: under MPS, or taking turns (--share-gpus); nil
// when no GPU is shared.
type sharing struct {
	Mode string      `json:"mode"` // "mps" or "turns"
	GPUs []sharedGPU `json:"gpus"`
}

type sharedGPU struct {
	GPU       string `json:"gpu"`
	Index     int    `json:"index"`
	Instances []int  `json:"instances"`
	// Threads is each instance's active thread percentage under MPS; 0
	// when it is the job's MPS's own.
	Threads int `json:"active_thread_percentage,omitempty"`
}

// planSharing is the sharing that `plan` and --dry-run show, the plan
// refused as a run would refuse it under --mps.
func planSharing(p binding.Plan, vendor gpu.Vendor, m mpsFlags) (*sharing, error) {
	if m.on {
		if err := mps.Check(p, vendor); err != nil {
			return nil, usageError{err}
		}
	}
	return sharingOf(p, m, false), nil
}

func sharingOf(p binding.Plan, m mpsFlags, jobsMPS bool) *sharing {
	shares := mps.Shares(p)
	if !mps.Shared(shares) {
		return nil
	}
	s := &sharing{Mode: "turns"}
	if m.on {
		s.Mode = "mps"
	}
	for _, sh := range shares {
		if len(sh.Slots) < 2 {
			continue
		}
		g := sharedGPU{GPU: sh.GPU.UUID, Index: sh.GPU.Index, Instances: sh.Slots}
		if m.on && !(jobsMPS && m.threads == 0) {
			g.Threads = mps.Threads(m.threads, len(sh.Slots))
		}
		s.GPUs = append(s.GPUs, g)
	}
	return s
}

// write prints the sharing under a plan or a summary.
func (s *sharing) write(w io.Writer) {
	for _, line := range s.lines() {
		fmt.Fprintf(w, "Sharing:   %s\n", line)
	}
	if s != nil {
		// NVML's utilisation is the device's (nvmlDeviceGetUtilizationRates):
		// it cannot tell a shared GPU's instances apart, MPS or not; its
		// process list can, and under MPS lists each client (type M+C)
		// with the memory it holds.
		fmt.Fprintln(w, "Sharing:   GPU% of a shared GPU is the GPU's, the same for each of its instances (NVML measures a device, not a client); GPU MEM is each instance's own processes'")
	}
}

// lines are the sharing, a line per shared GPU: "GPU 0 (GPU-1a2b…):
// instances 0,4 under MPS, 50% of its SMs each"; none when s is nil.
func (s *sharing) lines() []string {
	if s == nil {
		return nil
	}
	var out []string
	how := map[string]string{"mps": "under MPS", "turns": "taking turns (time slicing; --mps to share it through MPS)"}[s.Mode]
	for _, g := range s.GPUs {
		ids := make([]string, len(g.Instances))
		for i, n := range g.Instances {
			ids[i] = strconv.Itoa(n)
		}
		share := ""
		if g.Threads > 0 {
			share = fmt.Sprintf(", %d%% of its SMs each", g.Threads)
		}
		out = append(out, fmt.Sprintf("GPU %d (%s): instances %s %s%s", g.Index, table.ShortUUID(g.GPU), strings.Join(ids, ","), how, share))
	}
	return out
}

// mpsInfo is what `info` says of MPS here: the job's own, or whether
// --mps could start daemons of its own.
type mpsInfo struct {
	// Control is nvidia-cuda-mps-control's path; "" when not on PATH.
	Control string `json:"control,omitempty"`
	// JobsPipeDir is where the job's own MPS answers; "" when it has none.
	JobsPipeDir string `json:"jobs_pipe_directory,omitempty"`
	Says        string `json:"says"`
}

func (a *app) mpsInfo() *mpsInfo {
	control, lookErr := lookPath("nvidia-cuda-mps-control", a.env["PATH"])
	m := &mpsInfo{}
	if lookErr == nil {
		m.Control = control
	}
	answers := func(dir string) bool {
		return lookErr == nil && mps.Answers(context.Background(), control, dir, a.baseEnv())
	}
	switch e := mps.FindExisting(a.env, answers); {
	case e != nil:
		m.JobsPipeDir = e.PipeDir
		m.Says = fmt.Sprintf("the job's own at %s (from %s): --mps uses it", e.PipeDir, e.From)
	case lookErr == nil:
		m.Says = control + ": --mps starts one control daemon per shared GPU"
	default:
		m.Says = "nvidia-cuda-mps-control is not on PATH: --mps needs it (load the CUDA module, or NVIDIA's nvidia-cuda-mps package)"
	}
	return m
}
