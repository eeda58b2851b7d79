// Package nvml is gpulaunch's view of a node's hardware: its GPUs (identity,
// PCI address, memory, NUMA locality, MIG devices) and, for simulated and
// described nodes, its CPU layout.
//
// The rest of gpulaunch sees only the plain structs and the Source interface
// here. Four backends implement it:
//
//   - real NVML through go-nvml (nvml_cgo.go, the only file importing it);
//   - simulated nodes (Simulate): go-nvml's mock DGX servers given the
//     topology those machines really have, read through the same adapter;
//   - topology and node files (ReadTopologyFile, ParseNodeFile in
//     topology.go): a JSON description of any node;
//   - no NVML (sysfsSource in source.go): /proc/driver/nvidia and sysfs,
//     with a warning saying what that cannot know.
package nvml

import (
	"errors"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// Node is one machine's inventory.
type Node struct {
	// Backend names where the inventory came from: "nvml", "sysfs",
	// "simulated dgx-h100 (go-nvml mock)", "topology file x.json".
	Backend string `json:"backend"`
	// Driver is the NVIDIA driver version, "" when unknown.
	Driver string `json:"driver,omitempty"`
	// GPUs are the GPUs the backend can see, in PCI bus order.
	GPUs []GPU `json:"gpus"`
	// CPUs is the CPU layout when the backend describes it (simulated and
	// described nodes); nil means "read it from this machine's sysfs".
	CPUs []CPU `json:"cpus,omitempty"`
	// Warnings say what the backend could not find out and what it assumed.
	Warnings []string `json:"warnings,omitempty"`
}

// GPU is one physical GPU or one MIG device.
type GPU struct {
	UUID string `json:"uuid"`
	// BusID is the PCI address in sysfs form: 4-digit domain, lower case
	// ("0000:3b:00.0"). NVML's 8-digit upper-case form is normalised at the
	// edge so ids compare as strings.
	BusID string `json:"pci_bus_id"`
	// Index is the backend's enumeration index. It is informative only:
	// NVML renumbers under device cgroups, so it is never an identity.
	Index int `json:"nvml_index"`
	Minor int `json:"minor"` // N of /dev/nvidiaN; -1 when unknown
	// Device is the device file when it is not /dev/nvidia<Minor> (node
	// files of machines with fake or relocated devices).
	Device string `json:"device,omitempty"`
	Name   string `json:"name,omitempty"`
	// MemoryBytes is the GPU's own memory.
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// NUMANode is the CPU-side NUMA node the GPU is attached to, -1 when
	// the firmware does not say (sysfs numa_node = -1).
	NUMANode int `json:"numa_node"`
	// LocalCPUs are the CPUs NVML or sysfs call local to the GPU; empty
	// when unknown.
	LocalCPUs cpuset.Set `json:"local_cpus"`
	// Hidden marks a GPU present on the node but not openable by this
	// process (a device cgroup denies it): it belongs to another job.
	Hidden bool `json:"hidden,omitempty"`
	// Parent is the parent GPU's UUID for a MIG device, "" otherwise.
	Parent string `json:"parent,omitempty"`
	// MIG lists a GPU's MIG devices when MIG mode is on.
	MIG []GPU `json:"mig,omitempty"`
}

// CPU is one logical CPU of a described node.
type CPU struct {
	ID     int `json:"cpu"`
	Core   int `json:"core"` // unique per node: the lowest CPU id among the core's threads
	Socket int `json:"socket"`
	NUMA   int `json:"numa"`
}

// Usage is one GPU's state at a sampling instant.
type Usage struct {
	UUID string `json:"uuid"`
	// Utilization is the share of time a kernel ran over the last sample
	// period, in percent; -1 when the backend cannot tell.
	Utilization int    `json:"utilization_pct"`
	MemoryUsed  uint64 `json:"memory_used_bytes"`
	// Processes are the compute processes holding a context on the GPU.
	Processes []GPUProcess `json:"processes,omitempty"`
}

// GPUProcess is a process with a context on a GPU.
type GPUProcess struct {
	PID        int    `json:"pid"`
	MemoryUsed uint64 `json:"memory_used_bytes"`
}

// Source is a backend.
type Source interface {
	// Inventory lists the node's GPUs.
	Inventory() (Node, error)
	// Usage samples the given GPUs (by UUID). Backends without telemetry
	// return ErrNoTelemetry.
	Usage(uuids []string) ([]Usage, error)
	// Close releases the backend (NVML shutdown).
	Close() error
}

// Errors a caller branches on.
var (
	// ErrNoLibrary: libnvidia-ml.so.1 could not be loaded (no driver here).
	ErrNoLibrary = errors.New("NVML library libnvidia-ml.so.1 not found")
	// ErrNoCgo: this gpulaunch was built without cgo, so it cannot call NVML.
	ErrNoCgo = errors.New("this gpulaunch was built without cgo and cannot load NVML")
	// ErrNoTelemetry: the backend cannot sample utilisation.
	ErrNoTelemetry = errors.New("this GPU backend has no utilisation telemetry")
)

// Flatten lists every schedulable device: each GPU, or its MIG devices
// instead when MIG mode is on (a CUDA process can use one MIG device only).
func (n Node) Flatten() []GPU {
	var out []GPU
	for _, g := range n.GPUs {
		if len(g.MIG) == 0 {
			out = append(out, g)
			continue
		}
		out = append(out, g.MIG...)
	}
	return out
}
