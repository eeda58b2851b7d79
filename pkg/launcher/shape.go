//go:build linux

package launcher

import "fmt"

// The rules of a run's shape among the nodes of its step, decided before
// anything starts (cmd/gpulaunch's newLaunch applies them):
//
//	S1. Without -n, a run has one instance per GPUs-per-instance of the
//	    allocation's GPUs; with none to give (no GPU, or fewer than one
//	    instance takes), -n is required (AutoInstances).
//	S2. Every node runs the same N when -n is on the command line (the
//	    launcher runs the same one everywhere), when the scheduler granted
//	    every node the GPUs that made this node's N, or in a queue, whose
//	    nodes are checked by its holder (nodelink.Holder refuses a node
//	    with another number of slots, since {%} counts node × N)
//	    (SameNEverywhere).
//	S3. A --ddp group restarts on one node only: over several, a group
//	    restart here would leave the other nodes' ranks waiting for these
//	    in their collectives (Policy.CheckNodes).

// AutoInstances is S1: the number of instances without -n, from the
// allocation's gpus, gpusPerInstance (-G) and why the allocation has the
// GPUs it has (binding.Allocation.GPUReason).
func AutoInstances(gpus, gpusPerInstance int, why string) (int, error) {
	if gpusPerInstance == 0 || gpus < gpusPerInstance {
		return 0, fmt.Errorf("-n N is required: the allocation has %d GPU(s) (%s)", gpus, why)
	}
	return gpus / gpusPerInstance, nil
}

// SameNEverywhere is S2: auto, no -n; grantedPerNode, the GPUs the
// scheduler granted each node (-1: it did not say); gpusHere, this node's;
// queue, a task queue.
func SameNEverywhere(auto bool, grantedPerNode, gpusHere int, queue bool) bool {
	return !auto || grantedPerNode == gpusHere || queue
}

// CheckNodes is S3 for a run over nodes nodes.
func (p Policy) CheckNodes(nodes int) error {
	if nodes > 1 && p.DDP && p.Restarts > 0 {
		return fmt.Errorf("--ddp --restarts %d on %d nodes: a group restart here would leave the other nodes' ranks waiting for these in their collectives; over several nodes let a failure end the step (srun -K, see docs/multinode.md) and resubmit, or drop --restarts",
			p.Restarts, nodes)
	}
	return nil
}
