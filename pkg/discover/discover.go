package discover

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Request names the node whose GPUs are used and this process's view of
// it.
type Request struct {
	// Simulate, NodeFile and Vendor are --simulate, --node-file and
	// --gpu-vendor ("" when not given).
	Simulate, NodeFile, Vendor string
	Env                        sched.Env
	Hostname                   string
	// Machine is how this machine is opened: its Root, ProbeDevice and
	// NVML (the other fields are set from the request).
	Machine gpu.Options
	// Need is what the caller needs of NVIDIA's GPUs (Need's rules),
	// which decides whether NVML is loaded.
	Need gpu.Need
}

// InputError is bad input in the flags or the environment that name the
// node: nothing was started.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }
func (e InputError) Unwrap() error { return e.Err }

func inputf(format string, args ...any) error { return InputError{fmt.Errorf(format, args...)} }

// Allocation opens the backend and reconciles the allocation, and closes
// the backend.
func Allocation(r Request) (binding.Allocation, error) {
	alloc, src, err := Open(r, "")
	if src != nil {
		src.Close()
	}
	return alloc, err
}

// Found is what discovery found to run on: the allocation, the open GPU
// backend (for telemetry) and, on a simulated node, the directory where
// its apps declare their GPU use (gpu.SimulatedUsageEnv). Done closes the
// backend and removes the directory.
type Found struct {
	Alloc    binding.Allocation
	Source   gpu.Source
	UsageDir string
	Done     func()
}

// ForRun discovers the allocation for runs that will start (running): on
// a simulated node the usage directory is made here.
func ForRun(r Request, running bool) (Found, error) {
	var f Found
	var err error
	if r.Simulate != "" && running {
		if f.UsageDir, err = os.MkdirTemp("", "gpulaunch-usage-"); err != nil {
			return Found{}, err
		}
	}
	removeDir := func() {
		if f.UsageDir != "" {
			os.RemoveAll(f.UsageDir)
		}
	}
	if f.Alloc, f.Source, err = Open(r, f.UsageDir); err != nil {
		removeDir()
		return Found{Alloc: f.Alloc}, err
	}
	src := f.Source
	f.Done = func() { src.Close(); removeDir() }
	return f, nil
}

// BindsWithoutNVML: a rank in this environment may be bound from the
// driver's /proc and sysfs (gpu.NeedBinding), unless its launcher named
// MIG devices, which only NVML knows.
func BindsWithoutNVML(env sched.Env) bool {
	return !gpu.NamesMIG(env["CUDA_VISIBLE_DEVICES"])
}

// MayBeRank: this gpulaunch may be one rank of several that a launcher
// started on this node (srun -n 4, mpirun -np 8), told from the
// environment before anything is discovered, so that a rank only binds
// (Need's rule 2):
//
//  1. only without -n (auto): with -n gpulaunch starts its instances;
//  2. never on a simulated node, which is not this one;
//  3. only where binding needs no NVML (BindsWithoutNVML);
//  4. and only where a launcher's variables show more than one rank on
//     this node (sched.DetectLocalRank).
func MayBeRank(env sched.Env, auto, simulated bool) bool {
	if !auto || simulated || !BindsWithoutNVML(env) {
		return false
	}
	job, _ := sched.Detect(env)
	lr, ok, err := sched.DetectLocalRank(env, job, binding.MaxInstances)
	return err == nil && ok && lr.Size > 1
}

// Need is what a command needs of this machine's NVIDIA GPUs, and so
// whether it loads NVML (gpu.Need), from what it was asked: noGPU, no
// instance is given a GPU (-G 0); seeAll, each instance is shown every
// GPU (--gpu-visibility all); rank, it only binds this process and execs
// (exec, or MayBeRank). NVML costs a process ~20 ms on the H200 (init
// and shutdown, gpu-h200.md), and where it is broken ("Driver/library
// version mismatch") it must not stop what does not need it. The rules,
// in order:
//  1. instances that see no GPU (noGPU without seeAll) need the GPUs
//     listed only (gpu.NeedList): the plan shows them, and the instances
//     are told no device in their vendor's way;
//  2. a rank needs what binding needs (gpu.NeedBinding), unless its
//     launcher named MIG devices (BindsWithoutNVML), which only NVML
//     names;
//  3. everything else — info, plan, a run whose instances see GPUs — needs
//     all NVML tells: names, memory, MIG devices, telemetry (gpu.NeedAll).
func Need(env sched.Env, noGPU, seeAll, rank bool) gpu.Need {
	switch {
	case noGPU && !seeAll:
		return gpu.NeedList
	case rank && BindsWithoutNVML(env):
		return gpu.NeedBinding
	}
	return gpu.NeedAll
}

