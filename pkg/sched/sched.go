package sched

import (
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// Allocation is what the environment says the scheduler granted the job
// and step this process runs in. Its JSON is `info --json`'s "slurm"
// object, whose keys it keeps; "scheduler" says whose job it is.
type Allocation struct {
	JobID string `json:"job_id,omitempty"`
	// StepID is set inside a Slurm step only: the batch step, the
	// interactive step and anything a non-Slurm launcher starts from the
	// batch script have none (and inherit SLURM_LOCALID=0 /
	// SLURM_PROCID=0). Flux and PBS have no steps: a `flux run` is a job
	// of its own.
	StepID string `json:"step_id,omitempty"`
	// NodeName is this node's name as the scheduler knows it
	// (SLURMD_NODENAME: unset in an salloc shell on the submit host); ""
	// where it does not say.
	NodeName string `json:"node_name,omitempty"`
	// NodeID is this node's index among Nodes; -1 where the scheduler
	// does not say (Flux, PBS outside mpiexec).
	NodeID int `json:"node_id"`
	// Nodes is the step's node list inside a step, else the job's.
	Nodes []string `json:"nodes,omitempty"`
	// TasksPerNode is aligned with Nodes.
	TasksPerNode []int `json:"tasks_per_node,omitempty"`
	ProcID       int   `json:"proc_id"`
	LocalID      int   `json:"local_id"`
	// GPUsOnNode is the count of GPUs granted on this node
	// (SLURM_GPUS_ON_NODE), -1 when unset or unknown.
	GPUsOnNode int   `json:"gpus_on_node"`
	JobGPUs    []int `json:"job_gpus,omitempty"`  // global GPU ids, batch and interactive env only
	StepGPUs   []int `json:"step_gpus,omitempty"` // global GPU ids, srun steps
	// NodeCount is the number of nodes where the scheduler gives a count
	// but no node list (Flux); 0 where Nodes says it, or nothing does.
	NodeCount int `json:"node_count,omitempty"`
	// GPUsPerNode is the per-node GPU count the job asked for
	// (SLURM_GPUS_PER_NODE), -1 when it did not ask for GPUs per node.
	GPUsPerNode int `json:"-"`
	// Scheduler is whose job this is (a Scheduler's Name); "" outside any.
	Scheduler string `json:"scheduler,omitempty"`

	// LaunchKey names this launch (job and step) the same on every node
	// and differently from the job's other launches: Slurm's "JOB.STEP"
	// ("batch" outside a step), Flux's job id; "" where the environment
	// cannot (PBS: two mpiexec of one job look alike).
	LaunchKey string `json:"-"`
	// QueueKey is LaunchKey for a task queue over nodes, which must also
	// differ from a requeued job's rerun: an srun step's job, step and
	// srun's own address; Flux's job id (never reused); "" otherwise.
	QueueKey string `json:"-"`
	// BatchShellPID is the batch script's shell outside a step
	// (SLURM_TASK_PID), 0 where none is known (ChildOfBatchShell).
	BatchShellPID int `json:"-"`
	// SameListInEveryVendorVar: the scheduler writes one GPU list into
	// every vendor's variable (Slurm's gres without env flags), so that two
	// equal lists are one selection.
	SameListInEveryVendorVar bool `json:"-"`
}

// Scheduler is one batch system: how its environment is read (Read, into
// an Allocation: what it granted and what names the launch), and the rules
// in which that environment decides something beyond the reading. A
// scheduler whose environment decides none of them embeds noRules; adding
// one is a file with its type and a line in Detect's list (detect.go).
type Scheduler interface {
	// Name is the scheduler's word in run ids and in `info --json`'s
	// "scheduler" ("slurm").
	Name() string
	// Read reads env; ok is false when env is no job of this scheduler.
	Read(env Env) (a Allocation, warnings []string, ok bool)
	// UnsetGPUs decides the GPUs when the vendor's visibility variable
	// (told) is unset; ok is false when the scheduler does not decide
	// (then every GPU the process can open is used).
	UnsetGPUs(a Allocation, env Env, told string, n NodeGPUs) (c GPUChoice, ok bool)
	// CheckGPUs cross-checks the GPUs the vendor's variable resolved to
	// against what the scheduler lists, and returns warnings.
	CheckGPUs(a Allocation, env Env, told string, gpus, all []gpu.GPU) []string
	// BoundCPUs warns when the scheduler bound this task to fewer CPUs
	// than its cgroup allows; "" when not.
	BoundCPUs(env Env, cpus, cgroup cpuset.Set) string
	// StepLocalRank and StepGlobalRank are the scheduler's own
	// launcher's ranks (srun's), read after every MPI launcher's since
	// its variables leak into what those start; ok false when it says
	// none.
	StepLocalRank(a Allocation, env Env, maxRanks int) (LocalRank, bool, error)
	StepGlobalRank(a Allocation, env Env) (GlobalRank, bool)
	// FromStep reports whether a rank's variable (source) is the
	// scheduler's own launcher's.
	FromStep(source string) bool
	// OnePerNode is the error for a launch of the scheduler's own
	// launcher that is not one gpulaunch per node; nil when it is.
	OnePerNode(a Allocation, n int) error
	// OnePerNodeFix is how to start one gpulaunch of n instances per node
	// with the scheduler's launcher, "" for an MPI launcher's words.
	OnePerNodeFix(a Allocation, n int) string
	// Words is the line `info` prints for the allocation.
	Words(a Allocation) string
}

// NodeGPUs are the GPUs a scheduler's GPU rules choose among: every GPU
// of the node in PCI order, those this process can open, and whether a
// device cgroup hides the others.
type NodeGPUs struct {
	All, Openable []gpu.GPU
	Constrained   bool
}

// GPUChoice is a scheduler's decision on the GPUs, the reason in words
// for `info`, and warnings.
type GPUChoice struct {
	GPUs     []gpu.GPU
	Reason   string
	Warnings []string
}

// None is the allocation outside any scheduler's job: a workstation, a
// container, a login node.
func None() Allocation { return Allocation{NodeID: 0, GPUsOnNode: -1, GPUsPerNode: -1} }

// InJob reports whether this process belongs to a scheduler's job.
func (a Allocation) InJob() bool { return a.JobID != "" }

// InStep reports whether this process is a task of a Slurm step.
func (a Allocation) InStep() bool { return a.StepID != "" }

// StepName is the step id, or "batch" outside srun steps (the batch
// script and what it starts).
func (a Allocation) StepName() string {
	if a.StepID == "" {
		return "batch"
	}
	return a.StepID
}

// TasksOnThisNode is how many tasks of this step run on this node, 0 when
// the environment does not say.
func (a Allocation) TasksOnThisNode() int {
	if a.NodeID >= 0 && a.NodeID < len(a.TasksPerNode) {
		return a.TasksPerNode[a.NodeID]
	}
	return 0
}

// rules is the implementation whose job this is; none outside any.
func (a Allocation) rules() Scheduler {
	for _, s := range schedulers {
		if s.Name() == a.Scheduler {
			return s
		}
	}
	return none{}
}

// UnsetGPUs: see Scheduler.
func (a Allocation) UnsetGPUs(env Env, told string, n NodeGPUs) (GPUChoice, bool) {
	return a.rules().UnsetGPUs(a, env, told, n)
}

// CheckGPUs: see Scheduler.
func (a Allocation) CheckGPUs(env Env, told string, gpus, all []gpu.GPU) []string {
	return a.rules().CheckGPUs(a, env, told, gpus, all)
}

// BoundCPUs is the warning of the first scheduler whose launcher bound
// this task to fewer CPUs than its cgroup allows, asked of every
// scheduler: a launcher's binding variables count wherever they are set,
// as its rank variables do.
func BoundCPUs(env Env, cpus, cgroup cpuset.Set) string {
	for _, s := range schedulers {
		if w := s.BoundCPUs(env, cpus, cgroup); w != "" {
			return w
		}
	}
	return ""
}

// FromStep: see Scheduler.
func (a Allocation) FromStep(source string) bool { return a.rules().FromStep(source) }

// OnePerNode: see Scheduler.
func (a Allocation) OnePerNode(n int) error { return a.rules().OnePerNode(a, n) }

// OnePerNodeFix: see Scheduler.
func (a Allocation) OnePerNodeFix(n int) string { return a.rules().OnePerNodeFix(a, n) }

// ChildOfBatchShell reports whether process pid, child of ppid, was
// forked by the batch script's shell rather than exec'd by it.
func (a Allocation) ChildOfBatchShell(pid, ppid int) bool {
	return a.BatchShellPID > 0 && a.BatchShellPID == ppid && a.BatchShellPID != pid
}

// Words: see Scheduler.
func (a Allocation) Words() string { return a.rules().Words(a) }

// noRules is a scheduler whose environment decides nothing beyond what
// Read reads: embedded by those that need none of the rules.
type noRules struct{}

func (noRules) UnsetGPUs(Allocation, Env, string, NodeGPUs) (GPUChoice, bool) {
	return GPUChoice{}, false
}
func (noRules) CheckGPUs(Allocation, Env, string, []gpu.GPU, []gpu.GPU) []string { return nil }
func (noRules) BoundCPUs(Env, cpuset.Set, cpuset.Set) string                     { return "" }
func (noRules) StepLocalRank(Allocation, Env, int) (LocalRank, bool, error) {
	return LocalRank{}, false, nil
}
func (noRules) StepGlobalRank(Allocation, Env) (GlobalRank, bool) { return GlobalRank{}, false }
func (noRules) FromStep(string) bool                              { return false }
func (noRules) OnePerNode(Allocation, int) error                  { return nil }
func (noRules) OnePerNodeFix(Allocation, int) string              { return "" }
