package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/discover"
	"github.com/gpulaunch/gpulaunch/pkg/flagvalue"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

const execUsage = `Usage: gpulaunch exec [flags] [--] COMMAND [ARGS…]

Rank-wrapper mode, for launchers that start one process per rank (srun -n,
mpirun, mpiexec): binds this rank to its slot of the node — its GPU(s), the
CPUs local to them and a memory policy — sets its environment and execs
COMMAND, so no gpulaunch process stays between the launcher and the app.

Ranks agree without talking: each plans the whole node from what all of them
see and takes the slot of its local rank (OMPI_COMM_WORLD_LOCAL_RANK,
MPI_LOCALRANKID, SLURM_LOCALID in an srun step, …). When the launcher already
gave each rank its own GPUs (srun --gpus-per-task), the rank keeps them.
RANK and WORLD_SIZE are the launcher's global ones; --ddp adds MASTER_ADDR,
MASTER_PORT and TORCHELASTIC_RUN_ID (docs/multinode.md).

Without -n, gpulaunch switches to this mode by itself when such variables show
several ranks on this node.

Examples:
  srun -n 4 gpulaunch -- ./app                  # one GPU per rank
  mpirun -np 8 gpulaunch -- ./app
  srun -N 2 --ntasks-per-node=4 gpulaunch --ddp -- python train.py
  mpiexec -n 2 gpulaunch exec -G 2 -- ./app     # two GPUs per rank`

// execFlags are the flags rank mode understands.
type execFlags struct {
	shape      planFlags // -G, -c, --mem-bind, --share-gpus; no -n
	gpuIDs     string
	visibility string
	dryRun     bool
	ddp        ddpFlags
}

func (e *execFlags) register(fs *pflag.FlagSet) {
	e.ddp.register(fs)
	e.shape.registerShape(fs, "rank", 0, "GPUs per rank (default: an even share of the node's GPUs)")
	fs.StringVar(&e.gpuIDs, "gpu-ids", "uuid", "how CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES names GPUs: uuid, or index (Intel's ZE_AFFINITY_MASK takes ordinals only)")
	fs.StringVar(&e.visibility, "gpu-visibility", "own", "own: the rank sees its GPUs only; all: every GPU, its own first")
	fs.BoolVar(&e.dryRun, "dry-run", false, "print this rank's slot and environment, exec nothing")
}

func (a *app) exec(args []string) error {
	var c commonFlags
	var e execFlags
	fs := execFlagSet(&c, &e)
	if done, err := a.parseFlags(fs, args, execUsage); done || err != nil {
		if n, ok := flagvalue.Given(args, "-n", "--ntasks"); ok { // run's flag, which rank mode has not
			v := cmp.Or(flagvalue.GivenValue(n, "-n", "--ntasks"), "N")
			return usagef("exec %s: rank mode takes no -n: the launcher sets how many ranks there are (srun -n %s gpulaunch exec …, mpirun -np %s gpulaunch exec …); to start %s instances from one gpulaunch use `gpulaunch run -n %s -- COMMAND`",
				n, v, v, v, v)
		}
		return err
	}
	if len(fs.Args()) == 0 && !e.dryRun {
		return usagef("no command to exec: gpulaunch exec -- COMMAND [ARGS…]")
	}
	if err := e.ddp.check(fs, false); err != nil {
		return err
	}
	if c.simulate != "" {
		return usagef("exec binds this process on this machine; --simulate describes another one (try `gpulaunch plan --simulate %s -n RANKS`)", c.simulate)
	}
	if _, err := e.shape.request(fs, false); err != nil {
		return err
	}
	noGPU := fs.Changed("gpus-per-task") && e.shape.gpus == 0
	need := discover.Need(a.env, noGPU, e.visibility == string(instance.VisibleAll), true)
	return rankOf(a, c, need).exec(c, e, fs.Changed("gpus-per-task"), fs.Args(), nil)
}

func execFlagSet(c *commonFlags, e *execFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("exec", pflag.ContinueOnError)
	fs.SetInterspersed(false)
	c.registerNode(fs) // no --json: rank mode prints nothing but --dry-run's lines
	c.registerLog(fs)
	e.register(fs)
	return fs
}

