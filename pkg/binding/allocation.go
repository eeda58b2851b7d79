package binding

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// World is everything Reconcile reads from outside, gathered once by
// ReadWorld (or written as a literal in tests).
type World struct {
	Node     nvml.Node
	Topology Topology
	Env      Env
	// Affinity is sched_getaffinity(0) of this process.
	Affinity cpuset.Set
	Cgroup   Cgroup
	// MemsAllowed is Mems_allowed_list of /proc/self/status; empty when unknown.
	MemsAllowed cpuset.Set
	Hostname    string
}

// Allocation is what this process may use.
type Allocation struct {
	Hostname string `json:"hostname,omitempty"`
	Backend  string `json:"gpu_backend"`
	Driver   string `json:"driver,omitempty"`
	// GPUs are this process's GPUs in the order CUDA numbers them.
	GPUs []nvml.GPU `json:"gpus"`
	// CUDAIndex maps a GPU's UUID to the ordinal CUDA gives it among the
	// GPUs this process can open (PCI order), for apps that need integers.
	CUDAIndex map[string]int `json:"-"`
	// GPUReason says how GPUs was decided, in words for `info`.
	GPUReason string `json:"gpu_reason"`
	// DevicesConstrained: a device cgroup hides some of the node's GPUs, so
	// CUDA_VISIBLE_DEVICES indices are renumbered from 0 (ConstrainDevices).
	DevicesConstrained bool `json:"devices_constrained"`
	// CPUs this process may run on: affinity ∩ cgroup cpuset.
	CPUs cpuset.Set `json:"cpus"`
	// StepCPUs are the CPUs every rank of this Slurm step or launch may
	// use: the cgroup cpuset ∩ the node's layout; empty without a cpuset
	// cgroup. Rank mode plans over them (RankSlot).
	StepCPUs cpuset.Set `json:"step_cpus,omitempty"`
	// MemNodes this process may allocate on.
	MemNodes cpuset.Set `json:"mem_nodes"`
	// MemoryLimit of the cgroup in bytes, 0 for none.
	MemoryLimit uint64   `json:"memory_limit_bytes,omitempty"`
	Topology    Topology `json:"-"`
	Slurm       Slurm    `json:"slurm"`
	// LocalRank is set when a launcher started this process as one of
	// several ranks on this node.
	LocalRank *LocalRank `json:"local_rank,omitempty"`
	Warnings  []string   `json:"warnings"`
}

// Reconcile decides the allocation. It is pure: the same World gives the
// same Allocation, which is what lets every rank of a node agree.
//
// GPUs, in this order of evidence:
//  1. CUDA_VISIBLE_DEVICES set: its entries resolved against the GPUs this
//     process can open in PCI order (Resolve). With ConstrainDevices the
//     device cgroup hides the job's other GPUs and Slurm renumbers from 0;
//     without it Slurm writes global indices; both resolve the same way.
//  2. Unset inside a Slurm job means "no GPU" (Slurm unsets the variable
//     when none was allocated), except when SLURM_GPUS_ON_NODE says GPUs
//     were given (--gpu-bind=none, no_gpu_env): then the openable GPUs if
//     a cgroup constrains them, else SLURM_STEP_GPUS / SLURM_JOB_GPUS as
//     global PCI-order indices.
//  3. Unset inside an salloc shell on the submit host (SLURMD_NODENAME
//     unset): no GPU; the job's GPUs are on another machine.
//  4. Unset outside Slurm: every GPU this process can open.
//
// A GPU with MIG mode on stands for its MIG devices.
func Reconcile(w World) (Allocation, error) {
	a := Allocation{Hostname: w.Hostname, Backend: w.Node.Backend, Driver: w.Node.Driver, Topology: w.Topology}
	a.Warnings = append(a.Warnings, w.Node.Warnings...)
	slurm, warn := ParseSlurm(w.Env)
	a.Slurm = slurm
	a.Warnings = append(a.Warnings, warn...)
	lr, ok, err := DetectLocalRank(w.Env, slurm)
	if err != nil {
		return Allocation{}, err
	}
	if ok {
		a.LocalRank = &lr
	}

	var openable []nvml.GPU
	for _, g := range w.Node.GPUs {
		if g.Hidden {
			a.DevicesConstrained = true
			continue
		}
		openable = append(openable, g)
	}
	a.CUDAIndex = map[string]int{}
	for i, g := range openable {
		a.CUDAIndex[g.UUID] = i
	}
	a.GPUs, a.GPUReason = a.chooseGPUs(w, openable)
	if len(w.Node.GPUs) == 0 {
		why := "no GPU device is visible"
		if len(w.Node.Warnings) > 0 {
			why = strings.Join(w.Node.Warnings, "; ")
		}
		a.GPUReason = "the " + w.Node.Backend + " backend sees no GPU on this node: " + why
	}
	a.GPUs = expandMIG(a.GPUs)

	a.CPUs, a.MemNodes = allowedCPUs(&a, w)
	a.MemoryLimit = w.Cgroup.MemoryLimit
	return a, nil
}

