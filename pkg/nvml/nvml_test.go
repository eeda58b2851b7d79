//go:build cgo

package nvml

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// The built-in NVIDIA nodes read through go-nvml's mock of NVML — the
// adapter real NVML goes through — agree with their descriptions.
func TestSimulatedNodesThroughTheMock(t *testing.T) {
	for _, name := range gpu.SimulatedNames() {
		desc, err := gpu.BuiltinTopology(name)
		if err != nil {
			t.Fatal(err)
		}
		if desc.Mock == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			src, err := gpu.Open(gpu.Options{Simulate: name, NVML: Library})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			node, err := src.Inventory()
			if err != nil {
				t.Fatal(err)
			}
			want := desc.Node("")
			if len(node.GPUs) != len(want.GPUs) || len(node.CPUs) != len(want.CPUs) || node.Vendor != gpu.NVIDIA {
				t.Fatalf("%d GPUs %d CPUs vendor %q, want %d %d nvidia", len(node.GPUs), len(node.CPUs), node.Vendor, len(want.GPUs), len(want.CPUs))
			}
			for i, g := range node.GPUs {
				w := want.GPUs[i]
				if g.UUID != w.UUID || g.BusID != w.BusID || g.NUMANode != w.NUMANode || !g.LocalCPUs.Equal(w.LocalCPUs) || g.MemoryBytes == 0 {
					t.Errorf("GPU %d = %+v, want %+v", i, g, w)
				}
			}
			if node.Driver == "" || !strings.Contains(node.Backend, "go-nvml mock") {
				t.Errorf("backend %q driver %q", node.Backend, node.Driver)
			}
		})
	}
}

func TestSimulatedDGXA100Locality(t *testing.T) {
	src, err := gpu.Open(gpu.Options{Simulate: "dgx-a100", NVML: Library})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := src.Inventory()
	// NVIDIA's DGX A100 map: GPU 0 (bus 07) on NUMA 2, cores 32-47 + SMT siblings.
	if g := node.GPUs[0]; g.BusID != "0000:07:00.0" || g.NUMANode != 2 || g.LocalCPUs.String() != "32-47,160-175" {
		t.Fatalf("GPU 0 = %+v", g)
	}
	if again, _ := gpu.Open(gpu.Options{Simulate: "dgx-a100", NVML: Library}); again != nil {
		n2, _ := again.Inventory()
		if n2.GPUs[3].UUID != node.GPUs[3].UUID {
			t.Fatal("simulated UUIDs are not deterministic")
		}
	}
}

// What apps declare comes back through the same NVML calls the driver
// serves: utilisation, memory and the processes on each GPU.
func TestSimulatedUsageThroughTheMock(t *testing.T) {
	dir := t.TempDir()
	src, err := gpu.Open(gpu.Options{Simulate: "dgx-h100", SimulatedUsage: dir, NVML: Library})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := src.Inventory()
	g0, g1 := node.GPUs[0].UUID, node.GPUs[1].UUID
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), []byte(g0+" 70 2048\n"+g1+" 10 512\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	us, err := src.Usage([]string{g0, g1})
	if err != nil {
		t.Fatal(err)
	}
	if us[0].Utilization != 70 || us[0].MemoryUsed != 2048<<20 || len(us[0].Processes) != 1 || us[0].Processes[0].PID != os.Getpid() || us[1].Utilization != 10 {
		t.Errorf("usage %+v", us)
	}
	if !strings.Contains(node.Backend, "go-nvml mock") {
		t.Errorf("backend %q", node.Backend)
	}
	// the per-process samples through GetProcessUtilization, as
	// staticSource gives them without cgo (gpu.DeclaredUsage)
	for i, want := range []int{70, 10} {
		if s := us[i].ProcessUtil; !us[i].PerProcess || len(s) != 1 || s[0].PID != os.Getpid() || s[0].SM != want {
			t.Errorf("GPU %d: per-process samples %v %+v, want this process at %d%%", i, us[i].PerProcess, s, want)
		}
	}
	// a GPU nobody declared: NOT_FOUND, read, no sample
	idle, _ := src.Usage([]string{node.GPUs[2].UUID})
	if !idle[0].PerProcess || len(idle[0].ProcessUtil) != 0 {
		t.Errorf("an idle GPU: %+v", idle[0])
	}
}

