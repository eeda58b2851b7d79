//go:build cgo

// This file and simulated_cgo.go are the only ones of gpulaunch that
// import go-nvml: they adapt the vendor interface (C return codes,
// fixed-size arrays, device handles) into pkg/gpu's plain structs and Go
// errors.

package nvml

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// library is a gpu.Source over any gonvml.Interface: the real libnvidia-ml or
// a simulated node's mock (simulated_cgo.go).
type library struct {
	lib     gonvml.Interface
	backend string
	sysfs   fs.FS // where numa_node / local_cpulist are read when NVML does not say; may be nil
	// nodes are the machine's NUMA nodes, which the Grace rule
	// (gpu.HostMemoryNode) asks whether a node NVML names has CPUs: sysfs's
	// on a real machine, the description's for a simulated one; nil: not
	// known
	nodes   gpu.NUMANodes
	maxCPUs int // how many CPUs an affinity query asks about

	mu      sync.Mutex
	handles map[string]gonvml.Device // UUID → handle, filled by Inventory
	// lastSeen is, per GPU by UUID, the newest timestamp of the last
	// per-process samples read (processUtil): the next read asks for
	// those since, so that each sample covers the time since the last.
	lastSeen map[string]uint64
}

// Library is NVML for gpu.Open: the real library, and go-nvml's mocks for
// the simulated NVIDIA nodes.
var Library gpu.NVML = nvmlLibrary{}

type nvmlLibrary struct{}

func (nvmlLibrary) Open(root fs.FS) (gpu.Source, error) { return OpenNVML(root) }

func (nvmlLibrary) Simulate(t gpu.Topology, usageDir string) (gpu.Source, error) {
	return simulatedSource(t, usageDir)
}

// OpenNVML loads libnvidia-ml.so.1 and initialises it. sysfs (the machine's
// root, normally os.DirFS("/")) fills in NUMA locality that NVML lacks.
func OpenNVML(sysfs fs.FS) (gpu.Source, error) {
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, gpu.ErrNoLibrary
		}
		return nil, fmt.Errorf("NVML init: %w", ret)
	}
	l := newLibrary(lib, "nvml", sysfs, 0)
	l.nodes = gpu.NewSysfsNodes(sysfs)
	return l, nil
}

func newLibrary(lib gonvml.Interface, backend string, sysfs fs.FS, maxCPUs int) *library {
	if maxCPUs <= 0 {
		maxCPUs = 4096
	}
	return &library{lib: lib, backend: backend, sysfs: sysfs, maxCPUs: maxCPUs, handles: map[string]gonvml.Device{}, lastSeen: map[string]uint64{}}
}

func (l *library) Close() error {
	if ret := l.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %w", ret)
	}
	return nil
}

func (l *library) Inventory() (gpu.Node, error) {
	node := gpu.Node{Backend: l.backend, Vendor: gpu.NVIDIA}
	if v, ret := l.lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		node.Driver = v
	}
	if v, ret := l.lib.SystemGetCudaDriverVersion(); ret == gonvml.SUCCESS {
		node.CUDAVersion = cudaVersion(v)
	}
	count, ret := l.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return gpu.Node{}, fmt.Errorf("NVML device count: %w", ret)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range count {
		dev, ret := l.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			// Under a device cgroup NVML may count GPUs it may not open:
			// they belong to another job, so they are skipped, not fatal.
			node.Warnings = append(node.Warnings, fmt.Sprintf("NVML GPU %d skipped: %v", i, ret))
			continue
		}
		g, err := l.describe(dev, i)
		if err != nil {
			node.Warnings = append(node.Warnings, fmt.Sprintf("NVML GPU %d skipped: %v", i, err))
			continue
		}
		l.handles[g.UUID] = dev
		g.MIG, node.Warnings = l.migDevices(dev, g, node.Warnings)
		node.GPUs = append(node.GPUs, g)
	}
	sort.SliceStable(node.GPUs, func(i, j int) bool { return node.GPUs[i].BusID < node.GPUs[j].BusID })
	return node, nil
}

// cudaVersion is NVML's CUDA driver version, 1000 × major + 10 × minor
// (13010), as "13.1" (cuda.h's CUDA_VERSION encoding; nvidia-smi prints
// the same).
func cudaVersion(v int) string {
	return gpu.Version{Major: v / 1000, Minor: v % 1000 / 10}.String()
}

// cudaDriverVersion is cudaVersion's inverse, for a simulated node's
// description; ok is false where it gives none.
func cudaDriverVersion(s string) (int, bool) {
	v, err := gpu.ParseVersion(s, "cuda_version")
	if err != nil {
		return 0, false
	}
	return v.Major*1000 + v.Minor*10, true
}