func (a *Allocation) chooseGPUs(w World, openable []nvml.GPU) ([]nvml.GPU, string) {
	s := a.Slurm
	val, set := w.Env.Lookup("CUDA_VISIBLE_DEVICES")
	if set {
		vd := ParseVisibleDevices(val, true)
		gpus, stop := vd.Resolve(openable)
		reason := fmt.Sprintf("CUDA_VISIBLE_DEVICES=%s", val)
		if strings.TrimSpace(val) == "" {
			reason += " (empty: no GPU)"
		}
		if stop != "" {
			reason += ": " + stop
		}
		if a.DevicesConstrained && vd.Kind == "index" {
			reason += fmt.Sprintf(", renumbered from 0 over the %d GPU(s) the device cgroup lets this process open", len(openable))
		}
		if stop != "" {
			a.warn("CUDA_VISIBLE_DEVICES=%s: the list ends early, as CUDA's does: %s; using %d GPU(s)", val, stop, len(gpus))
		}
		a.crossCheckSlurm(w, gpus)
		return gpus, reason
	}
	switch {
	case s.InJob() && s.NodeName == "":
		a.warn("this is an salloc shell on the submit host (SLURMD_NODENAME is unset): the job's GPUs are on its node; run gpulaunch there with srun, e.g. `srun --pty gpulaunch info`")
		return nil, "this is an salloc shell on the submit host, outside job " + s.JobID + "'s node: no GPU here (run gpulaunch through srun)"
	case s.InJob() && s.GPUsOnNode <= 0:
		return nil, "Slurm job " + s.JobID + " allocated no GPU on this node (CUDA_VISIBLE_DEVICES and SLURM_GPUS_ON_NODE unset); ask for GPUs with --gres=gpu:N or --gpus=N"
	case s.InJob():
		if a.DevicesConstrained {
			return openable, fmt.Sprintf("CUDA_VISIBLE_DEVICES unset but SLURM_GPUS_ON_NODE=%d: the %d GPU(s) the device cgroup lets this process open", s.GPUsOnNode, len(openable))
		}
		ids, name := s.StepGPUs, "SLURM_STEP_GPUS"
		if ids == nil {
			ids, name = s.JobGPUs, "SLURM_JOB_GPUS"
		}
		if gpus, ok := byGlobalIndex(w.Node.GPUs, ids); ok {
			return gpus, fmt.Sprintf("CUDA_VISIBLE_DEVICES unset; %s=%s as global PCI-order indices", name, joinInts(ids))
		}
		a.warn("SLURM_GPUS_ON_NODE=%d but neither CUDA_VISIBLE_DEVICES nor SLURM_STEP_GPUS/SLURM_JOB_GPUS name the GPUs: not using any", s.GPUsOnNode)
		return nil, "Slurm gave GPUs without saying which: no GPU"
	}
	return openable, "CUDA_VISIBLE_DEVICES unset and no Slurm job: every GPU this process can open"
}

