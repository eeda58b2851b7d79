//go:build cgo

package nvml

import (
	"fmt"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// mockModel is the GPU of one of go-nvml's mock DGX servers, as its
// pkg/nvml/mock/gpus says (go-nvml v0.13.4-0): every server has 8 of them.
// The simulated nodes are served on go-nvml's mock.Interface and
// mock.Device with these, not on the servers themselves, whose packages'
// initialisation (every GPU's MIG profile tables, a UUID generator) every
// start of gpulaunch paid, rank mode's included: scripts/bench-start.sh,
// before and after in one run of 200 interleaved starts, without the
// plotting library: `gpulaunch version` 21.4 → 16.8 ms (0.79×), rank mode
// 31.4 → 27.5 ms (0.87×); 340 page faults a start instead of 389-421.
type mockModel struct {
	name     string
	memoryMB uint64
}

// mockServerGPUs is the model and count of GPUs of the mock server a
// built-in node names (gpu.Topology.Mock).
func mockServerGPUs(server string) (mockModel, int, bool) {
	switch server {
	case "dgxa100":
		return mockModel{"Mock NVIDIA A100-SXM4-40GB", 40960}, 8, true
	case "dgxh100":
		return mockModel{"NVIDIA H100 80GB HBM3", 81920}, 8, true
	case "dgxh200":
		return mockModel{"NVIDIA H200 141GB HBM3e", 144384}, 8, true
	case "dgxb200":
		return mockModel{"NVIDIA B200 180GB HBM3e", 184320}, 8, true
	case "gh200":
		// no go-nvml server: a quad GH200 node as nvidia-smi names its
		// GPUs on Alps and Isambard-AI ("NVIDIA GH200 120GB", 97871 MiB)
		return mockModel{"NVIDIA GH200 120GB", 97871}, 4, true
	}
	return mockModel{}, 0, false
}

// simulatedSource serves a described node through go-nvml's mock of
// NVML's interface and reads it through the same adapter as real NVML, so
// simulated runs exercise the real code path. The mock server's model
// gives each GPU's name and memory; the topology (PCI addresses, NUMA,
// CPU affinity), telemetry and deterministic UUIDs come from the
// description.
func simulatedSource(t gpu.Topology, usageDir string) (gpu.Source, error) {
	if t.Mock == "" {
		return gpu.NewStaticSource(t.Node("simulated "+t.Name), usageDir), nil
	}
	model, count, ok := mockServerGPUs(t.Mock)
	if !ok {
		return nil, fmt.Errorf("simulated node %s: unknown go-nvml mock %q", t.Name, t.Mock)
	}
	if count != len(t.GPUs) {
		return nil, fmt.Errorf("simulated node %s: mock %s has %d GPUs, the description %d", t.Name, t.Mock, count, len(t.GPUs))
	}
	want := t.Node("")
	// The description is in PCI order already; the mock's index i is the
	// i-th GPU of the description.
	described := map[string]gpu.TopologyGPU{}
	for _, tg := range t.GPUs {
		bus, _ := gpu.NormalizeBusID(tg.PCI) // checked by t.Node
		described[bus] = tg
	}
	devices := make([]gonvml.Device, len(want.GPUs))
	for _, g := range want.GPUs {
		devices[g.Index] = simulatedDevice(g, numaAnswers(described[g.BusID], g), model, usageDir)
	}
	srv := &mock.Interface{
		InitFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:               func() gonvml.Return { return gonvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, gonvml.Return) { return t.Driver, gonvml.SUCCESS },
		// A description without a CUDA version is a driver that does not
		// say: NVML's answer for a function it lacks.
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) {
			if v, ok := cudaDriverVersion(t.CUDAVersion); ok {
				return v, gonvml.SUCCESS
			}
			return 0, gonvml.ERROR_FUNCTION_NOT_FOUND
		},
		DeviceGetCountFunc: func() (int, gonvml.Return) { return len(devices), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) {
			if i < 0 || i >= len(devices) {
				return nil, gonvml.ERROR_INVALID_ARGUMENT
			}
			return devices[i], gonvml.SUCCESS
		},
	}
	lib := newLibrary(srv, "simulated "+t.Name+" (go-nvml mock "+t.Mock+")", nil, maxID(want.CPUs)+1)
	lib.nodes = t.NUMANodes()
	return &simulated{library: lib, cpus: want.CPUs}, nil
}

// numaNodes is what a simulated GPU's NVML answers of its NUMA nodes.
type numaNodes struct {
	// affinity is nvmlDeviceGetMemoryAffinity's node: the description's
	// numa as written, before the Grace rule, as the driver names it
	affinity int
	// id is nvmlDeviceGetNumaNodeId's: the GPU's own memory node where it
	// has one (memory_numa: a Grace Hopper's, NVIDIA/cuCascade#119), else
	// its node
	id int
}

