// Package nodegroup places one gpulaunch's instances among every instance
// of a launch over several nodes: this node's index and the node count
// (from the launcher's rank, or the scheduler's step), the torchrun ranks
// each instance gets (RANK, LOCAL_RANK, GROUP_RANK, …), and the DDP
// rendezvous where they meet (MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RUN_ID), with the check that its port is free (Meet).
package nodegroup
