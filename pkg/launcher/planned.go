package launcher

import (
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// Planned is this node's part of a launch as decided before anything
// starts: its plan's slots and what every instance is told besides its
// slot.
type Planned struct {
	Slots []binding.Slot
	Group nodegroup.NodeGroup // the numbers of each slot's ranks
	// Base is the environment every instance starts from, Env how its
	// GPUs, ranks and rendezvous are told (instance.Env).
	Base []string
	Env  instance.EnvOptions
	Path string   // COMMAND resolved; "" for a task queue
	Argv []string // COMMAND [ARGS…]
	// Bind: the slots' CPUs are this machine's, so binding is applied.
	Bind bool
	// Stdout and Stderr are -o's and -e's patterns; "": gpulaunch's own.
	Stdout, Stderr string
	Names          instance.Names // what those patterns expand to
}

// Instances are the slots made ready to start, each with
//
//  1. its environment (instance.Env) and RANK from its slot's ranks; a
//     user's TORCHELASTIC_SIGNALS_TO_HANDLE may name only signals the
//     run passes on (ForwardedNames);
//  2. its command, %t expanded to its index (instance.ExpandArgs);
//  3. its CPU and memory binding, only where Bind says the slot's CPUs
//     are this machine's;
//  4. its GPUs (PCI addresses) and CPUs as the logs and the board show
//     them, and its GPUs' UUIDs for telemetry;
//  5. its output files, the patterns expanded for its index.
func (p Planned) Instances() ([]Instance, error) {
	var insts []Instance
	opts := p.Env
	opts.Forwarded = ForwardedNames() // what a user's TORCHELASTIC_SIGNALS_TO_HANDLE may name
	for _, s := range p.Slots {
		ranks := p.Group.Ranks(s.Index)
		env, err := instance.Env(p.Base, s, ranks, opts)
		if err != nil {
			return nil, err
		}
		inst := Instance{Index: s.Index, Rank: ranks.Rank, Path: p.Path, Args: instance.ExpandArgs(p.Argv, s.Index), Env: env}
		if p.Bind {
			inst.Binding = process.BindingOf(s)
		}
		var gpus []string
		for _, g := range s.GPUs {
			gpus = append(gpus, g.Address())
			inst.GPUUUIDs = append(inst.GPUUUIDs, g.UUID)
		}
		inst.GPUs, inst.CPUs = strings.Join(gpus, ","), s.CPUs.String()
		if p.Stdout != "" {
			inst.Stdout, _ = instance.ExpandPattern(p.Stdout, s.Index, p.Names)
		}
		if p.Stderr != "" {
			inst.Stderr, _ = instance.ExpandPattern(p.Stderr, s.Index, p.Names)
		}
		insts = append(insts, inst)
	}
	return insts, nil
}

// StartWarnings are what the user should know before the instances of a
// plan on alloc start (gpusPerInstance: -G; bind: the binding is
// applied), in this order:
//
//  1. the allocation's warnings (which are about its GPUs), only when the
//     instances get GPUs, then the plan's compromises;
//  2. a gpulaunch (pid, child of ppid) that the batch script forked
//     rather than exec'd: on scancel or the time limit Slurm sends TERM
//     to the batch shell only, which dies without passing it on;
//  3. a simulated node, whose binding is told but not applied.
func StartWarnings(alloc binding.Allocation, plan binding.Plan, gpusPerInstance, pid, ppid int, bind bool) []string {
	var warnings []string // a list of its own: the plan's stays as it is
	if gpusPerInstance > 0 {
		warnings = append(warnings, alloc.Warnings...)
	}
	warnings = append(warnings, plan.Warnings...)
	if alloc.Sched.ChildOfBatchShell(pid, ppid) {
		warnings = append(warnings, "gpulaunch runs as a child of the batch script: on scancel or the time limit Slurm sends TERM to the batch shell only, which dies without passing it on, and the instances are then killed without warning; start it with `exec gpulaunch …` (or under srun) so that they get the TERM")
	}
	if !bind {
		warnings = append(warnings, "simulated node: each instance is told its planned GPUs and CPUs, but CPU and memory binding are not applied (this machine does not have the simulated node's CPUs)")
	}
	return warnings
}
