// Package cgroup reads what the kernel lets this process use: its
// cgroup's cpuset, memory nodes and memory limit (v1 and v2, in a
// container too), where Slurm's task/cgroup plugin enforces a job's CPUs
// and memory, and the CPU affinity and allowed memory nodes of
// /proc/self/status. Scheduler variables (SLURM_MEM_*, …) only echo a
// request; these are what holds.
package cgroup
