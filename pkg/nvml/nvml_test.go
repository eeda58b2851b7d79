//go:build cgo

package nvml

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
}
