package sched

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// slurm is Slurm: sbatch, salloc and srun (slurm.schedmd.com/srun.html,
// "OUTPUT ENVIRONMENT VARIABLES"; sbatch.html likewise). Its variables
// are read here and nowhere else.
type slurm struct{}

func (slurm) Name() string { return "slurm" }

func (slurm) Read(env Env) (Allocation, []string, bool) {
	a, warn := parseSlurm(env)
	return a, warn, a.InJob()
}

// parseSlurm reads the Slurm variables. Malformed optional variables are
// reported as warnings, since a job must not fail over a variable that
// gpulaunch only cross-checks.
func parseSlurm(env Env) (Allocation, []string) {
	var warn []string
	s := Allocation{JobID: first(env, "SLURM_JOB_ID", "SLURM_JOBID"), GPUsOnNode: -1, GPUsPerNode: gpusPerNode(env)}
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
	readLaunch(env, &s)
	return s, warn
}

// readLaunch reads what names the launch and the batch shell:
//
//  1. The launch is the job and step ("batch" outside a step).
//  2. A queue over nodes is an srun step's job, step and srun's own
//     address (which a requeued job's rerun does not share); none
//     outside a step.
//  3. Outside a step the batch step's task, SLURM_TASK_PID, is the batch
//     script's shell.
//  4. Slurm's gres (gres.conf without env flags) writes one GPU list into
//     every vendor's variable.
func readLaunch(env Env, s *Allocation) {
	s.LaunchKey = s.JobID + "." + s.StepName()
	if env["SLURM_JOB_ID"] != "" && env["SLURM_STEP_ID"] != "" {
		s.QueueKey = fmt.Sprintf("%s.%s-%s-%s", env["SLURM_JOB_ID"], env["SLURM_STEP_ID"], env["SLURM_SRUN_COMM_HOST"], env["SLURM_SRUN_COMM_PORT"])
	}
	if task, err := strconv.Atoi(env["SLURM_TASK_PID"]); err == nil && task > 0 && !s.InStep() {
		s.BatchShellPID = task
	}
	s.SameListInEveryVendorVar = true
}

