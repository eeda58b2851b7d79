// Package sched reads what the batch scheduler granted this process from
// its environment: the job and step, the nodes and this node's index, the
// tasks per node, the GPUs it says it gave, and the launcher's local and
// global rank. One implementation per scheduler (Slurm, Flux, PBS/PALS)
// sits behind the Scheduler interface, and Detect picks the one whose job
// this is; outside any job (a workstation) the allocation is empty and no
// scheduler's rule applies. Slurm's variables are read here and nowhere
// else (docs/schedulers.md says what each scheduler's environment tells).
package sched
