package gpu

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// quadGH200Nodes is an Alps GH200 node's NUMA nodes: the Graces' 0-3 with
// 72 CPUs each, every GPU's own memory 4, 12, 20, 28 without CPUs.
func quadGH200Nodes() DescribedNodes {
	d := DescribedNodes{}
	for i := range 4 {
		d[i] = cpuset.Range(72*i, 72*i+71)
		d[4+8*i] = cpuset.Set{}
	}
	return d
}

func TestHostMemoryNode(t *testing.T) {
	grace1 := cpuset.Range(72, 143)
	for _, tc := range []struct {
		name  string
		named []int
		local cpuset.Set
		nodes NUMANodes
		want  int
	}{
		{"rule 1: nothing named: unknown, even where the local CPUs are one node's", nil, grace1, quadGH200Nodes(), -1},
		{"rule 1: the nodes not known: the node named, as named", []int{12}, grace1, nil, 12},
		{"rule 1: the nodes not known, several named: unknown", []int{1, 12}, grace1, nil, -1},
		{"rule 2: a GPU memory node is never the node: its Grace's", []int{12}, grace1, quadGH200Nodes(), 1},
		{"rule 2: a node the machine does not list is kept", []int{40}, grace1, quadGH200Nodes(), 40},
		{"rule 3: a node with CPUs is the node", []int{1}, grace1, quadGH200Nodes(), 1},
		{"rule 3: the GPU memory node dropped, its Grace's left", []int{1, 12}, grace1, quadGH200Nodes(), 1},
		{"rule 4: several with CPUs: the one holding the local CPUs", []int{0, 1}, grace1, quadGH200Nodes(), 1},
		{"rule 5: a GPU memory node and local CPUs across Graces: unknown", []int{12}, cpuset.Range(0, 143), quadGH200Nodes(), -1},
		{"rule 5: a GPU memory node and no local CPUs: unknown", []int{12}, cpuset.Set{}, quadGH200Nodes(), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostMemoryNode(tc.named, tc.local, tc.nodes); got != tc.want {
				t.Errorf("HostMemoryNode(%v, %s) = %d, want %d", tc.named, tc.local, got, tc.want)
			}
		})
	}
}

