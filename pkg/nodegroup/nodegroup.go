package nodegroup

import (
	"fmt"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Ranks are one instance's numbers in torchrun's contract: its rank among
// all instances of the launch, among the instances of its node, and its
// node's rank among the nodes (the "group").
type Ranks struct {
	Rank, WorldSize           int
	LocalRank, LocalWorldSize int
	// GroupRank and GroupWorldSize are -1 when the launcher does not say
	// which node this is: they are then not exported rather than guessed.
	GroupRank, GroupWorldSize int
}

// NodeGroup is where one gpulaunch's instances sit in a launch over several
// nodes: this node's index among them (torchrun's group rank), their
// count, and the instances each runs.
type NodeGroup struct {
	Rank, Size int // this node, and how many
	PerNode    int // instances on every node
	// Host is this node's name, Hosts every node's in node order (the
	// step's node list); Hosts is empty when no launcher says.
	Host  string
	Hosts []string
	// Source says where the node index came from (SLURM_PROCID, an MPI
	// launcher's rank, or "one node").
	Source string
}

// MultiNode reports whether the launch spans more than this node.
func (g NodeGroup) MultiNode() bool { return g.Size > 1 }

// LabelHost is the host an output label names (node3:2: …) with several
// nodes, where the instance numbers repeat on every node; "" on one.
func (g NodeGroup) LabelHost() string {
	if g.MultiNode() {
		return g.Host
	}
	return ""
}

// Ranks are instance i's numbers: node rank × N + i.
func (g NodeGroup) Ranks(i int) Ranks {
	return Ranks{
		Rank: g.Rank*g.PerNode + i, WorldSize: g.Size * g.PerNode,
		LocalRank: i, LocalWorldSize: g.PerNode,
		GroupRank: g.Rank, GroupWorldSize: g.Size,
	}
}

// Local is a launch of this node only: instance i has rank i.
func Local(n int, host string) NodeGroup {
	return NodeGroup{Rank: 0, Size: 1, PerNode: n, Host: host, Source: "one node"}
}

// Find places the n instances of this gpulaunch among every
// instance of the launch, for `srun --ntasks-per-node=1 gpulaunch -n N`
// and `mpirun --map-by ppr:1:node gpulaunch -n N`:
//
//  1. The node's index and the node count are the launcher's global rank
//     and size: with one gpulaunch per node (several per node are refused
//     earlier, since they would share GPUs), launcher rank r is node r.
//     In an srun step that is SLURM_PROCID of SLURM_STEP_NUM_TASKS; under
//     mpirun the MPI rank, which outranks the SLURM_PROCID=0 that leaks
//     from the batch step into everything mpirun starts.
//  2. Without a launcher (the batch script, a shell, salloc) gpulaunch is
//     a launch of one node.
//  3. Ranks are node × n + i only when every node runs the same n. That
//     holds when n was given on the command line, because srun and mpirun
//     run the same command line on every node (sameN), or when n was
//     derived from a per-node GPU count that Slurm granted uniformly. When
//     nothing guarantees it, Find stops with an error rather than
//     hand out overlapping ranks — unless local is set (--ranks local):
//     then every node is a world of its own, ranks 0..n-1.
//  4. Hosts is the step's node list (else the job's), in Slurm's node
//     order, which is SLURM_PROCID's order for one task per node; Host is
//     SLURMD_NODENAME, else hostname.
func Find(env sched.Env, s sched.Allocation, hostname string, n int, sameN, local bool) (NodeGroup, error) {
	host := s.NodeName
	if host == "" {
		host = hostname
	}
	g := Local(n, host)
	g.Hosts = s.Nodes
	launcher, ok, err := sched.DetectGlobalRank(env, s)
	if err != nil {
		return NodeGroup{}, err
	}
	if !ok || launcher.Size <= 1 {
		return g, nil
	}
	if s.FromStep(launcher.Source) {
		// the scheduler's own launcher (srun): its tasks per node say
		// whether this is one gpulaunch per node (sched's OnePerNode)
		if err := s.OnePerNode(n); err != nil {
			return NodeGroup{}, err
		}
	}
	if local {
		g.Source = fmt.Sprintf("--ranks local (node %d of %d by %s)", launcher.Rank, launcher.Size, launcher.Source)
		return g, nil
	}
	if !sameN {
		return NodeGroup{}, fmt.Errorf("this is node %d of %d (%s), and nothing makes every node run the same number of instances (this one has %d): give -n %d so that every node runs %d and ranks are node × %d + instance, or --ranks local for ranks within each node",
			launcher.Rank, launcher.Size, launcher.Source, n, n, n, n)
	}
	g.Rank, g.Size, g.Source = launcher.Rank, launcher.Size, launcher.Source
	if len(g.Hosts) > 0 && len(g.Hosts) != g.Size {
		// mpirun inside a bigger allocation, or several tasks per node:
		// the node list does not name the launch's nodes in rank order.
		g.Hosts = nil
	}
	return g, nil
}

// Wrapper is the node group of a rank that a launcher started itself
// (`srun -n 8 gpulaunch -- app`, `mpirun -np 8 gpulaunch -- app`), one of
// localSize ranks on this node:
//
//  1. Without a global rank above this node's ranks, the launch is this
//     node's alone.
//  2. In an srun step Slurm says which node this is (SLURM_NODEID) among
//     the step's nodes.
//  3. MPI launchers do not say so portably: the node's index stays unknown
//     (-1, and GROUP_RANK is then not exported rather than guessed), the
//     node count is the ranks over the ranks per node, and the node list is
//     the job's when it has that many nodes (mpirun maps rank 0 on the
//     first node of the allocation).
func Wrapper(global sched.GlobalRank, haveGlobal bool, localSize int, s sched.Allocation, hostname string) NodeGroup {
	host := s.NodeName
	if host == "" {
		host = hostname
	}
	g := Local(localSize, host)
	if !haveGlobal || global.Size <= localSize {
		return g
	}
	g.Source = global.Source
	if s.FromStep(global.Source) && s.InStep() && len(s.Nodes) > 1 {
		g.Rank, g.Size, g.Hosts = s.NodeID, len(s.Nodes), s.Nodes
		return g
	}
	g.Rank, g.Size = -1, (global.Size+localSize-1)/localSize
	if len(s.Nodes) == g.Size {
		g.Hosts = s.Nodes
	}
	return g
}

// OfRank is the node group (Wrapper) and the numbers (WrapperRanks) of
// local rank localRank of localSize on this node, from the launcher's
// global rank in env (sched.DetectGlobalRank) when it has one.
func OfRank(env sched.Env, s sched.Allocation, hostname string, localSize, localRank int) (NodeGroup, Ranks, error) {
	global, ok, err := sched.DetectGlobalRank(env, s)
	if err != nil {
		return NodeGroup{}, Ranks{}, err
	}
	g := Wrapper(global, ok, localSize, s, hostname)
	return g, WrapperRanks(global, ok, localRank, g), nil
}

// WrapperRanks are the numbers of local rank localRank in group g: RANK
// and WORLD_SIZE are the launcher's own when it has them.
func WrapperRanks(global sched.GlobalRank, haveGlobal bool, localRank int, g NodeGroup) Ranks {
	r := Ranks{Rank: localRank, WorldSize: g.PerNode, LocalRank: localRank, LocalWorldSize: g.PerNode, GroupRank: g.Rank, GroupWorldSize: g.Size}
	if haveGlobal {
		r.Rank, r.WorldSize = global.Rank, global.Size
	}
	if g.Rank < 0 {
		r.GroupWorldSize = -1
	}
	return r
}