// numaAnswers is described GPU tg's numaNodes; g is it as described.
func numaAnswers(tg gpu.TopologyGPU, g gpu.GPU) numaNodes {
	n := numaNodes{affinity: g.NUMANode, id: g.NUMANode}
	if tg.NUMA != nil {
		n.affinity, n.id = *tg.NUMA, *tg.NUMA
	}
	if tg.MemoryNUMA != nil && *tg.MemoryNUMA >= 0 {
		n.id = *tg.MemoryNUMA
	}
	return n
}

// simulatedDevice is GPU g of the description as NVML's calls answer for
// it: its minor is its index, as on the mock servers; its NUMA nodes
// numa's; its utilisation, memory in use and processes are what the apps
// declared (declared.go).
func simulatedDevice(g gpu.GPU, numa numaNodes, model mockModel, usageDir string) *mock.Device {
	total := model.memoryMB << 20
	declared := func() gpu.Usage {
		if usageDir == "" {
			return gpu.Usage{}
		}
		return gpu.DeclaredUsage(usageDir, []string{g.UUID})[0]
	}
	return &mock.Device{
		GetUUIDFunc:        func() (string, gonvml.Return) { return g.UUID, gonvml.SUCCESS },
		GetNameFunc:        func() (string, gonvml.Return) { return model.name, gonvml.SUCCESS },
		GetMinorNumberFunc: func() (int, gonvml.Return) { return g.Index, gonvml.SUCCESS },
		GetCudaComputeCapabilityFunc: func() (int, int, gonvml.Return) {
			v, err := gpu.ParseVersion(g.ComputeCapability, "compute_capability")
			if err != nil {
				return 0, 0, gonvml.ERROR_NOT_SUPPORTED
			}
			return v.Major, v.Minor, gonvml.SUCCESS
		},
		GetPciInfoFunc: func() (gonvml.PciInfo, gonvml.Return) {
			var p gonvml.PciInfo
			nvmlForm := "0000" + strings.ToUpper(g.BusID) // NVML's 8-digit domain
			for k := 0; k < len(nvmlForm) && k < len(p.BusId)-1; k++ {
				p.BusId[k] = int8(nvmlForm[k])
			}
			return p, gonvml.SUCCESS
		},
		GetMemoryAffinityFunc: func(n int, _ gonvml.AffinityScope) ([]uint, gonvml.Return) {
			if numa.affinity < 0 {
				return nil, gonvml.ERROR_NOT_SUPPORTED
			}
			return setToMask(cpuset.New(numa.affinity), n), gonvml.SUCCESS
		},
		GetCpuAffinityWithinScopeFunc: func(n int, _ gonvml.AffinityScope) ([]uint, gonvml.Return) {
			return setToMask(g.LocalCPUs, n), gonvml.SUCCESS
		},
		GetCpuAffinityFunc: func(n int) ([]uint, gonvml.Return) { return setToMask(g.LocalCPUs, n), gonvml.SUCCESS },
		GetNumaNodeIdFunc:  func() (int, gonvml.Return) { return numa.id, gonvml.SUCCESS },
		GetMigModeFunc: func() (int, int, gonvml.Return) {
			return gonvml.DEVICE_MIG_DISABLE, gonvml.DEVICE_MIG_DISABLE, gonvml.SUCCESS
		},
		GetUtilizationRatesFunc: func() (gonvml.Utilization, gonvml.Return) {
			return gonvml.Utilization{Gpu: uint32(declared().Utilization)}, gonvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			used := declared().MemoryUsed
			return gonvml.Memory{Total: total, Used: used, Free: total - min(used, total)}, gonvml.SUCCESS
		},
		// The per-process samples are the declared ones (gpu.DeclaredUsage:
		// an MPS client's on its server), each stamped now, so that every
		// read is newer than the last one's lastSeen; none is NVML's
		// NOT_FOUND, "no process used the GPU since".
		GetProcessUtilizationFunc: func(lastSeen uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
			now := uint64(max(time.Now().UnixMicro(), 0))
			var out []gonvml.ProcessUtilizationSample
			for _, p := range declared().ProcessUtil {
				if now > lastSeen {
					out = append(out, gonvml.ProcessUtilizationSample{Pid: uint32(p.PID), TimeStamp: now, SmUtil: uint32(p.SM)})
				}
			}
			if len(out) == 0 {
				return nil, gonvml.ERROR_NOT_FOUND
			}
			return out, gonvml.SUCCESS
		},
		GetComputeRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			var out []gonvml.ProcessInfo
			for _, p := range declared().Processes {
				out = append(out, gonvml.ProcessInfo{Pid: uint32(p.PID), UsedGpuMemory: p.MemoryUsed})
			}
			return out, gonvml.SUCCESS
		},
	}
}
