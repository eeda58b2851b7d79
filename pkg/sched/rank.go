package sched

import (
	"fmt"
	"strconv"
	"strings"
)

// LocalRank is this process's rank among the ranks a launcher started on
// this node.
type LocalRank struct {
	Rank   int    `json:"rank"`
	Size   int    `json:"size"`   // 0 when the launcher does not say
	Source string `json:"source"` // the variable it came from
}

// GlobalRank is this process's rank among all ranks of the launch.
type GlobalRank struct {
	Rank   int    `json:"rank"`
	Size   int    `json:"size"`
	Source string `json:"source"`
}

// rankVars are a launcher's variables for a rank and its size; sizeOf,
// when set, derives the size where the launcher sets no variable for it
// (Flux's local size).
type rankVars struct {
	rank, size string
	sizeOf     func(Env) (int, error)
}

// localRankVars are read in this order: the most specific launcher
// first, the scheduler's own (srun's, StepLocalRank) last, because
// SLURM_* variables leak from the batch script into every rank mpirun
// starts. A launcher's variables count wherever they are set: PALS's
// mpiexec and `flux run` say a rank's place even outside the job whose
// scheduler Detect found.
var localRankVars = []rankVars{
	{rank: "OMPI_COMM_WORLD_LOCAL_RANK", size: "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{rank: "MV2_COMM_WORLD_LOCAL_RANK", size: "MV2_COMM_WORLD_LOCAL_SIZE"},
	{rank: "MPI_LOCALRANKID", size: "MPI_LOCALNRANKS"},
	palsLocalRank,
	{rank: "PMI_LOCAL_RANK", size: "PMI_LOCAL_SIZE"},
	fluxLocalRank,
	{rank: "JSM_NAMESPACE_LOCAL_RANK", size: "JSM_NAMESPACE_LOCAL_SIZE"},
}

// globalRankVars: as for local ranks, the most specific launcher first and
// the scheduler's own last, because SLURM_PROCID=0 leaks into every rank
// mpirun starts.
var globalRankVars = []rankVars{
	{rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE"},
	{rank: "MV2_COMM_WORLD_RANK", size: "MV2_COMM_WORLD_SIZE"},
	{rank: "PMI_RANK", size: "PMI_SIZE"},
	palsGlobalRank,
	fluxGlobalRank,
	{rank: "JSM_NAMESPACE_RANK", size: "JSM_NAMESPACE_SIZE"},
}

// DetectLocalRank finds the launcher's local rank. It returns ok=false when
// no launcher started this process as one of several ranks: in particular
// SLURM_LOCALID counts only inside an srun step (SLURM_STEP_ID set), since
// the batch script and everything it starts carry SLURM_LOCALID=0.
// A malformed or out-of-range value is an error: binding the wrong GPU
// silently is worse than stopping. maxRanks is the most ranks a node
// places (binding.MaxInstances).
func DetectLocalRank(env Env, a Allocation, maxRanks int) (LocalRank, bool, error) {
	for _, v := range localRankVars {
		val, ok := env[v.rank]
		if !ok {
			continue
		}
		lr := LocalRank{Source: v.rank}
		var err error
		if lr.Rank, err = strconv.Atoi(strings.TrimSpace(val)); err != nil || lr.Rank < 0 {
			return LocalRank{}, false, fmt.Errorf("%s=%q is not a local rank", v.rank, val)
		}
		if v.size != "" {
			if sv, ok := env[v.size]; ok {
				if lr.Size, err = strconv.Atoi(strings.TrimSpace(sv)); err != nil || lr.Size < 1 {
					return LocalRank{}, false, fmt.Errorf("%s=%q is not a local size", v.size, sv)
				}
			}
		}
		if v.sizeOf != nil {
			if lr.Size, err = v.sizeOf(env); err != nil {
				return LocalRank{}, false, err
			}
		}
		if lr.Size > 0 && lr.Rank >= lr.Size {
			return LocalRank{}, false, fmt.Errorf("%s=%d is not below %s=%d", v.rank, lr.Rank, v.size, lr.Size)
		}
		// every rank plans the node's ranks as instances (NewPlan's rule
		// 11): G × a size of 2^62 wrapped to a small count of GPUs
		if lr.Size > maxRanks {
			return LocalRank{}, false, fmt.Errorf("%s=%d: more ranks on one node than gpulaunch places (%d)", v.size, lr.Size, maxRanks)
		}
		return lr, true, nil
	}
	return a.rules().StepLocalRank(a, env, maxRanks)
}

// DetectGlobalRank finds the launcher's global rank and size, the
// scheduler's own launcher's last (SLURM_PROCID counts only inside an srun
// step, with SLURM_STEP_NUM_TASKS, or SLURM_NTASKS, as the size). A rank
// whose size no variable gives is no rank, except where the scheduler says
// this is not the launch's first node (PALS_RANKID=3 and PALS_NODEID=1,
// without PALS_SIZE or PMI_SIZE): that is an error, since the launch is
// then not this node's alone and nothing says how many ranks it has.
func DetectGlobalRank(env Env, a Allocation) (GlobalRank, bool, error) {
	sizeless := "" // a launcher's rank above 0 whose size is not set
	for _, v := range globalRankVars {
		val, ok := env[v.rank]
		if !ok {
			continue
		}
		size, sok := env[v.size]
		if !sok {
			if sizeless == "" && strings.TrimSpace(val) != "0" {
				sizeless = fmt.Sprintf("%s=%s is set but not %s", v.rank, val, v.size)
			}
			continue
		}
		g := GlobalRank{Source: v.rank}
		var err1, err2 error
		g.Rank, err1 = strconv.Atoi(strings.TrimSpace(val))
		g.Size, err2 = strconv.Atoi(strings.TrimSpace(size))
		if err1 != nil || err2 != nil || g.Rank < 0 || g.Size < 1 || g.Rank >= g.Size {
			return GlobalRank{}, false, fmt.Errorf("%s=%q, %s=%q is not a rank below a size", v.rank, val, v.size, size)
		}
		return g, true, nil
	}
	g, ok := a.rules().StepGlobalRank(a, env)
	if !ok && sizeless != "" && a.NodeID > 0 {
		// the scheduler says this is not the launch's first node, so the
		// launch is not this node's alone: taking it for one would give
		// each node a world of its own, ranks from 0, and no error
		return GlobalRank{}, false, fmt.Errorf("%s, while the %s job says this is node %d of the launch: gpulaunch cannot place this node's ranks among the others; export the launcher's size variable (PMI_SIZE, or PALS_SIZE under PALS' mpiexec) or start gpulaunch through a launcher that sets it", sizeless, a.Scheduler, a.NodeID)
	}
	return g, ok, nil
}

// ManyLaunchersFix is how to start one gpulaunch of n instances per node
// instead of one in every rank a launcher started (lr): in the words of
// the scheduler's own launcher when lr is its, of PALS' mpiexec or `flux
// run` when lr is theirs, else mpirun's.
func ManyLaunchersFix(a Allocation, lr LocalRank, n int) string {
	if a.FromStep(lr.Source) {
		if fix := a.OnePerNodeFix(n); fix != "" {
			return fix
		}
	}
	switch lr.Source {
	case palsLocalRank.rank:
		return fmt.Sprintf("start one gpulaunch per node (`mpiexec --ppn 1 gpulaunch -n %d -- …`)", n)
	case fluxLocalRank.rank:
		return fmt.Sprintf("start one gpulaunch per node (`flux run -N NODES --tasks-per-node=1 gpulaunch -n %d -- …`)", n)
	}
	return fmt.Sprintf("start one gpulaunch per node (`mpirun --map-by ppr:1:node gpulaunch -n %d -- …`)", n)
}
