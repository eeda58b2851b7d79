package main

import (
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// mpsFlags are --mps and its settings (run and plan: the flags with -n).
type mpsFlags struct {
	on       bool
	threads  int
	memLimit string
}

func (m *mpsFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&m.on, "mps", false, "share GPUs through NVIDIA MPS: one control daemon per shared GPU for the run (or the job's own MPS); implies --share-gpus; one client's fault fails its GPU's clients: gpulaunch names the cause")
	fs.IntVar(&m.threads, "mps-threads", 0, "--mps: each instance's active thread percentage of its GPU, 1..100 (default: an even share, rounded up)")
	fs.StringVar(&m.memLimit, "mps-mem-limit", "", "--mps: the device memory each instance may pin, 512M or 10G (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)")
}

// check refuses --mps's settings without --mps, and values MPS would not
// take (mps.Settings.Check).
func (m mpsFlags) check(fs *pflag.FlagSet) error {
	if err := m.settings().Check(fs.Changed); err != nil {
		return usageError{err}
	}
	return nil
}

func (m mpsFlags) settings() mps.Settings {
	return mps.Settings{On: m.on, Threads: m.threads, MemLimit: m.memLimit}
}

// mpsNode is what the node offers a run's MPS (mps.Prepare): its control
// program and directories, and the driver's CUDA version, which the
// client limit reads (mps.ClientLimit).
func (a *app) mpsNode(alloc binding.Allocation) mps.Node {
	n := mps.NodeOf(a.env, controlOf(a).dirs()[0], a.uid)
	n.CUDAVersion = alloc.CUDAVersion
	return n
}

// startMPS starts the run's daemons (none under the job's own MPS) and
// tells each instance its GPU's. A signal to gpulaunch while they start
// (wait's) gives the start up: the error wraps launcher.StoppedBy.
func startMPS(r *mps.Run, insts []launcher.Instance, log *zap.Logger, wait *launcher.Waiting) (*mps.Daemons, error) {
	d, err := r.Start(wait.Context(), wait.Hurry(), log)
	if err != nil {
		return nil, err
	}
	for slot, env := range r.ClientEnvs(d) {
		insts[slot].Env = append(insts[slot].Env, env...)
	}
	return d, nil
}

// planSharing is the sharing that `plan` and --dry-run show, refused as a
// run under --mps would be (exit 2): its client limit read from the
// allocation's driver and the environment the instances inherit.
func planSharing(p binding.Plan, alloc binding.Allocation, env sched.Env, m mpsFlags) (*mps.Sharing, error) {
	s, err := mps.PlanSharing(p, alloc.Vendor, m.settings(), mps.Host{CUDAVersion: alloc.CUDAVersion, Env: env})
	if err != nil {
		return nil, usageError{err}
	}
	return s, nil
}