// crossCheckSlurm compares the GPUs CUDA_VISIBLE_DEVICES resolved to with
// the global ids Slurm lists, when the inventory covers the whole node.
// A mismatch means gres.conf numbers GPUs other than by PCI bus id.
func (a *Allocation) crossCheckSlurm(w World, gpus []nvml.GPU) {
	s := a.Slurm
	ids, name := s.JobGPUs, "SLURM_JOB_GPUS"
	if s.InStep() {
		// In multi-task steps with per-task binding SLURM_STEP_GPUS is the
		// same in every task and need not name the task's own GPU.
		if s.TasksOnThisNode() != 1 {
			return
		}
		ids, name = s.StepGPUs, "SLURM_STEP_GPUS"
	}
	if ids == nil || len(gpus) == 0 {
		return
	}
	want, ok := byGlobalIndex(w.Node.GPUs, ids)
	if !ok {
		return
	}
	if !sameGPUs(want, gpus) {
		a.warn("%s=%s names GPUs %s by PCI order but CUDA_VISIBLE_DEVICES resolves to %s: gres.conf may number GPUs other than by PCI bus id; trusting CUDA_VISIBLE_DEVICES",
			name, joinInts(ids), busList(want), busList(gpus))
	}
}

func byGlobalIndex(all []nvml.GPU, ids []int) ([]nvml.GPU, bool) {
	if len(ids) == 0 {
		return nil, false
	}
	var out []nvml.GPU
	for _, id := range ids {
		if id >= len(all) {
			return nil, false
		}
		out = append(out, all[id])
	}
	return out, true
}

func sameGPUs(a, b []nvml.GPU) bool {
	key := func(gs []nvml.GPU) string {
		var ids []string
		for _, g := range gs {
			ids = append(ids, g.BusID)
		}
		sort.Strings(ids)
		return strings.Join(ids, ",")
	}
	return key(a) == key(b)
}

func expandMIG(gpus []nvml.GPU) []nvml.GPU {
	var out []nvml.GPU
	for _, g := range gpus {
		if len(g.MIG) > 0 {
			out = append(out, g.MIG...)
			continue
		}
		out = append(out, g)
	}
	return out
}

// allowedCPUs intersects the affinity mask with the cgroup cpuset and the
// node's layout, and memory nodes with Mems_allowed.
func allowedCPUs(a *Allocation, w World) (cpuset.Set, cpuset.Set) {
	cpus := w.Affinity
	if cpus.IsEmpty() {
		cpus = w.Topology.CPUs()
	}
	if !w.Cgroup.CPUs.IsEmpty() {
		if !cpus.IsSubsetOf(w.Cgroup.CPUs) {
			a.warn("CPU affinity %s reaches outside the cgroup cpuset %s; using the intersection", cpus, w.Cgroup.CPUs)
		} else if cpus.Size() < w.Cgroup.CPUs.Size() && w.Env["SLURM_CPU_BIND_TYPE"] != "" {
			a.warn("this task is bound to CPUs %s (SLURM_CPU_BIND=%s) while its cgroup allows %s: run gpulaunch with `srun --cpu-bind=none` to give its instances every CPU of the step",
				cpus, w.Env["SLURM_CPU_BIND"], w.Cgroup.CPUs)
		}
		cpus = cpus.Intersect(w.Cgroup.CPUs)
		a.StepCPUs = w.Cgroup.CPUs
	}
	if known := w.Topology.CPUs(); !known.IsEmpty() {
		if in := cpus.Intersect(known); in.IsEmpty() {
			a.warn("CPU affinity %s has no CPU of the node layout %s; using the whole layout", cpus, known)
			cpus = known
		} else {
			cpus = in
		}
		a.StepCPUs = a.StepCPUs.Intersect(known)
	}
	mems := w.MemsAllowed
	if !w.Cgroup.Mems.IsEmpty() {
		if mems.IsEmpty() {
			mems = w.Cgroup.Mems
		} else {
			mems = mems.Intersect(w.Cgroup.Mems)
		}
	}
	nodes := cpuset.New(w.Topology.NUMANodes()...)
	if mems.IsEmpty() || !mems.IsSubsetOf(nodes) {
		mems = nodes
	}
	return cpus, mems
}

func (a *Allocation) warn(format string, args ...any) {
	a.Warnings = append(a.Warnings, fmt.Sprintf(format, args...))
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func busList(gs []nvml.GPU) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.BusID
	}
	return strings.Join(s, ",")
}