// gpusPerNode is the per-node GPU count of Slurm's SLURM_GPUS_PER_NODE
// ("4", "a100:4", "gpu:a100:4"), or -1 when the job did not ask for GPUs
// per node.
func gpusPerNode(env Env) int {
	v := env["SLURM_GPUS_PER_NODE"]
	if v == "" {
		return -1
	}
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// UnsetGPUs is Reconcile's rules 2 and 3 (binding.Reconcile) for Slurm,
// when the vendor's variable (told) is unset:
//
//  2. Inside a Slurm job that means "no GPU" (Slurm unsets the variables
//     when none was allocated), except when SLURM_GPUS_ON_NODE says GPUs
//     were given (--gpu-bind=none, no_gpu_env): then the openable GPUs if
//     a cgroup constrains them, else SLURM_STEP_GPUS / SLURM_JOB_GPUS as
//     global PCI-order indices.
//  3. Inside an salloc shell on the submit host (SLURMD_NODENAME unset):
//     no GPU; the job's GPUs are on another machine.
func (slurm) UnsetGPUs(s Allocation, env Env, told string, n NodeGPUs) (GPUChoice, bool) {
	switch {
	case s.NodeName == "":
		seen := varsSeen(env, jobIDVar(env), "SLURMD_NODENAME")
		return GPUChoice{Reason: seen + ": an salloc shell on the submit host, outside job " + s.JobID + "'s node: no GPU here (run gpulaunch through srun; outside any job, unset " + jobIDVar(env) + ")",
			Warnings: []string{fmt.Sprintf("%s: this is an salloc shell on the submit host, where the job's GPUs are not; run gpulaunch on the job's node with srun, e.g. `srun --pty gpulaunch info` (outside any job, unset %s)", seen, jobIDVar(env))}}, true
	case s.GPUsOnNode <= 0:
		seen := varsSeen(env, told, "SLURM_GPUS_ON_NODE")
		if s.GPUsOnNode < 0 && env["SLURM_GPUS_ON_NODE"] != "" {
			return GPUChoice{Reason: "Slurm job " + s.JobID + " does not say which GPUs it has on this node (" + seen + ", not a count): no GPU; set " + told + " to the job's GPUs"}, true
		}
		return GPUChoice{Reason: "Slurm job " + s.JobID + " allocated no GPU on this node (" + seen + "); ask for GPUs with --gres=gpu:N or --gpus=N"}, true
	case n.Constrained:
		return GPUChoice{GPUs: n.Openable, Reason: fmt.Sprintf("%s unset but SLURM_GPUS_ON_NODE=%d: the %d GPU(s) the device cgroup lets this process open", told, s.GPUsOnNode, len(n.Openable))}, true
	}
	ids, name := s.StepGPUs, "SLURM_STEP_GPUS"
	if ids == nil {
		ids, name = s.JobGPUs, "SLURM_JOB_GPUS"
	}
	if gpus, ok := byGlobalIndex(n.All, ids); ok {
		return GPUChoice{GPUs: gpus, Reason: fmt.Sprintf("%s unset; %s=%s as global PCI-order indices", told, name, joinInts(ids))}, true
	}
	seen := fmt.Sprintf("SLURM_GPUS_ON_NODE=%d, %s, %s, %s", s.GPUsOnNode, varsSeen(env, told),
		gpuIDsSeen(env, "SLURM_STEP_GPUS", s.StepGPUs, len(n.All)), gpuIDsSeen(env, "SLURM_JOB_GPUS", s.JobGPUs, len(n.All)))
	return GPUChoice{Reason: "Slurm gave GPUs without saying which (" + seen + "): no GPU; set " + told + " to the job's GPUs",
		Warnings: []string{fmt.Sprintf("%s: Slurm gave GPUs without saying which, so none is used; set %s to them", seen, told)}}, true
}

// CheckGPUs compares the GPUs the vendor's variable (told) resolved to
// with the global ids Slurm lists, when the inventory covers the whole
// node. A mismatch means gres.conf numbers GPUs other than by PCI bus id.
func (slurm) CheckGPUs(s Allocation, _ Env, told string, gpus, all []gpu.GPU) []string {
	ids, name := s.JobGPUs, "SLURM_JOB_GPUS"
	if s.InStep() {
		// In multi-task steps with per-task binding SLURM_STEP_GPUS is the
		// same in every task and need not name the task's own GPU.
		if s.TasksOnThisNode() != 1 {
			return nil
		}
		ids, name = s.StepGPUs, "SLURM_STEP_GPUS"
	}
	if ids == nil || len(gpus) == 0 {
		return nil
	}
	want, ok := byGlobalIndex(all, ids)
	if !ok || sameGPUs(want, gpus) {
		return nil
	}
	return []string{fmt.Sprintf("%s=%s names GPUs %s by PCI order but %s resolves to %s: gres.conf may number GPUs other than by PCI bus id; trusting %s",
		name, joinInts(ids), busList(want), told, busList(gpus), told)}
}

// BoundCPUs: srun bound this task's CPUs (SLURM_CPU_BIND_TYPE) to fewer
// than its cgroup allows, which its instances would then share.
func (slurm) BoundCPUs(env Env, cpus, cgroup cpuset.Set) string {
	if cpus.Size() < cgroup.Size() && env["SLURM_CPU_BIND_TYPE"] != "" {
		return fmt.Sprintf("this task is bound to CPUs %s (SLURM_CPU_BIND=%s) while its cgroup allows %s: run gpulaunch with `srun --cpu-bind=none` to give its instances every CPU of the step",
			cpus, env["SLURM_CPU_BIND"], cgroup)
	}
	return ""
}

// StepLocalRank: SLURM_LOCALID counts only inside an srun step
// (SLURM_STEP_ID set), since the batch script and everything it starts
// carry SLURM_LOCALID=0; its size is the step's tasks on this node.
func (slurm) StepLocalRank(s Allocation, env Env, maxRanks int) (LocalRank, bool, error) {
	if _, ok := env["SLURM_LOCALID"]; !ok || !s.InStep() {
		return LocalRank{}, false, nil
	}
	lr := LocalRank{Rank: s.LocalID, Size: s.TasksOnThisNode(), Source: "SLURM_LOCALID"}
	if lr.Size > 0 && lr.Rank >= lr.Size {
		return LocalRank{}, false, fmt.Errorf("SLURM_LOCALID=%d is not below the %d tasks SLURM_STEP_TASKS_PER_NODE gives this node", lr.Rank, lr.Size)
	}
	if lr.Size > maxRanks {
		return LocalRank{}, false, fmt.Errorf("SLURM_STEP_TASKS_PER_NODE gives this node %d tasks: more ranks on one node than gpulaunch places (%d)", lr.Size, maxRanks)
	}
	return lr, true, nil
}

// StepGlobalRank: SLURM_PROCID counts only inside an srun step, with
// SLURM_STEP_NUM_TASKS (or SLURM_NTASKS) as the size.
func (slurm) StepGlobalRank(s Allocation, env Env) (GlobalRank, bool) {
	if !s.InStep() {
		return GlobalRank{}, false
	}
	n, err := strconv.Atoi(first(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"))
	if err == nil && n > s.ProcID {
		return GlobalRank{Rank: s.ProcID, Size: n, Source: "SLURM_PROCID"}, true
	}
	return GlobalRank{}, false
}

func (slurm) FromStep(source string) bool {
	return source == "SLURM_LOCALID" || source == "SLURM_PROCID"
}

// OnePerNode: an srun step's tasks are one gpulaunch per node only when
// every node runs one task.
func (slurm) OnePerNode(s Allocation, n int) error {
	for _, t := range s.TasksPerNode {
		if t != 1 {
			return fmt.Errorf("this step runs %s tasks per node (SLURM_STEP_TASKS_PER_NODE), so its tasks are not one gpulaunch per node: for that, srun --ntasks-per-node=1 gpulaunch -n %d; for one rank per GPU instead, give every node as many tasks as it has GPUs (srun --ntasks-per-node=GPUS gpulaunch -- …)",
				CountsString(s.TasksPerNode), n)
		}
	}
	return nil
}

// OnePerNodeFix says how with srun, which inherits the job's --ntasks
// and --gpus-per-task.
func (slurm) OnePerNodeFix(s Allocation, n int) string {
	return fmt.Sprintf("start one gpulaunch per node (`srun --ntasks-per-node=1 gpulaunch -n %d -- …`; srun inherits --ntasks and --gpus-per-task from the job, so in such a job say `srun -n 1 --gres=gpu:%d -c CPUS gpulaunch -n %d -- …`)",
		n, max(s.GPUsOnNode, n), n)
}

func (slurm) Words(s Allocation) string {
	if s.InStep() {
		return fmt.Sprintf("Slurm:     job %s, step %s on %s (node %d of %d), task %d, local task %d of %d",
			s.JobID, s.StepID, orDash(s.NodeName), s.NodeID, max(len(s.Nodes), 1), s.ProcID, s.LocalID, s.TasksOnThisNode())
	}
	return fmt.Sprintf("Slurm:     job %s on %s, no srun step (batch script, salloc or interactive step)", s.JobID, orDash(s.NodeName))
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// jobIDVar is the variable the job id came from (parseSlurm reads both).
func jobIDVar(env Env) string {
	if env["SLURM_JOB_ID"] == "" && env["SLURM_JOBID"] != "" {
		return "SLURM_JOBID"
	}
	return "SLURM_JOB_ID"
}

// varsSeen is the evidence a conclusion rests on: each variable with its
// value, or "unset".
func varsSeen(env Env, names ...string) string {
	out := make([]string, len(names))
	for i, n := range names {
		if v, ok := env[n]; ok {
			out[i] = fmt.Sprintf("%s=%s", n, v)
		} else {
			out[i] = n + " unset"
		}
	}
	return strings.Join(out, ", ")
}

// gpuIDsSeen is a Slurm GPU id list as evidence: unset, not a list of ids
// (parseSlurm dropped it), or ids beyond the node's GPUs.
func gpuIDsSeen(env Env, name string, ids []int, gpus int) string {
	v, ok := env[name]
	switch {
	case !ok || v == "":
		return varsSeen(env, name)
	case ids == nil:
		return fmt.Sprintf("%s=%s (not a list of GPU ids)", name, v)
	}
	return fmt.Sprintf("%s=%s (not among the %d GPU(s) of this node)", name, v, gpus)
}

func byGlobalIndex(all []gpu.GPU, ids []int) ([]gpu.GPU, bool) {
	if len(ids) == 0 {
		return nil, false
	}
	var out []gpu.GPU
	for _, id := range ids {
		if id >= len(all) {
			return nil, false
		}
		out = append(out, all[id])
	}
	return out, true
}

// sameGPUs: the two lists name the same GPUs, by PCI address (a GPU's
// tiles and MIG devices count as the GPU, as Slurm counts them).
func sameGPUs(a, b []gpu.GPU) bool {
	key := func(gs []gpu.GPU) string {
		seen := map[string]bool{}
		var ids []string
		for _, g := range gs {
			if !seen[g.BusID] {
				seen[g.BusID] = true
				ids = append(ids, g.BusID)
			}
		}
		sort.Strings(ids)
		return strings.Join(ids, ",")
	}
	return key(a) == key(b)
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func busList(gs []gpu.GPU) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.BusID
	}
	return strings.Join(s, ",")
}