// NVMLWait is how long NVML's start is waited for (gpu.Options.NVMLWait):
// GPULAUNCH_NVML_WAIT's value v, a positive duration (time.ParseDuration's);
// gpu.DefaultNVMLWait when it is unset.
func NVMLWait(v string) (time.Duration, error) {
	if v == "" {
		return gpu.DefaultNVMLWait, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, inputf("GPULAUNCH_NVML_WAIT=%s: how long gpulaunch waits for NVML to start is a duration, e.g. 30s (default %s); nothing was started", v, gpu.DefaultNVMLWait)
	}
	return d, nil
}

// Open also hands back the open backend, for telemetry; usageDir is where
// apps on a simulated node declare their GPU use.
//
//  1. The node file is --node-file, else GPULAUNCH_NODE_FILE, except with
//     --simulate, which is another machine; both flags are refused.
//  2. The vendor is Vendor's rule; the environment's vendor is this
//     machine's and does not apply to --simulate.
//  3. A backend that cannot open is said in the words of what named it.
//  4. This machine's NVML is waited for GPULAUNCH_NVML_WAIT (NVMLWait), a
//     bad value refused whenever this machine's GPUs are looked for.
func Open(r Request, usageDir string) (binding.Allocation, gpu.Source, error) {
	nodeFile := r.NodeFile
	if nodeFile == "" && r.Simulate == "" {
		nodeFile = r.Env["GPULAUNCH_NODE_FILE"]
	}
	if r.Simulate != "" && r.NodeFile != "" {
		return binding.Allocation{}, nil, inputf("--simulate and --node-file both describe the node: --simulate is another machine, --node-file this one; give one")
	}
	vendor, from, err := Vendor(r.Vendor, r.Env)
	if err != nil {
		return binding.Allocation{}, nil, err
	}
	if r.Simulate != "" && from != "--gpu-vendor" {
		// the environment's vendor is this machine's: --simulate is another
		vendor = ""
	}
	opts := r.Machine
	opts.Simulate, opts.NodeFile, opts.Vendor, opts.SimulatedUsage, opts.Need = r.Simulate, nodeFile, vendor, usageDir, r.Need
	if r.Simulate == "" && nodeFile == "" {
		if opts.NVMLWait, err = NVMLWait(r.Env["GPULAUNCH_NVML_WAIT"]); err != nil {
			return binding.Allocation{}, nil, err
		}
	}
	src, err := gpu.Open(opts)
	if err != nil {
		return binding.Allocation{}, nil, openError(r, nodeFile, vendor, from, err)
	}
	node, err := src.Inventory()
	if err != nil {
		src.Close()
		return binding.Allocation{}, nil, err
	}
	world, err := binding.ReadWorld(r.Machine.Root, node, r.Env, r.Hostname)
	if err != nil {
		src.Close()
		return binding.Allocation{}, nil, err
	}
	alloc, err := binding.Reconcile(world)
	if err != nil {
		src.Close()
		return binding.Allocation{}, nil, InputError{err}
	}
	return alloc, src, nil
}

// openError is Open's rule 3: the backend's error in the words of what
// named it.
func openError(r Request, nodeFile string, vendor gpu.Vendor, from string, err error) error {
	var other *gpu.OtherVendorError
	switch {
	case errors.As(err, &other) && from == "--gpu-vendor":
		return inputf("--gpu-vendor %s: %v; nothing was started", vendor, err)
	case errors.As(err, &other):
		return inputf("%s=%s: %v; nothing was started", from, vendor, err)
	case r.Simulate != "" && strings.Contains(err.Error(), r.Simulate):
		return inputf("--simulate: %v", err)
	case r.Simulate != "":
		return inputf("--simulate %s: %v", r.Simulate, err)
	case r.NodeFile != "":
		return inputf("--node-file: %v", err)
	case nodeFile != "":
		return inputf("GPULAUNCH_NODE_FILE=%s: %v", nodeFile, err)
	}
	return inputf("%v", err)
}

// Vendor is --gpu-vendor (flag), else GPULAUNCH_GPU_VENDOR: the only
// vendor whose GPUs are looked for ("": every vendor's), and where it was
// given.
func Vendor(flag string, env sched.Env) (v gpu.Vendor, from string, err error) {
	name, from := flag, "--gpu-vendor"
	if name == "" {
		name, from = env["GPULAUNCH_GPU_VENDOR"], "GPULAUNCH_GPU_VENDOR"
	}
	if name == "" {
		return "", "", nil
	}
	v, ok := gpu.ParseVendor(name)
	if !ok {
		return "", "", inputf("%s %q: use %s", from, name, gpu.VendorNames())
	}
	return v, from, nil
}
