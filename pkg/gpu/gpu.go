package gpu

import (
	"errors"
	"fmt"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// Vendor is who made a GPU, by name: which backend finds it (backends)
// and, in pkg/gpuvendor's value of that name, how a process is told its
// GPUs.
type Vendor string

// Vendors.
const (
	NVIDIA Vendor = "nvidia"
	AMD    Vendor = "amd"
	Intel  Vendor = "intel"
)

// Node is one machine's inventory.
type Node struct {
	// Backend names where the inventory came from: "nvml", "sysfs",
	// "kfd", "simulated dgx-h100 (go-nvml mock)", "topology file x.json".
	Backend string `json:"backend"`
	// Vendor made every GPU of the node; "" when it has none.
	Vendor Vendor `json:"vendor,omitempty"`
	// Driver is the driver's version, "" when unknown.
	Driver string `json:"driver,omitempty"`
	// CUDAVersion is the newest CUDA the driver runs, "13.1" (NVML's
	// nvmlSystemGetCudaDriverVersion; a description's cuda_version); ""
	// when unknown: the driver's files do not say (the sysfs backend).
	// MPS serves more clients per GPU from CUDA 13.1 (mps.ClientLimit).
	CUDAVersion string `json:"cuda_version,omitempty"`
	// GPUs are the GPUs the backend can see, in PCI bus order.
	GPUs []GPU `json:"gpus"`
	// CPUs is the CPU layout when the backend describes it (simulated and
	// described nodes); nil means "read it from this machine's sysfs".
	CPUs []CPU `json:"cpus,omitempty"`
	// ReservedCPUs of a described node are kept for the system (LUMI's
	// first core of every CCD, Aurora's cores 0 and 52): no job gets them.
	ReservedCPUs cpuset.Set `json:"reserved_cpus,omitempty"`
	// Warnings say what the backend could not find out and what it assumed.
	Warnings []string `json:"warnings,omitempty"`
	// Described: the GPUs come from a description (a topology or node
	// file, a simulated node) rather than a driver, so that "no GPU"
	// means the description lists none.
	Described bool `json:"-"`
}

// GPU is one GPU, or one device it splits into: an NVIDIA MIG device, an
// Intel tile.
type GPU struct {
	Vendor Vendor `json:"vendor,omitempty"`
	// UUID identifies the device to gpulaunch, and is what the vendor's
	// visibility variable accepts where it takes ids: NVIDIA's GPU-… and
	// MIG-…, AMD's GPU-<unique id in hex> (ROCR_VISIBLE_DEVICES). Intel's
	// ZE_AFFINITY_MASK takes ordinals only: an Intel card or tile has a
	// derived id.
	UUID string `json:"uuid"`
	// BusID is the PCI address in sysfs form: 4-digit domain, lower case
	// ("0000:3b:00.0"). NVML's 8-digit upper-case form is normalised at the
	// edge so ids compare as strings.
	BusID string `json:"pci_bus_id"`
	// Index is the backend's enumeration index. It is informative only:
	// drivers renumber under device cgroups, so it is never an identity.
	Index int `json:"index"`
	Minor int `json:"minor"` // N of /dev/nvidiaN, /dev/dri/renderD<N>; -1 when unknown
	// Device is the device file whose permission a device cgroup decides:
	// /dev/nvidia<Minor> unless set; an AMD or Intel GPU's render node.
	Device string `json:"device,omitempty"`
	Name   string `json:"name,omitempty"`
	// ComputeCapability is an NVIDIA GPU's architecture, "9.0" (NVML's
	// nvmlDeviceGetCudaComputeCapability; a description's
	// compute_capability); "" when unknown. MPS serves fewer clients
	// before Volta (7.0: mps.ClientLimit).
	ComputeCapability string `json:"compute_capability,omitempty"`
	// MemoryBytes is the GPU's own memory.
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// NUMANode is the CPU-side NUMA node the GPU is attached to, -1 when
	// the firmware does not say (sysfs numa_node = -1).
	NUMANode int `json:"numa_node"`
	// LocalCPUs are the CPUs the driver or sysfs call local to the GPU;
	// empty when unknown.
	LocalCPUs cpuset.Set `json:"local_cpus"`
	// Hidden marks a GPU present on the node but not openable by this
	// process (a device cgroup denies it): it belongs to another job.
	Hidden bool `json:"hidden,omitempty"`
	// Parent is the parent GPU's UUID for a MIG device or a tile.
	Parent string `json:"parent,omitempty"`
	// MIG lists an NVIDIA GPU's MIG devices when MIG mode is on.
	MIG []GPU `json:"mig,omitempty"`
	// Tiles lists an Intel GPU's tiles (Level Zero's sub-devices); Tile
	// is a tile's number on its card, from 0.
	Tiles []GPU `json:"tiles,omitempty"`
	Tile  int   `json:"tile,omitempty"`
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
	// PerProcess: the backend read per-process samples of this GPU's use
	// (NVML's nvmlDeviceGetProcessUtilization, or the declarations of a
	// simulated node), so that a process absent from ProcessUtil used
	// none of it since the last sample — 0, not unknown. False where none
	// can be read: a MIG device, AMD and Intel GPUs, NVML's error.
	PerProcess bool `json:"per_process,omitempty"`
	// ProcessUtil are those samples, one per process that used the GPU
	// since the last sample. Under MPS the driver gives the clients' use
	// to the MPS server (nvidia-cuda-mps-server): a client has no sample
	// of its own.
	ProcessUtil []ProcessUtil `json:"process_util,omitempty"`
}

// ProcessUtil is one process's use of a GPU since the last sample.
type ProcessUtil struct {
	PID int `json:"pid"`
	// SM is the share of time its kernels ran on the GPU's SMs, in
	// percent (NVML's smUtil, nvidia-smi pmon's "sm").
	SM int `json:"sm_pct"`
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
	ErrNoTelemetry = errors.New("no GPU telemetry")
)

// Address is where a device is, for people: its PCI address, and for a
// tile its number after a slash (0000:18:00.0/1), since a card's tiles
// share the card's address. A MIG device shows its GPU's address (its
// UUID names it).
func (g GPU) Address() string {
	if g.Parent != "" && backendOf(g.Vendor).tiles {
		return fmt.Sprintf("%s/%d", g.BusID, g.Tile)
	}
	return g.BusID
}

// split makes a GPU's n tiles: each a copy of the GPU (same bus and
// locality) with an id of its own and its share of the memory (a Max 1550
// has 128 GiB, 64 on each tile, as Level Zero reports it in FLAT).
func (g GPU) split(n int) []GPU {
	tiles := make([]GPU, n)
	for k := range tiles {
		tiles[k] = g
		tiles[k].MemoryBytes = g.MemoryBytes / uint64(n)
		tiles[k].UUID, tiles[k].Parent, tiles[k].Tile = fmt.Sprintf("%s.%d", g.UUID, k), g.UUID, k
	}
	return tiles
}

// Hide marks g not openable by this process, and its tiles and MIG
// devices with it: a device cgroup denies the card's device file, which
// every part of the card is reached through.
func (g *GPU) Hide() {
	g.Hidden = true
	for i := range g.Tiles {
		g.Tiles[i].Hidden = true
	}
	for i := range g.MIG {
		g.MIG[i].Hidden = true
	}
}

// Flatten lists every schedulable device: each GPU, or instead its MIG
// devices when MIG mode is on (a CUDA process can use one MIG device
// only), or its tiles (Level Zero's FLAT hierarchy, the default, shows
// each tile as a device of its own).
func (n Node) Flatten() []GPU {
	var out []GPU
	for _, g := range n.GPUs {
		switch {
		case len(g.MIG) > 0:
			out = append(out, g.MIG...)
		case len(g.Tiles) > 0:
			out = append(out, g.Tiles...)
		default:
			out = append(out, g)
		}
	}
	return out
}