// rankMode is gpulaunch as one rank of a launcher's (exec, and run when
// it finds itself one of several ranks): what it reads of this process.
type rankMode struct {
	stdout, stderr io.Writer
	env            sched.Env
	hostname       string
	pid            int
	// node is how this rank's node is discovered when the caller has not
	// (NVML only where binding needs it: discover.Need).
	node discover.Request
}

// rankOf is rank mode for app a with the node flags c, needing need of
// NVIDIA's GPUs.
func rankOf(a *app, c commonFlags, need gpu.Need) rankMode {
	return rankMode{a.stdout, a.stderr, a.env, a.hostname, a.pid, a.discoverRequest(c, need)}
}

// exec binds this rank and execs argv. alloc is reused when the caller
// (run, switching to rank mode) has discovered it already.
func (rm rankMode) exec(c commonFlags, e execFlags, gpusGiven bool, argv []string, alloc *binding.Allocation) error {
	log, err := c.loggerAt(rm.stderr, zap.WarnLevel)
	if err != nil {
		return err
	}
	ids, vis, err := instance.ParseGPUNaming(e.gpuIDs, e.visibility)
	if err != nil {
		return usageError{err}
	}
	req, err := e.shape.request(nil, false)
	if err != nil {
		return err
	}
	if err := checkArgv(argv); err != nil {
		return err
	}
	var path string
	if len(argv) > 0 {
		if path, err = lookPath(argv[0], rm.env["PATH"]); err != nil {
			return err
		}
	}
	if alloc == nil {
		// The backend stays open: the process is replaced by the exec, or
		// ends, right after, and NVML's shutdown would cost it ~10 ms for
		// nothing (gpu-h200.md).
		al, _, err := discover.Open(rm.node, "")
		if err != nil {
			return discoverError(err)
		}
		alloc = &al
	}
	slot, warnings, err := binding.RankSlot(*alloc, req, gpusGiven)
	if err != nil {
		return usageError{err}
	}
	size, source := alloc.RanksHere()
	group, ranks, err := nodegroup.OfRank(rm.env, alloc.Sched, rm.hostname, size, slot.Index)
	if err != nil {
		return usageError{err}
	}
	rdv, err := e.ddp.rendezvous(rm.env, rm.pid, alloc.Sched, group, ranks.Rank == 0)
	if err != nil {
		return err
	}
	env, err := instance.Env(rm.env.List(), slot, ranks, instance.OptionsFor(*alloc, ids, vis, rdv))
	if err != nil {
		return usageError{err}
	}
	// Every rank computes the same plan, so the same warnings: rank 0
	// says them once for the node.
	for _, w := range warnings {
		if slot.Index == 0 {
			log.Warn(w)
		} else {
			log.Debug(w)
		}
	}
	for _, w := range alloc.Warnings {
		log.Debug(w)
	}
	var gpus []string
	for _, g := range slot.GPUs {
		gpus = append(gpus, g.Address())
	}
	log.Debug(fmt.Sprintf("rank %d of %d on this node (%s): GPUs %s, CPUs %s, memory %s %s",
		slot.Index, size, source, strings.Join(gpus, ","), slot.CPUs, slot.MemPolicy, slot.MemNodes),
		zap.Int("local_rank", slot.Index), zap.Int("local_size", size), zap.String("source", source))
	if e.dryRun {
		fmt.Fprintf(rm.stdout, "rank %d of %d on this node (%s)\nGPUs: %s\nCPUs: %s\nmemory: %s %s\n",
			slot.Index, size, source, strings.Join(gpus, ","), slot.CPUs, slot.MemPolicy, slot.MemNodes)
		for _, kv := range env {
			if k, _, _ := strings.Cut(kv, "="); instance.IsContract(k) {
				fmt.Fprintln(rm.stdout, kv)
			}
		}
		return nil
	}
	if err := process.Exec(process.BindingOf(slot), path, argv, env); err != nil {
		return commandError{126, err.Error() + ": nothing was started"}
	}
	return nil
}