func (l *library) describe(dev gonvml.Device, index int) (gpu.GPU, error) {
	uuid, ret := dev.GetUUID()
	if ret != gonvml.SUCCESS {
		return gpu.GPU{}, fmt.Errorf("uuid: %w", ret)
	}
	pci, ret := dev.GetPciInfo()
	if ret != gonvml.SUCCESS {
		return gpu.GPU{}, fmt.Errorf("PCI info: %w", ret)
	}
	bus, err := gpu.NormalizeBusID(cString(pci.BusId[:]))
	if err != nil {
		return gpu.GPU{}, err
	}
	g := gpu.GPU{Vendor: gpu.NVIDIA, UUID: uuid, BusID: bus, Index: index, Minor: -1, NUMANode: -1}
	if name, ret := dev.GetName(); ret == gonvml.SUCCESS {
		g.Name = name
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); ret == gonvml.SUCCESS {
		g.ComputeCapability = gpu.Version{Major: major, Minor: minor}.String()
	}
	if minor, ret := dev.GetMinorNumber(); ret == gonvml.SUCCESS {
		g.Minor = minor
	}
	if mem, ret := dev.GetMemoryInfo(); ret == gonvml.SUCCESS {
		g.MemoryBytes = mem.Total
	}
	if words, ret := dev.GetCpuAffinityWithinScope(l.maxCPUs, gonvml.AFFINITY_SCOPE_NODE); ret == gonvml.SUCCESS {
		g.LocalCPUs = maskToSet(words)
	}
	// The nodes NVML's memory affinity names, through the Grace rule
	// (gpu.HostMemoryNode: never a node without CPUs). GetNumaNodeId is
	// not asked: on coherent platforms (Grace) it names the GPU's own
	// memory node, where host allocations must not be bound.
	if words, ret := dev.GetMemoryAffinity(64, gonvml.AFFINITY_SCOPE_NODE); ret == gonvml.SUCCESS {
		g.NUMANode = gpu.HostMemoryNode(maskToSet(words).List(), g.LocalCPUs, l.nodes)
	}
	if g.NUMANode < 0 || g.LocalCPUs.IsEmpty() {
		numa, cpus := gpu.SysfsLocality(l.sysfs, bus)
		if g.NUMANode < 0 {
			g.NUMANode = numa
		}
		if g.LocalCPUs.IsEmpty() {
			g.LocalCPUs = cpus
		}
	}
	return g, nil
}

func (l *library) migDevices(dev gonvml.Device, parent gpu.GPU, warnings []string) ([]gpu.GPU, []string) {
	current, _, ret := dev.GetMigMode()
	if ret != gonvml.SUCCESS || current != gonvml.DEVICE_MIG_ENABLE {
		return nil, warnings
	}
	n, ret := dev.GetMaxMigDeviceCount()
	if ret != gonvml.SUCCESS {
		return nil, append(warnings, fmt.Sprintf("GPU %s: MIG device count: %v", parent.UUID, ret))
	}
	var out []gpu.GPU
	for j := range n {
		mig, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret != gonvml.SUCCESS {
			continue // an unpopulated MIG slot
		}
		uuid, ret := mig.GetUUID()
		if ret != gonvml.SUCCESS {
			continue
		}
		m := gpu.GPU{Vendor: gpu.NVIDIA, UUID: uuid, BusID: parent.BusID, Index: parent.Index, Minor: parent.Minor,
			NUMANode: parent.NUMANode, LocalCPUs: parent.LocalCPUs, Parent: parent.UUID, ComputeCapability: parent.ComputeCapability}
		if name, ret := mig.GetName(); ret == gonvml.SUCCESS {
			m.Name = name
		}
		if mem, ret := mig.GetMemoryInfo(); ret == gonvml.SUCCESS {
			m.MemoryBytes = mem.Total
		}
		l.handles[uuid] = mig
		out = append(out, m)
	}
	return out, warnings
}

func (l *library) Usage(uuids []string) ([]gpu.Usage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]gpu.Usage, 0, len(uuids))
	var errs []error
	for _, id := range uuids {
		dev, ok := l.handles[id]
		if !ok {
			errs = append(errs, fmt.Errorf("GPU %s is not in the inventory", id))
			continue
		}
		u := gpu.Usage{UUID: id, Utilization: -1}
		if r, ret := dev.GetUtilizationRates(); ret == gonvml.SUCCESS {
			u.Utilization = int(r.Gpu)
		}
		if m, ret := dev.GetMemoryInfo(); ret == gonvml.SUCCESS {
			u.MemoryUsed = m.Used
		}
		if procs, ret := dev.GetComputeRunningProcesses(); ret == gonvml.SUCCESS {
			for _, p := range procs {
				u.Processes = append(u.Processes, gpu.GPUProcess{PID: int(p.Pid), MemoryUsed: p.UsedGpuMemory})
			}
		}
		u.ProcessUtil, u.PerProcess = l.processUtil(id, dev)
		out = append(out, u)
	}
	return out, errors.Join(errs...)
}

