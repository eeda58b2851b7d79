// Package binding decides where each instance goes: the Allocation (what
// this process may use, reconciled from the GPU inventory, the vendor's
// visibility variable, the scheduler's allocation from pkg/sched and the
// kernel's limits from pkg/cgroup), the CPU topology, and the plan over
// them (NewPlan's numbered rules; RankSlot for one rank among several,
// OneRankOfSeveral for whether a gpulaunch is one).
// It is pure: the machine is read by ReadWorld into a World, and every
// rule runs on what it is given.
package binding
