package binding

import (
	"fmt"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cgroup"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// World is everything Reconcile reads from outside, gathered once by
// ReadWorld (or written as a literal in tests).
type World struct {
	Node     gpu.Node
	Topology Topology
	Env      sched.Env
	// Affinity is sched_getaffinity(0) of this process.
	Affinity cpuset.Set
	Cgroup   cgroup.Cgroup
	// MemsAllowed is Mems_allowed_list of /proc/self/status; empty when unknown.
	MemsAllowed cpuset.Set
	Hostname    string
}

// Allocation is what this process may use.
type Allocation struct {
	Hostname string `json:"hostname,omitempty"`
	Backend  string `json:"gpu_backend"`
	Driver   string `json:"driver,omitempty"`
	// CUDAVersion is the node's (gpu.Node.CUDAVersion): "" when unknown.
	CUDAVersion string `json:"cuda_version,omitempty"`
	// GPUs are this process's GPUs in the order CUDA numbers them.
	GPUs []gpu.GPU `json:"gpus"`
	// Vendor made the GPUs; "" when there is none.
	Vendor gpu.Vendor `json:"vendor,omitempty"`
	// Ordinal maps a device's UUID to the ordinal its runtime gives it
	// among the devices this process can open (CUDA's and ROCR's index,
	// Level Zero's FLAT device), for --gpu-ids index and ZE_AFFINITY_MASK;
	// CardOrdinal an Intel tile's to its GPU's (Level Zero's COMPOSITE).
	Ordinal     map[string]int `json:"-"`
	CardOrdinal map[string]int `json:"-"`
	// ZEHierarchy is ZE_FLAT_DEVICE_HIERARCHY on an Intel node: how the
	// instances' ZE_AFFINITY_MASK is written.
	ZEHierarchy string `json:"ze_hierarchy,omitempty"`
	// GPUReason says how GPUs was decided, in words for `info`.
	GPUReason string `json:"gpu_reason"`
	// NoGPUFix is what to do when GPUs is empty and GPUs are wanted,
	// beside -G 0: "" when GPUReason already says it (a Slurm job without
	// GPUs) or when nothing else would help.
	NoGPUFix string `json:"-"`
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
	// Sched is what the scheduler granted the job and step (its JSON key
	// is "slurm", as before Flux and PBS were read).
	Sched sched.Allocation `json:"slurm"`
	// LocalRank is set when a launcher started this process as one of
	// several ranks on this node.
	LocalRank *sched.LocalRank `json:"local_rank,omitempty"`
	Warnings  []string         `json:"warnings"`
}

// Reconcile decides the allocation. It is pure: the same World gives the
// same Allocation, which is what lets every rank of a node agree.
//
// GPUs, in this order of evidence, with the variable of the node's vendor
// (visibilityOf asks its gpuvendor value: CUDA_VISIBLE_DEVICES for NVIDIA,
// ROCR_VISIBLE_DEVICES for AMD, ZE_AFFINITY_MASK for Intel):
//  1. The variable set: its entries resolved against the GPUs this process
//     can open, in the order the vendor's runtime numbers them. With
//     ConstrainDevices the device cgroup hides the job's other GPUs and
//     Slurm renumbers from 0; without it Slurm writes global indices;
//     both resolve the same way.
//  2. Unset inside a Slurm job means "no GPU" (Slurm unsets the variables
//     when none was allocated), except when SLURM_GPUS_ON_NODE says GPUs
//     were given (--gpu-bind=none, no_gpu_env): then the openable GPUs if
//     a cgroup constrains them, else SLURM_STEP_GPUS / SLURM_JOB_GPUS as
//     global PCI-order indices.
//  3. Unset inside an salloc shell on the submit host (SLURMD_NODENAME
//     unset): no GPU; the job's GPUs are on another machine.
//     Rules 2 and 3 are the scheduler's (sched.Allocation.UnsetGPUs):
//     Flux and PBS say nothing more than the variable, and rule 4 holds.
//  4. Unset outside Slurm: every GPU this process can open.
//  5. AMD: HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES, then selects
//     among the GPUs ROCR left, numbering them from 0, as HIP does
//     (innerList, for a vendor whose value has an inner list) — except the
//     same list Slurm writes into both, which is one selection, not two.
//
// A GPU with MIG mode on stands for its MIG devices, an Intel GPU for its
// tiles (ZE_FLAT_DEVICE_HIERARCHY's FLAT, Level Zero's default).
func Reconcile(w World) (Allocation, error) {
	a := Allocation{Hostname: w.Hostname, Backend: w.Node.Backend, Vendor: w.Node.Vendor, Driver: w.Node.Driver, CUDAVersion: w.Node.CUDAVersion, Topology: w.Topology}
	a.Warnings = append(a.Warnings, w.Node.Warnings...)
	job, warn := sched.Detect(w.Env)
	a.Sched = job
	a.Warnings = append(a.Warnings, warn...)
	lr, ok, err := sched.DetectLocalRank(w.Env, job, MaxInstances)
	if err != nil {
		return Allocation{}, err
	}
	if ok {
		a.LocalRank = &lr
	}
	var openable []gpu.GPU
	for _, g := range w.Node.GPUs {
		if g.Hidden {
			a.DevicesConstrained = true
			continue
		}
		openable = append(openable, g)
	}
	a.Ordinal, a.CardOrdinal = gpuvendor.Ordinals(openable)
	vis := a.visibilityOf(w.Env)
	a.GPUs, a.GPUReason = a.chooseGPUs(w, openable, vis)
	if len(vis.inner) > 0 {
		a.GPUs, a.GPUReason = a.innerList(w.Env, vis, a.GPUs, a.GPUReason)
	}
	if len(w.Node.GPUs) == 0 {
		a.GPUReason, a.NoGPUFix = nodeWithoutGPU(w.Node)
	}
	a.GPUs = flatten(a.GPUs)
	a.CPUs, a.MemNodes = allowedCPUs(&a, w)
	a.MemoryLimit = w.Cgroup.MemoryLimit
	return a, nil
}

// nodeWithoutGPU says why a node shows no GPU, and what would help: a
// description lists none (add them to it); a driver shows none (describe
// what it cannot show in a node file).
func nodeWithoutGPU(n gpu.Node) (reason, fix string) {
	if n.Described {
		return "the " + n.Backend + " lists no GPU (its \"gpus\" list is empty)",
			"describe the GPUs in its \"gpus\" list (docs/topology.md)"
	}
	why := "no GPU device is visible"
	if len(n.Warnings) > 0 {
		why = strings.Join(n.Warnings, "; ")
	}
	return "the " + n.Backend + " backend sees no GPU on this node: " + why,
		"GPUs the driver cannot show (fake devices, a container without the driver) are described with --node-file FILE (docs/topology.md)"
}

// visibility is how a vendor's runtime is told its GPUs: a variable, how
// its value picks among the GPUs a process can open, and the runtime's
// lists inside it (gpuvendor.Vendor.Inner).
type visibility struct {
	name    string
	resolve func(value string, openable []gpu.GPU) (gpus []gpu.GPU, stop string)
	inner   []string
}

// visibilityOf is the variable of the node's vendor, read as its value
// says (gpuvendor.Vendor.Read): for Intel in the hierarchy the value is
// written in (ZE_FLAT_DEVICE_HIERARCHY).
func (a *Allocation) visibilityOf(env sched.Env) visibility {
	v := gpuvendor.Of(a.Vendor)
	r := v.Read(env)
	if r.Warning != "" {
		a.warn("%s", r.Warning)
	}
	a.ZEHierarchy = r.Model
	return visibility{r.Name, r.Resolve, v.Inner}
}

func (a *Allocation) chooseGPUs(w World, openable []gpu.GPU, vis visibility) ([]gpu.GPU, string) {
	val, set := w.Env.Lookup(vis.name)
	if set {
		gpus, stop := vis.resolve(val, openable)
		reason := fmt.Sprintf("%s=%s", vis.name, val)
		if strings.TrimSpace(val) == "" && len(gpus) == 0 {
			reason += " (empty: no GPU)"
		}
		if stop != "" {
			reason += ": " + stop
		}
		if a.DevicesConstrained && val != "" && val[0] >= '0' && val[0] <= '9' {
			reason += fmt.Sprintf(", renumbered from 0 over the %d GPU(s) the device cgroup lets this process open", len(openable))
		}
		if stop != "" {
			a.warn("%s=%s: the list ends early, as the runtime's does: %s; using %d GPU(s)", vis.name, val, stop, len(gpus))
		}
		a.Warnings = append(a.Warnings, a.Sched.CheckGPUs(w.Env, vis.name, gpus, w.Node.GPUs)...)
		return gpus, reason
	}
	if c, ok := a.Sched.UnsetGPUs(w.Env, vis.name, sched.NodeGPUs{All: w.Node.GPUs, Openable: openable, Constrained: a.DevicesConstrained}); ok {
		a.Warnings = append(a.Warnings, c.Warnings...)
		return c.GPUs, c.Reason
	}
	return openable, vis.name + " unset and no Slurm job: every GPU this process can open"
}

// innerList applies the runtime's own list to the GPUs its variable left
// (rule 5; only AMD has one, whose words the messages use: HIP's list
// inside ROCR's): the first of vis.inner set (HIP_VISIBLE_DEVICES, else
// CUDA_VISIBLE_DEVICES), numbering those GPUs from 0. Inside a job whose
// scheduler writes one list into every vendor's variable (Slurm's gres.conf
// without env flags), the two are one selection: applying it twice would
// leave HIP the wrong GPUs, or none.
func (a *Allocation) innerList(env sched.Env, vis visibility, gpus []gpu.GPU, reason string) ([]gpu.GPU, string) {
	var name, val string
	set := false
	for _, name = range vis.inner {
		if val, set = env.Lookup(name); set {
			break
		}
	}
	if !set {
		return gpus, reason
	}
	if outer, ok := env.Lookup(vis.name); ok && a.Sched.SameListInEveryVendorVar && strings.TrimSpace(outer) == strings.TrimSpace(val) {
		a.warn("%s and %s are both %s, as Slurm writes one list into every vendor's variable: taken as one selection (HIP would apply it again inside ROCR's); each instance gets %s alone", name, vis.name, val, vis.name)
		return gpus, reason
	}
	inner, stop := vis.resolve(val, gpus)
	reason += fmt.Sprintf("; then %s=%s among those, as HIP applies it", name, val)
	if stop != "" {
		a.warn("%s=%s: the list ends early: %s; using %d GPU(s)", name, val, stop, len(inner))
		reason += ": " + stop
	}
	return inner, reason
}

// flatten lists the devices the GPUs stand for: a GPU's MIG devices, an
// Intel GPU's tiles, else the GPU.
func flatten(gpus []gpu.GPU) []gpu.GPU {
	return gpu.Node{GPUs: gpus}.Flatten()
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
		} else if bound := sched.BoundCPUs(w.Env, cpus, w.Cgroup.CPUs); bound != "" {
			a.warn("%s", bound)
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
	// Memory goes to the layout's nodes only: those with CPUs. Mems_allowed
	// also lists CPU-less nodes (a GH200's HBM, CXL memory), which are
	// dropped, never used to widen a cgroup's {0,4} to every CPU node.
	nodes := cpuset.New(w.Topology.NUMANodes()...)
	if in := mems.Intersect(nodes); !in.IsEmpty() {
		mems = in
	} else {
		mems = nodes
	}
	return cpus, mems
}

func (a *Allocation) warn(format string, args ...any) {
	a.Warnings = append(a.Warnings, fmt.Sprintf(format, args...))
}

func busList(gs []gpu.GPU) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.BusID
	}
	return strings.Join(s, ",")
}
