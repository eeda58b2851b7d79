package binding

import (
	"fmt"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// GPUsBoundPerRank reports whether the launcher already gave this rank GPUs
// of its own: inside a Slurm step that holds more GPUs on this node than
// this task sees (srun --gpus-per-task, --gpu-bind=single or map_gpu).
func (a Allocation) GPUsBoundPerRank() bool {
	s := a.Sched
	return s.InStep() && len(a.GPUs) > 0 && s.GPUsOnNode > len(a.GPUs)
}

// RanksHere is how many ranks the launcher started on this node and the
// variable that said so; 1 and "no launcher" without one (RankSlot's
// rule 4).
func (a Allocation) RanksHere() (size int, source string) {
	size, source = 1, "no launcher"
	if lr := a.LocalRank; lr != nil {
		source = lr.Source
		if lr.Size > 0 {
			size = lr.Size
		}
	}
	return size, source
}

// OneRankOfSeveral says whether a gpulaunch asked for r (auto: without
// -n) is one rank of several that a launcher started on this node (srun
// -n 4, mpirun -np 8), which binds itself and execs the app:
//
//  1. Without a local size above 1 it is no rank: it runs its instances.
//  2. Without -n it is a rank.
//  3. With -n, a rank with GPUs of its own (GPUsBoundPerRank: srun
//     --gpus-per-task), enough for its -n × -G, fans out over them as a
//     run.
//  4. Any other -n is refused (`srun -n 4 gpulaunch -n 4`): every rank
//     would start its N instances on the same GPUs.
func OneRankOfSeveral(a Allocation, r Request, auto bool) (bool, error) {
	lr := a.LocalRank
	switch {
	case lr == nil || lr.Size <= 1:
		return false, nil
	case auto:
		return true, nil
	case a.GPUsBoundPerRank() && len(a.GPUs) >= r.Instances*r.GPUsPerInstance:
		return false, nil
	}
	n := r.Instances
	return false, fmt.Errorf("-n %d in each of the %d ranks this launcher started on this node (%s) would start %d instances on the same GPUs: %s, or drop -n so that each rank binds itself to its own GPU and execs the app (rank mode)",
		n, lr.Size, lr.Source, n*lr.Size, sched.ManyLaunchersFix(a.Sched, *lr, n))
}

// RankSlot is the slot of one rank that a launcher (srun, mpirun, hydra)
// started beside others on this node: the rank-wrapper mode. Ranks do not
// talk to each other, so each must derive the same division from what all
// of them see.
//
//  1. When the launcher already gave this rank its own GPUs
//     (GPUsBoundPerRank), the rank keeps them and, within the CPUs the
//     launcher left it, takes the ones local to those GPUs: a one-slot plan
//     over its own allocation. G, when given, must not exceed what it sees.
//  2. Otherwise every rank of the node sees the same GPUs, and the CPUs they
//     share are the step's: the cgroup cpuset when one applies, since
//     launchers bind each rank's affinity differently (srun's task/affinity,
//     OpenMPI's --bind-to core); without a cgroup, this rank's affinity,
//     which equals its peers' unless the launcher bound it.
//  3. Over that common view the node is planned for all local ranks with
//     NewPlan, and rank r takes slot r. G defaults to an even share of the
//     GPUs (at least one); more ranks than GPUs needs --share-gpus or G=0,
//     as in a run.
//  4. Without a local size (`gpulaunch exec` with no launcher, or a
//     launcher variable without its size) the process is a node's only
//     rank; a local rank above 0 without a size is an error. Flux's local
//     size is derived (sched's fluxLocalSize).
//  5. A node too small for the ranks is said in rank mode's words
//     (rankShortage): the launcher decided the count, so the fix is fewer
//     GPUs or CPUs per rank, or fewer ranks per node from the launcher —
//     never run's -n.
//
// gpusGiven says whether r.GPUsPerInstance was set by the user.
func RankSlot(a Allocation, r Request, gpusGiven bool) (Slot, []string, error) {
	rank, size := 0, 1
	if lr := a.LocalRank; lr != nil && lr.Size > 0 {
		rank, size = lr.Rank, lr.Size
	} else if lr != nil && lr.Rank > 0 {
		// rule 4 holds for the only rank; a later one with no count of
		// its peers would take the whole node beside them
		return Slot{}, nil, fmt.Errorf("%s=%d, but the launcher does not say how many ranks share this node, so gpulaunch cannot give this one its share: use a launcher that does (srun, mpirun, mpiexec, flux run)", lr.Source, lr.Rank)
	}
	r.Instances = size
	// The launcher decided how many ranks run here: sharing CPUs among
	// them is its choice (mpirun --oversubscribe), not gpulaunch's to refuse.
	r.Overcommit = true
	if a.GPUsBoundPerRank() && size > 1 {
		if gpusGiven && r.GPUsPerInstance > len(a.GPUs) {
			return Slot{}, nil, fmt.Errorf("-G %d: the launcher gave this rank %d GPU(s)", r.GPUsPerInstance, len(a.GPUs))
		}
		if !gpusGiven {
			r.GPUsPerInstance = len(a.GPUs)
		}
		r.Instances = 1
		if err := rankShortage(a, r, 1); err != nil {
			return Slot{}, nil, err
		}
		p, err := NewPlan(a, r)
		if err != nil {
			return Slot{}, nil, err
		}
		s := p.Slots[0]
		s.Index = rank
		return s, p.Warnings, nil
	}
	if !a.StepCPUs.IsEmpty() {
		a.CPUs = a.StepCPUs
	}
	if !gpusGiven {
		r.GPUsPerInstance = max(1, len(a.GPUs)/size)
		if len(a.GPUs) == 0 {
			return Slot{}, nil, fmt.Errorf("the allocation has no GPU (%s): give -G 0 to bind this rank's CPUs only", a.GPUReason)
		}
	}
	if err := rankShortage(a, r, size); err != nil {
		return Slot{}, nil, err
	}
	p, err := NewPlan(a, r)
	if err != nil {
		return Slot{}, nil, fmt.Errorf("%d rank(s) on this node: %w", size, err)
	}
	return p.Slots[rank], p.Warnings, nil
}

// rankShortage implements rule 5: the GPUs or CPUs that size ranks of r
// need and the allocation lacks, in a rank's words; nil when they fit.
func rankShortage(a Allocation, r Request, size int) error {
	const fewerRanks = "start fewer ranks per node (srun --ntasks-per-node=K, mpirun --map-by ppr:K:node)"
	g, c := r.GPUsPerInstance, r.CPUsPerInstance
	if g > 0 && (len(a.GPUs) < g || (!r.ShareGPUs && len(a.GPUs) < g*size)) {
		fix := "give each rank fewer with -G, " + fewerRanks + ", or --share-gpus to let ranks take turns on GPUs"
		if len(a.GPUs) == 0 {
			fix = "give -G 0 to bind each rank's CPUs only"
			if a.NoGPUFix != "" {
				fix += "; " + a.NoGPUFix
			}
		}
		return fmt.Errorf("-G %d for each of the %d rank(s) on this node needs %d GPU(s), the allocation has %d: %s. %s",
			g, size, max(g*size, g), len(a.GPUs), a.GPUReason, fix)
	}
	if c > 0 && c*size > a.CPUs.Size() {
		return fmt.Errorf("-c %d for each of the %d rank(s) on this node needs %d CPUs, the allocation has %d (%s): give each rank fewer with -c, leave -c out for an even share, or %s",
			c, size, c*size, a.CPUs.Size(), a.CPUs, fewerRanks)
	}
	return nil
}
