//go:build cgo

package nvml

import (
	"fmt"
	"testing"
	"testing/fstest"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// Through NVML, the simulated 4×GH200 node's GPUs are each on its Grace's
// node, not on their own memory node (which NVML's NUMA node id names) —
// and so still where the description names a GPU's memory node as the
// node NVML's memory affinity gives, as a driver might.
func TestSimulatedGH200ThroughTheMock(t *testing.T) {
	desc, err := gpu.BuiltinTopology("alps-gh200")
	if err != nil {
		t.Fatal(err)
	}
	memoryNode := desc
	memoryNode.GPUs = append([]gpu.TopologyGPU(nil), desc.GPUs...)
	for i := range memoryNode.GPUs {
		g := &memoryNode.GPUs[i]
		g.NUMA, g.LocalCPUs = g.MemoryNUMA, fmt.Sprintf("%d-%d", 72*i, 72*i+71)
	}
	for name, top := range map[string]gpu.Topology{"as described": desc, "affinity the GPU memory node": memoryNode} {
		t.Run(name, func(t *testing.T) {
			src, err := simulatedSource(top, "")
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			node, err := src.Inventory()
			if err != nil {
				t.Fatal(err)
			}
			if len(node.GPUs) != 4 {
				t.Fatalf("%d GPUs", len(node.GPUs))
			}
			for i, g := range node.GPUs {
				if g.NUMANode != i || g.LocalCPUs.String() != fmt.Sprintf("%d-%d", 72*i, 72*i+71) {
					t.Errorf("GPU %d: NUMA node %d, local CPUs %s; want its Grace's %d", i, g.NUMANode, g.LocalCPUs, i)
				}
			}
		})
	}
}

// A real machine's NVML: the memory affinity's nodes go through the Grace
// rule with sysfs's nodes, so a GPU memory node it names — alone or with
// the Grace's — gives the Grace's node.
func TestDescribeDropsGPUMemoryNodes(t *testing.T) {
	root := fstest.MapFS{
		"sys/devices/system/node/node0/cpulist":  {Data: []byte("0-71\n")},
		"sys/devices/system/node/node1/cpulist":  {Data: []byte("72-143\n")},
		"sys/devices/system/node/node4/cpulist":  {Data: []byte("\n")},
		"sys/devices/system/node/node12/cpulist": {Data: []byte("\n")},
	}
	for _, tc := range []struct {
		name     string
		affinity []int
		want     int
	}{
		{"the Grace's node", []int{1}, 1},
		{"the GPU memory node alone", []int{12}, 1},
		{"the Grace's and the GPU memory node", []int{1, 12}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := &mock.Device{
				GetUUIDFunc: func() (string, gonvml.Return) { return "GPU-00000001-0000-0000-0000-000000000000", gonvml.SUCCESS },
				GetPciInfoFunc: func() (gonvml.PciInfo, gonvml.Return) {
					var p gonvml.PciInfo
					for k, c := range "00000019:01:00.0" {
						p.BusId[k] = int8(c)
					}
					return p, gonvml.SUCCESS
				},
				GetNameFunc:                  func() (string, gonvml.Return) { return "", gonvml.ERROR_NOT_SUPPORTED },
				GetCudaComputeCapabilityFunc: func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED },
				GetMinorNumberFunc:           func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
				GetMemoryInfoFunc:            func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_NOT_SUPPORTED },
				GetMemoryAffinityFunc: func(n int, _ gonvml.AffinityScope) ([]uint, gonvml.Return) {
					return setToMask(cpuset.New(tc.affinity...), n), gonvml.SUCCESS
				},
				GetCpuAffinityWithinScopeFunc: func(n int, _ gonvml.AffinityScope) ([]uint, gonvml.Return) {
					return setToMask(cpuset.Range(72, 143), n), gonvml.SUCCESS
				},
				GetNumaNodeIdFunc: func() (int, gonvml.Return) { return 12, gonvml.SUCCESS },
			}
			l := newLibrary(&mock.Interface{}, "nvml", root, 144)
			l.nodes = gpu.NewSysfsNodes(root)
			g, err := l.describe(dev, 1)
			if err != nil {
				t.Fatal(err)
			}
			if g.NUMANode != tc.want {
				t.Errorf("memory affinity %v: NUMA node %d, want %d", tc.affinity, g.NUMANode, tc.want)
			}
		})
	}
}