// processUtil's rules, each against a device whose answers are scripted:
// what the instance's figure is read from, and the lastSeen each read
// passes (the newest timestamp of the answer before, per GPU).
func TestProcessUtilRules(t *testing.T) {
	type answer struct {
		samples []gonvml.ProcessUtilizationSample
		ret     gonvml.Return
	}
	s := func(pid uint32, ts uint64, sm uint32) gonvml.ProcessUtilizationSample {
		return gonvml.ProcessUtilizationSample{Pid: pid, TimeStamp: ts, SmUtil: sm}
	}
	for _, tc := range []struct {
		name     string
		answers  []answer // one per call, in order
		reads    int      // Usage calls
		want     []gpu.ProcessUtil
		per      bool
		lastSeen []uint64 // the argument of each call
	}{
		{"1: SUCCESS gives the samples, and the next read starts at their newest timestamp",
			[]answer{{[]gonvml.ProcessUtilizationSample{s(10, 500, 20), s(11, 700, 70)}, gonvml.SUCCESS}, {[]gonvml.ProcessUtilizationSample{s(10, 900, 30)}, gonvml.SUCCESS}},
			2, []gpu.ProcessUtil{{PID: 10, SM: 30}}, true, []uint64{0, 700}},
		{"1: several samples of one process in a window: their mean",
			[]answer{{[]gonvml.ProcessUtilizationSample{s(10, 100, 20), s(11, 150, 5), s(10, 200, 41)}, gonvml.SUCCESS}},
			1, []gpu.ProcessUtil{{PID: 10, SM: 31}, {PID: 11, SM: 5}}, true, []uint64{0}},
		{"2: NOT_FOUND: read, every process 0, lastSeen kept",
			[]answer{{[]gonvml.ProcessUtilizationSample{s(10, 300, 50)}, gonvml.SUCCESS}, {nil, gonvml.ERROR_NOT_FOUND}, {nil, gonvml.ERROR_NOT_FOUND}},
			3, nil, true, []uint64{0, 300, 300}},
		{"3: INSUFFICIENT_SIZE without a sample: as NOT_FOUND",
			[]answer{{[]gonvml.ProcessUtilizationSample{}, gonvml.ERROR_INSUFFICIENT_SIZE}},
			1, nil, true, []uint64{0}},
		{"4: INSUFFICIENT_SIZE with samples: asked once more",
			[]answer{{[]gonvml.ProcessUtilizationSample{s(10, 1, 1)}, gonvml.ERROR_INSUFFICIENT_SIZE}, {[]gonvml.ProcessUtilizationSample{s(10, 5, 60), s(12, 6, 10)}, gonvml.SUCCESS}},
			1, []gpu.ProcessUtil{{PID: 10, SM: 60}, {PID: 12, SM: 10}}, true, []uint64{0, 0}},
		{"4: then 5 when the second is short too",
			[]answer{{[]gonvml.ProcessUtilizationSample{s(10, 1, 1)}, gonvml.ERROR_INSUFFICIENT_SIZE}, {[]gonvml.ProcessUtilizationSample{s(10, 1, 1)}, gonvml.ERROR_INSUFFICIENT_SIZE}},
			1, nil, false, []uint64{0, 0}},
		{"5: NOT_SUPPORTED (a MIG device): not read",
			[]answer{{nil, gonvml.ERROR_NOT_SUPPORTED}}, 1, nil, false, []uint64{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []uint64
			dev := &mock.Device{
				GetUtilizationRatesFunc: func() (gonvml.Utilization, gonvml.Return) { return gonvml.Utilization{Gpu: 90}, gonvml.SUCCESS },
				GetMemoryInfoFunc:       func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.SUCCESS },
				GetComputeRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
					return nil, gonvml.SUCCESS
				},
				GetProcessUtilizationFunc: func(lastSeen uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
					a := tc.answers[len(calls)]
					calls = append(calls, lastSeen)
					return a.samples, a.ret
				},
			}
			l := newLibrary(&mock.Interface{}, "test", nil, 1)
			l.handles["GPU-a"] = dev
			var us []gpu.Usage
			for range tc.reads {
				var err error
				if us, err = l.Usage([]string{"GPU-a"}); err != nil {
					t.Fatal(err)
				}
			}
			u := us[0]
			if u.Utilization != 90 || u.PerProcess != tc.per || !slices.Equal(u.ProcessUtil, tc.want) {
				t.Errorf("usage %+v, want per-process %v samples %+v", u, tc.per, tc.want)
			}
			if !slices.Equal(calls, tc.lastSeen) {
				t.Errorf("lastSeen passed %v, want %v", calls, tc.lastSeen)
			}
		})
	}
}

// The driver's CUDA version, NVML's 1000 × major + 10 × minor, reaches
// the inventory as "13.1"; a driver that does not answer leaves it ""
// (unknown: mps.ClientLimit's L3). A GPU's compute capability likewise.
func TestInventoryCUDAVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		ret     gonvml.Return
		want    string
	}{
		{"CUDA 13.1", 13010, gonvml.SUCCESS, "13.1"},
		{"CUDA 12.4", 12040, gonvml.SUCCESS, "12.4"},
		{"CUDA 13.0", 13000, gonvml.SUCCESS, "13.0"},
		{"not answered", 0, gonvml.ERROR_FUNCTION_NOT_FOUND, ""},
	} {
		dev := &mock.Device{
			GetUUIDFunc: func() (string, gonvml.Return) { return "GPU-a", gonvml.SUCCESS },
			GetPciInfoFunc: func() (gonvml.PciInfo, gonvml.Return) {
				var p gonvml.PciInfo
				for k, c := range "00000000:01:00.0" {
					p.BusId[k] = int8(c)
				}
				return p, gonvml.SUCCESS
			},
			GetCudaComputeCapabilityFunc:  func() (int, int, gonvml.Return) { return 7, 0, gonvml.SUCCESS },
			GetNameFunc:                   func() (string, gonvml.Return) { return "", gonvml.ERROR_NOT_SUPPORTED },
			GetMinorNumberFunc:            func() (int, gonvml.Return) { return 0, gonvml.SUCCESS },
			GetMemoryInfoFunc:             func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.SUCCESS },
			GetMemoryAffinityFunc:         func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) { return []uint{1}, gonvml.SUCCESS },
			GetCpuAffinityWithinScopeFunc: func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) { return []uint{1}, gonvml.SUCCESS },
			GetMigModeFunc:                func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED },
		}
		lib := &mock.Interface{
			SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "590.44.01", gonvml.SUCCESS },
			SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return tc.version, tc.ret },
			DeviceGetCountFunc:             func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
			DeviceGetHandleByIndexFunc:     func(int) (gonvml.Device, gonvml.Return) { return dev, gonvml.SUCCESS },
		}
		node, err := newLibrary(lib, "test", nil, 1).Inventory()
		if err != nil || node.CUDAVersion != tc.want || len(node.GPUs) != 1 || node.GPUs[0].ComputeCapability != "7.0" {
			t.Errorf("%s: Inventory = %+v, %v; want CUDA %q, compute capability 7.0", tc.name, node, err, tc.want)
		}
	}
}