// processUtil reads the per-process samples of GPU id since the last
// read (go-nvml's Device.GetProcessUtilization; its
// GetProcessesUtilizationInfo passes no buffer and cannot return them),
// and says whether it could: per NVML's answer, in order,
//  1. SUCCESS: the samples; the newest timestamp among them is where the
//     next read starts (lastSeen; the first read passes 0, the driver's
//     whole buffer).
//  2. NOT_FOUND: no process used the GPU since the last read: read, and
//     every process had 0.
//  3. INSUFFICIENT_SIZE with no sample: go-nvml's answer where the
//     driver counted none on its sizing call: as 2.
//  4. INSUFFICIENT_SIZE with samples: more came between go-nvml's sizing
//     call and its read; asked once more, and then as 5.
//  5. anything else (NOT_SUPPORTED on a MIG device or a GPU before
//     Maxwell, an error): not read; the caller's figure is the GPU's.
//
// A process may have several samples in one answer (the driver samples
// more often than gpulaunch reads): its figure is their mean, the share
// of the window its kernels ran, comparable with the GPU's utilisation,
// which NVML also averages over its period — the peak would count the
// busiest instant as the whole window.
func (l *library) processUtil(id string, dev gonvml.Device) ([]gpu.ProcessUtil, bool) {
	samples, ret := dev.GetProcessUtilization(l.lastSeen[id])
	if ret == gonvml.ERROR_INSUFFICIENT_SIZE && len(samples) > 0 {
		samples, ret = dev.GetProcessUtilization(l.lastSeen[id])
	}
	switch {
	case ret == gonvml.SUCCESS:
	case ret == gonvml.ERROR_NOT_FOUND, ret == gonvml.ERROR_INSUFFICIENT_SIZE && len(samples) == 0:
		return nil, true
	default:
		return nil, false
	}
	return meanPerProcess(samples, l.lastSeen, id), true
}

// meanPerProcess is one sample per process, the mean of its samples'
// SM% (processUtil), in the order of each process's first sample; it
// moves lastSeen[id] to the newest timestamp among them.
func meanPerProcess(samples []gonvml.ProcessUtilizationSample, lastSeen map[string]uint64, id string) []gpu.ProcessUtil {
	var out []gpu.ProcessUtil
	at := map[uint32]int{}
	n := map[uint32]int{}
	for _, s := range samples {
		lastSeen[id] = max(lastSeen[id], s.TimeStamp)
		k, ok := at[s.Pid]
		if !ok {
			k = len(out)
			at[s.Pid] = k
			out = append(out, gpu.ProcessUtil{PID: int(s.Pid)})
		}
		out[k].SM += int(s.SmUtil)
		n[s.Pid]++
	}
	for pid, k := range at {
		out[k].SM = min(100, (out[k].SM+n[pid]/2)/n[pid]) // rounded
	}
	return out
}

// maskToSet decodes NVML's affinity words: bit b of word w is id w*64+b
// (the words are C unsigned longs, 64 bits on every platform gpulaunch
// supports).
func maskToSet(words []uint) cpuset.Set {
	var ids []int
	for w, word := range words {
		for b := 0; b < 64; b++ {
			if uint64(word)&(1<<b) != 0 {
				ids = append(ids, w*64+b)
			}
		}
	}
	return cpuset.New(ids...)
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// simulated adds the described CPU layout, which NVML does not report.
type simulated struct {
	*library
	cpus []gpu.CPU
}

func (s *simulated) Inventory() (gpu.Node, error) {
	n, err := s.library.Inventory()
	n.CPUs = s.cpus
	return n, err
}

func setToMask(s cpuset.Set, n int) []uint {
	ids := s.List()
	size := max((n+63)/64, 1)
	if len(ids) > 0 {
		size = max(size, ids[len(ids)-1]/64+1)
	}
	words := make([]uint, size)
	for _, id := range ids {
		words[id/64] |= 1 << (id % 64)
	}
	return words
}

func maxID(cpus []gpu.CPU) int {
	m := 0
	for _, c := range cpus {
		m = max(m, c.ID)
	}
	return m
}