// gh200Sysfs is a 4×GH200 node's driver files and sysfs, each GPU's
// numa_node being numa(i).
func gh200Sysfs(numa func(i int) int) fstest.MapFS {
	root := fstest.MapFS{"sys/devices/system/node/online": {Data: []byte("0-35\n")}}
	for n := range 36 {
		cpus := ""
		if n < 4 {
			cpus = fmt.Sprintf("%d-%d", 72*n, 72*n+71)
		}
		root[fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n)] = &fstest.MapFile{Data: []byte(cpus + "\n")}
	}
	for i := range 4 {
		bus := fmt.Sprintf("%04x:01:00.0", 0x09+0x10*i)
		root["proc/driver/nvidia/gpus/"+bus+"/information"] = &fstest.MapFile{Data: []byte(fmt.Sprintf(
			"Model:           NVIDIA GH200 120GB\nGPU UUID:        GPU-%08d-0000-0000-0000-000000000000\nBus Location:    %s\nDevice Minor:    %d\n", i, bus, i))}
		root["sys/bus/pci/devices/"+bus+"/numa_node"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d\n", numa(i)))}
		root["sys/bus/pci/devices/"+bus+"/local_cpulist"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d-%d\n", 72*i, 72*i+71))}
	}
	return root
}

// The sysfs backend (the static build's) gives each GH200 GPU its Grace's
// node, whether numa_node names the Grace's (as nvidia-smi topo's NUMA
// Affinity does) or the GPU's own memory node.
func TestSysfsGH200GivesTheGraceNode(t *testing.T) {
	for name, numa := range map[string]func(int) int{
		"numa_node the Grace's":           func(i int) int { return i },
		"numa_node the GPU memory node's": func(i int) int { return 4 + 8*i },
	} {
		t.Run(name, func(t *testing.T) {
			node, err := nvidiaSysfs{root: gh200Sysfs(numa)}.Inventory()
			if err != nil {
				t.Fatal(err)
			}
			if len(node.GPUs) != 4 {
				t.Fatalf("%d GPUs: %v", len(node.GPUs), node.Warnings)
			}
			for i, g := range node.GPUs {
				if g.NUMANode != i {
					t.Errorf("GPU %d (%s): NUMA node %d, want its Grace's %d", i, g.BusID, g.NUMANode, i)
				}
			}
		})
	}
}

// A description may name a GPU's memory node as its numa, as a driver
// might; the GPU's node is then its Grace's, by local_cpus.
func TestDescribedGPUMemoryNode(t *testing.T) {
	layout := `"cpu_layout": {"sockets": 2, "numa_per_socket": 1, "cores_per_numa": 4, "threads_per_core": 1}`
	top, err := ParseTopology([]byte(`{`+layout+`, "gpus": [{"pci": "09:01:00.0", "numa": 4, "memory_numa": 4, "local_cpus": "0-3"},
		{"pci": "19:01:00.0", "numa": 1, "memory_numa": 12}]}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range top.Node("").GPUs {
		if g.NUMANode != i {
			t.Errorf("GPU %d: NUMA node %d, want %d", i, g.NUMANode, i)
		}
	}
	for doc, want := range map[string]string{
		`"gpus": [{"pci": "01:00.0", "numa": 0, "memory_numa": 1}]`:     "memory_numa 1: that node has CPUs",
		`"gpus": [{"pci": "01:00.0", "numa": 4, "memory_numa": 4}]`:     "numa node 4 is a GPU's memory (memory_numa), without CPUs: give local_cpus",
		`"gpus": [{"pci": "01:00.0", "numa": 0, "memory_numa": 1e9}]`:   "gpus.memory_numa",
		`"gpus": [{"pci": "01:00.0", "numa": 0, "memory_numa": 70000}]`: "memory_numa 70000: a NUMA node is 0..65535",
	} {
		if _, err := ParseTopology([]byte(`{`+layout+`, `+doc+`}`), "t.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", doc, err, want)
		}
	}
}

// The Grace rule through a node file (a GH200 whose GPUs NVML cannot
// show): a GPU's numa naming its own memory node (memory_numa, as a
// driver might) with local_cpus is bound to the node of this machine
// holding those CPUs, never to the memory node; without this machine's
// nodes it is unknown (-1), not the memory node; without local_cpus it
// is refused, as in a topology file.
func TestNodeFileGraceRule(t *testing.T) {
	gh200 := fstest.MapFS{
		"sys/devices/system/node/node0/cpulist":  {Data: []byte("0-71\n")},
		"sys/devices/system/node/node1/cpulist":  {Data: []byte("72-143\n")},
		"sys/devices/system/node/node4/cpulist":  {Data: []byte("\n")},
		"sys/devices/system/node/node12/cpulist": {Data: []byte("\n")},
	}
	file := filepath.Join(t.TempDir(), "gh200.json")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"gpus": [
	  {"pci": "0009:01:00.0", "numa": 4, "memory_numa": 4, "local_cpus": "0-71"},
	  {"pci": "0019:01:00.0", "numa": 1, "memory_numa": 12}]}`)
	for _, c := range []struct {
		name string
		root fs.FS
		want string
	}{
		{"this machine's nodes", gh200, "0009:01:00.0:0 0019:01:00.0:1"},
		{"no machine's nodes", nil, "0009:01:00.0:-1 0019:01:00.0:1"},
	} {
		src, err := Open(Options{NodeFile: file, Root: c.root})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		node, err := src.Inventory()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range node.GPUs {
			got = append(got, fmt.Sprintf("%s:%d", g.BusID, g.NUMANode))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: GPUs' nodes %v, want %s", c.name, got, c.want)
		}
	}
	write(`{"gpus": [{"pci": "0009:01:00.0", "numa": 4, "memory_numa": 4}]}`)
	if _, err := Open(Options{NodeFile: file, Root: gh200}); err == nil || !strings.Contains(err.Error(), "give local_cpus") {
		t.Errorf("numa naming a GPU's memory without local_cpus: %v, want refused asking for local_cpus", err)
	}
}
