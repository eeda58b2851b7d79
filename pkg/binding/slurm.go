package binding

import (
	"fmt"
	"strconv"
	"strings"
)

// Env is the process environment as a map, injected so that every rule
// that reads a variable runs in tests.
type Env map[string]string

// EnvFromList turns os.Environ() output into an Env.
func EnvFromList(list []string) Env {
	env := Env{}
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Lookup returns a variable and whether it is set.
func (e Env) Lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// Slurm is what the environment says about the Slurm job and step this
// process runs in.
type Slurm struct {
	JobID string `json:"job_id,omitempty"`
	// StepID is set inside srun steps only: the batch step, the interactive
	// step and anything a non-Slurm launcher starts from the batch script
	// have none (and inherit SLURM_LOCALID=0 / SLURM_PROCID=0).
	StepID   string `json:"step_id,omitempty"`
	NodeName string `json:"node_name,omitempty"` // SLURMD_NODENAME: unset in an salloc shell on the submit host
	NodeID   int    `json:"node_id"`
	// Nodes is the step's node list inside a step, else the job's.
	Nodes []string `json:"nodes,omitempty"`
	// TasksPerNode is aligned with Nodes.
	TasksPerNode []int `json:"tasks_per_node,omitempty"`
	ProcID       int   `json:"proc_id"`
	LocalID      int   `json:"local_id"`
	// GPUsOnNode is SLURM_GPUS_ON_NODE, -1 when unset.
	GPUsOnNode int   `json:"gpus_on_node"`
	JobGPUs    []int `json:"job_gpus,omitempty"`  // global GPU ids, batch and interactive env only
	StepGPUs   []int `json:"step_gpus,omitempty"` // global GPU ids, srun steps
}

// InJob reports whether this process belongs to a Slurm job.
func (s Slurm) InJob() bool { return s.JobID != "" }

// InStep reports whether this process is a task of an srun step.
func (s Slurm) InStep() bool { return s.StepID != "" }

// StepName is the step id, or "batch" outside srun steps (the batch
// script and what it starts).
func (s Slurm) StepName() string {
	if s.StepID == "" {
		return "batch"
	}
	return s.StepID
}

// TasksOnThisNode is how many tasks of this step run on this node, 0 when
// the environment does not say.
func (s Slurm) TasksOnThisNode() int {
	if s.NodeID >= 0 && s.NodeID < len(s.TasksPerNode) {
		return s.TasksPerNode[s.NodeID]
	}
	return 0
}

// ParseSlurm reads the Slurm variables. Malformed optional variables are
// reported as warnings, since a job must not fail over a variable that
// gpulaunch only cross-checks.
func ParseSlurm(env Env) (Slurm, []string) {
	var warn []string
	s := Slurm{JobID: first(env, "SLURM_JOB_ID", "SLURM_JOBID"), GPUsOnNode: -1}
	if !s.InJob() {
		return s, nil
	}
	s.StepID = first(env, "SLURM_STEP_ID", "SLURM_STEPID")
	s.NodeName = env["SLURMD_NODENAME"]
	intVar := func(name string, dst *int) {
		if v, ok := env[name]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				warn = append(warn, fmt.Sprintf("ignoring %s=%q: not a count", name, v))
				return
			}
			*dst = n
		}
	}
	intVar("SLURM_NODEID", &s.NodeID)
	intVar("SLURM_PROCID", &s.ProcID)
	intVar("SLURM_LOCALID", &s.LocalID)
	intVar("SLURM_GPUS_ON_NODE", &s.GPUsOnNode)
	idList := func(name string) []int {
		v, ok := env[name]
		if !ok || v == "" {
			return nil
		}
		var ids []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				warn = append(warn, fmt.Sprintf("ignoring %s=%q: not a list of GPU ids", name, v))
				return nil
			}
			ids = append(ids, n)
		}
		return ids
	}
	s.JobGPUs = idList("SLURM_JOB_GPUS")
	s.StepGPUs = idList("SLURM_STEP_GPUS")

	nodesVar, tasksVar := "SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE"
	if s.InStep() {
		nodesVar, tasksVar = "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE"
	}
	if v := first(env, nodesVar, "SLURM_NODELIST"); v != "" {
		hosts, err := ExpandHostlist(v)
		if err != nil {
			warn = append(warn, fmt.Sprintf("ignoring %s: %v", nodesVar, err))
		}
		s.Nodes = hosts
	}
	if v := env[tasksVar]; v != "" {
		counts, err := ParseCounts(v)
		if err != nil {
			warn = append(warn, fmt.Sprintf("ignoring %s: %v", tasksVar, err))
		}
		s.TasksPerNode = counts
	}
	return s, warn
}

