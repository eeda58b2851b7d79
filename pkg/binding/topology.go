package binding

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// Topology is a node's CPU layout: for every logical CPU its core, socket
// and NUMA node. It is a value built once per run and only read after.
type Topology struct {
	byID     map[int]gpu.CPU
	all      cpuset.Set
	byNUMA   map[int]cpuset.Set
	bySocket map[int]cpuset.Set
	numaSock map[int]int
	// cores lists every core's threads, ordered by (NUMA node, core id):
	// the order the planner takes CPUs in.
	cores [][]int
	// threadsPerCore is the most threads one core has, counted once here:
	// the planner asks for it per instance, and counting it there made a
	// plan of 512 instances on 8,192 CPUs quadratic (83% of its 330 ms).
	threadsPerCore int
}

// NewTopology builds the layout from a CPU list.
func NewTopology(cpus []gpu.CPU) Topology {
	t := Topology{byID: make(map[int]gpu.CPU, len(cpus)), byNUMA: map[int]cpuset.Set{}, bySocket: map[int]cpuset.Set{}, numaSock: map[int]int{}}
	ids := make([]int, 0, len(cpus))
	numa, sock := map[int][]int{}, map[int][]int{}
	for _, c := range cpus {
		t.byID[c.ID] = c
		ids = append(ids, c.ID)
		numa[c.NUMA] = append(numa[c.NUMA], c.ID)
		sock[c.Socket] = append(sock[c.Socket], c.ID)
		t.numaSock[c.NUMA] = c.Socket
	}
	t.all = cpuset.New(ids...)
	for n, l := range numa {
		t.byNUMA[n] = cpuset.New(l...)
	}
	for n, l := range sock {
		t.bySocket[n] = cpuset.New(l...)
	}
	byCore := map[int][]int{}
	var coreIDs []int
	for _, c := range cpus {
		if _, ok := byCore[c.Core]; !ok {
			coreIDs = append(coreIDs, c.Core)
		}
		byCore[c.Core] = append(byCore[c.Core], c.ID)
	}
	sort.Slice(coreIDs, func(i, j int) bool {
		a, b := t.byID[coreIDs[i]], t.byID[coreIDs[j]]
		if a.NUMA != b.NUMA {
			return a.NUMA < b.NUMA
		}
		return coreIDs[i] < coreIDs[j]
	})
	for _, id := range coreIDs {
		threads := byCore[id]
		sort.Ints(threads)
		t.cores = append(t.cores, threads)
		t.threadsPerCore = max(t.threadsPerCore, len(threads))
	}
	return t
}

// CPUs is every CPU of the node.
func (t Topology) CPUs() cpuset.Set { return t.all }

// Info returns a CPU's place; ok=false for a CPU the layout does not know.
func (t Topology) Info(id int) (gpu.CPU, bool) { c, ok := t.byID[id]; return c, ok }

// NUMANodeCPUs returns the CPUs of NUMA node n.
func (t Topology) NUMANodeCPUs(n int) cpuset.Set { return t.byNUMA[n] }

// SocketOfNUMA returns the socket that holds NUMA node n, -1 if unknown.
func (t Topology) SocketOfNUMA(n int) int {
	if s, ok := t.numaSock[n]; ok {
		return s
	}
	return -1
}

// SocketCPUs returns the CPUs of socket s.
func (t Topology) SocketCPUs(s int) cpuset.Set { return t.bySocket[s] }

// NUMANodes lists the NUMA node ids in ascending order.
func (t Topology) NUMANodes() []int {
	out := make([]int, 0, len(t.byNUMA))
	for n := range t.byNUMA {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// Sockets counts the sockets.
func (t Topology) Sockets() int {
	return len(t.bySocket)
}

// ThreadsPerCore is the largest number of hardware threads on one core.
func (t Topology) ThreadsPerCore() int { return t.threadsPerCore }

// ReadTopology reads the CPU layout from sysfs under root:
// /sys/devices/system/cpu/online, each CPU's topology/physical_package_id
// and core_cpus_list (thread_siblings_list on older kernels), and
// /sys/devices/system/node/node*/cpulist. A kernel without NUMA puts every
// CPU on node 0.
func ReadTopology(root fs.FS) (Topology, error) {
	const cpuDir = "sys/devices/system/cpu"
	b, err := fs.ReadFile(root, path.Join(cpuDir, "online"))
	if err != nil {
		return Topology{}, fmt.Errorf("CPU topology: %w", err)
	}
	online, err := cpuset.Parse(string(b))
	if err != nil {
		return Topology{}, fmt.Errorf("CPU topology: online: %w", err)
	}
	numaOf := map[int]int{}
	if nodes, err := fs.Glob(root, "sys/devices/system/node/node*"); err == nil {
		for _, n := range nodes {
			id, err := strconv.Atoi(strings.TrimPrefix(path.Base(n), "node"))
			if err != nil {
				continue
			}
			b, err := fs.ReadFile(root, path.Join(n, "cpulist"))
			if err != nil {
				continue
			}
			set, _ := cpuset.Parse(string(b))
			for _, c := range set.List() {
				numaOf[c] = id
			}
		}
	}
	var cpus []gpu.CPU
	for _, id := range online.List() {
		dir := path.Join(cpuDir, fmt.Sprintf("cpu%d", id), "topology")
		c := gpu.CPU{ID: id, Core: id, NUMA: numaOf[id]}
		if s, err := readTrim(root, path.Join(dir, "physical_package_id")); err == nil {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				c.Socket = n
			}
		}
		for _, f := range []string{"core_cpus_list", "thread_siblings_list"} {
			if s, err := readTrim(root, path.Join(dir, f)); err == nil {
				if sib, err := cpuset.Parse(s); err == nil && !sib.IsEmpty() {
					c.Core = sib.Min()
					break
				}
			}
		}
		cpus = append(cpus, c)
	}
	return NewTopology(cpus), nil
}

func readTrim(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	return strings.TrimSpace(string(b)), err
}
