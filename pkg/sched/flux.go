package sched

import (
	"fmt"
	"strconv"
	"strings"
)

// flux is Flux (flux-framework.org, El Capitan): the variables flux-shell
// sets in every task of a job, as flux-core's flux-environment(7), "JOB
// ENVIRONMENT", states them (doc/man7/flux-environment.rst, summarised in
// doc/man1/common/job-environment-variables.rst):
//
//	FLUX_JOB_ID         the job's id (F58 form, e.g. ƒ2Zqa8J)
//	FLUX_JOB_SIZE       the number of tasks in the job
//	FLUX_JOB_NNODES     the number of nodes hosting the job's tasks
//	FLUX_TASK_RANK      the task's global rank (from 0)
//	FLUX_TASK_LOCAL_ID  the task's rank on its node (from 0)
//	FLUX_URI            the enclosing Flux instance
//
// It says no node list, no node index, no count of tasks on this node and
// which GPUs the job has only through CUDA_VISIBLE_DEVICES (flux-shell's
// gpu-affinity); every `flux run` is a job of its own, so there is no
// step id (docs/schedulers.md).
type flux struct{ noRules }

func (flux) Name() string { return "flux" }

func (flux) Read(env Env) (Allocation, []string, bool) {
	a := Allocation{JobID: env["FLUX_JOB_ID"], NodeID: -1, GPUsOnNode: -1, GPUsPerNode: -1}
	if a.JobID == "" {
		return Allocation{}, nil, false
	}
	// a `flux run` is a job of its own, whose id every task on every node
	// shares and no other launch has, not even a resubmitted job
	a.LaunchKey, a.QueueKey = a.JobID, a.JobID
	var warn []string
	count := func(name string) int {
		v, ok := env[name]
		if !ok {
			return -1
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			warn = append(warn, fmt.Sprintf("ignoring %s=%q: not a count", name, v))
			return -1
		}
		return n
	}
	a.ProcID, a.LocalID = max(count("FLUX_TASK_RANK"), 0), max(count("FLUX_TASK_LOCAL_ID"), 0)
	size, nodes := count("FLUX_JOB_SIZE"), count("FLUX_JOB_NNODES")
	a.NodeCount = max(nodes, 0)
	if size > 0 && nodes > 0 && size%nodes == 0 {
		// even spread: the only case in which the tasks per node are
		// known (fluxLocalSize)
		for range nodes {
			a.TasksPerNode = append(a.TasksPerNode, size/nodes)
		}
	}
	return a, warn, true
}

// fluxLocalRank and fluxGlobalRank are `flux run`'s task ranks
// (DetectLocalRank, DetectGlobalRank).
var (
	fluxLocalRank  = rankVars{rank: "FLUX_TASK_LOCAL_ID", sizeOf: fluxLocalSize}
	fluxGlobalRank = rankVars{rank: "FLUX_TASK_RANK", size: "FLUX_JOB_SIZE"}
)

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

// UnsetGPUs: flux-shell's gpu-affinity sets CUDA_VISIBLE_DEVICES to the
// job's GPUs unless turned off; unset, Flux says nothing of them, and the
// rule outside a job applies: every GPU this process can open.
func (flux) UnsetGPUs(a Allocation, _ Env, told string, n NodeGPUs) (GPUChoice, bool) {
	return GPUChoice{GPUs: n.Openable, Reason: told + " unset in Flux job " + a.JobID + " (flux-shell's gpu-affinity sets it; -o gpu-affinity=off leaves it unset): every GPU this process can open"}, true
}

func (flux) Words(a Allocation) string {
	w := fmt.Sprintf("Flux:      job %s, %d node(s)", a.JobID, a.NodeCount)
	if len(a.TasksPerNode) > 0 {
		w += fmt.Sprintf(", %d task(s) per node", a.TasksPerNode[0])
	}
	return w + fmt.Sprintf(", task %d, local task %d", a.ProcID, a.LocalID)
}