func first(env Env, names ...string) string {
	for _, n := range names {
		if v := env[n]; v != "" {
			return v
		}
	}
	return ""
}

// LocalRank is this process's rank among the ranks a launcher started on
// this node.
type LocalRank struct {
	Rank   int    `json:"rank"`
	Size   int    `json:"size"`   // 0 when the launcher does not say
	Source string `json:"source"` // the variable it came from
}

// localRankVars are read in this order: the most specific launcher
// first, Slurm last, because SLURM_* variables leak from the batch script
// into every rank mpirun starts.
var localRankVars = []struct{ rank, size string }{
	{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
	{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
	{"PALS_LOCAL_RANKID", "PALS_LOCAL_SIZE"},
	{"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"},
	{"FLUX_TASK_LOCAL_ID", ""},
	{"JSM_NAMESPACE_LOCAL_RANK", "JSM_NAMESPACE_LOCAL_SIZE"},
}

// fluxLocalSize is the number of a Flux job's tasks on each node: Flux
// sets no variable for it, so it is FLUX_JOB_SIZE / FLUX_JOB_NNODES, which
// holds when the tasks are spread evenly (flux run -N n --tasks-per-node
// k, or -n a multiple of -N). An uneven spread leaves the nodes' counts
// unknown: an error, since guessing would bind two ranks to one GPU.
func fluxLocalSize(env Env) (int, error) {
	size, err1 := strconv.Atoi(strings.TrimSpace(env["FLUX_JOB_SIZE"]))
	nodes, err2 := strconv.Atoi(strings.TrimSpace(env["FLUX_JOB_NNODES"]))
	switch {
	case err1 != nil || err2 != nil || size < 1 || nodes < 1:
		return 0, fmt.Errorf("FLUX_TASK_LOCAL_ID is set but FLUX_JOB_SIZE=%q and FLUX_JOB_NNODES=%q do not give the tasks per node: run gpulaunch as a task of `flux run`",
			env["FLUX_JOB_SIZE"], env["FLUX_JOB_NNODES"])
	case size%nodes != 0:
		return 0, fmt.Errorf("the Flux job's %d tasks are not spread evenly over its %d nodes, so the tasks on this node are unknown: ask for the same number on each (flux run -N %d --tasks-per-node=K)",
			size, nodes, nodes)
	}
	return size / nodes, nil
}

// DetectLocalRank finds the launcher's local rank. It returns ok=false when
// no launcher started this process as one of several ranks: in particular
// SLURM_LOCALID counts only inside an srun step (SLURM_STEP_ID set), since
// the batch script and everything it starts carry SLURM_LOCALID=0.
// A malformed or out-of-range value is an error: binding the wrong GPU
// silently is worse than stopping.
func DetectLocalRank(env Env, slurm Slurm) (LocalRank, bool, error) {
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
		if v.rank == "FLUX_TASK_LOCAL_ID" {
			if lr.Size, err = fluxLocalSize(env); err != nil {
				return LocalRank{}, false, err
			}
		}
		if lr.Size > 0 && lr.Rank >= lr.Size {
			return LocalRank{}, false, fmt.Errorf("%s=%d is not below %s=%d", v.rank, lr.Rank, v.size, lr.Size)
		}
		// every rank plans the node's ranks as instances (NewPlan's rule
		// 11): G × a size of 2^62 wrapped to a small count of GPUs
		if lr.Size > MaxInstances {
			return LocalRank{}, false, fmt.Errorf("%s=%d: more ranks on one node than gpulaunch places (%d)", v.size, lr.Size, MaxInstances)
		}
		return lr, true, nil
	}
	if slurm.InStep() {
		if _, ok := env["SLURM_LOCALID"]; ok {
			lr := LocalRank{Rank: slurm.LocalID, Size: slurm.TasksOnThisNode(), Source: "SLURM_LOCALID"}
			if lr.Size > 0 && lr.Rank >= lr.Size {
				return LocalRank{}, false, fmt.Errorf("SLURM_LOCALID=%d is not below the %d tasks SLURM_STEP_TASKS_PER_NODE gives this node", lr.Rank, lr.Size)
			}
			if lr.Size > MaxInstances {
				return LocalRank{}, false, fmt.Errorf("SLURM_STEP_TASKS_PER_NODE gives this node %d tasks: more ranks on one node than gpulaunch places (%d)", lr.Size, MaxInstances)
			}
			return lr, true, nil
		}
	}
	return LocalRank{}, false, nil
}
