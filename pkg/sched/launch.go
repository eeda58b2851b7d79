package sched

import (
	"errors"
	"strings"
)

// QueueRunID names this launch the same way on every node, and
// differently from any other, for a task queue over several nodes
// (source is where the node's index came from, nodegroup.NodeGroup's
// Source):
//
//  1. GPULAUNCH_RUN_ID when the user sets one.
//  2. An OpenMPI mpirun by PMIx's namespace: its rank 0 runs under mpirun
//     itself, outside the srun step that starts the other nodes' daemons,
//     so the step is not the same on every node.
//  3. The scheduler's QueueKey, after its name: an srun step by its job,
//     step and srun's own address (which a requeued job's rerun does not
//     share); a Flux job by its id.
//  4. PMIx's namespace under any other PMIx launcher.
//
// Without any, the queue cannot start: an error saying how to name it.
func QueueRunID(env Env, source string) (string, error) {
	job, _ := Detect(env)
	switch {
	case env["GPULAUNCH_RUN_ID"] != "":
		return env["GPULAUNCH_RUN_ID"], nil
	case strings.HasPrefix(source, "OMPI_") && env["PMIX_NAMESPACE"] != "":
		return "pmix-" + env["PMIX_NAMESPACE"], nil
	case job.QueueKey != "":
		return job.Scheduler + "-" + job.QueueKey, nil
	case env["PMIX_NAMESPACE"] != "":
		return "pmix-" + env["PMIX_NAMESPACE"], nil
	}
	return "", errors.New("a task queue over several nodes needs a name for this launch that every node shares: run it under srun, `flux run` or OpenMPI's mpirun, or export GPULAUNCH_RUN_ID=<a word unique to this run> before the launcher")
}
