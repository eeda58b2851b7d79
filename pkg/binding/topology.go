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

// ReadTopology reads the CPU layout from sysfs under root. The rules:
//  1. The CPUs are /sys/devices/system/cpu/online; a CPU's NUMA node is
//     the /sys/devices/system/node/node*/cpulist that lists it (a kernel
//     without NUMA: node 0).
//  2. A CPU's socket is its topology/physical_package_id (unreadable: 0),
//     read once per package: the CPUs its topology/package_cpus_list
//     (core_siblings_list on older kernels) names share it.
//  3. A CPU's core is the lowest of its SMT siblings,
//     topology/core_cpus_list (thread_siblings_list on older kernels;
//     unreadable: the CPU itself), read once per core: the siblings
//     share it.
//
// Once per package and core, not per CPU: every rank of rank mode reads
// the layout at its start, and per CPU that was 512 files on a 2-socket,
// 128-core SMT-2 node, 132 now (TestReadTopologyReadsEachPackageAndCoreOnce).
func ReadTopology(root fs.FS) (Topology, error) {
	b, err := fs.ReadFile(root, path.Join(cpuDir, "online"))
	if err != nil {
		return Topology{}, fmt.Errorf("CPU topology: %w", err)
	}
	online, err := cpuset.Parse(string(b))
	if err != nil {
		return Topology{}, fmt.Errorf("CPU topology: online: %w", err)
	}
	numaOf := readNUMANodes(root)
	socketOf, coreOf := map[int]int{}, map[int]int{}
	var cpus []gpu.CPU
	for _, id := range online.List() {
		if _, ok := socketOf[id]; !ok {
			readPackage(root, id, socketOf)
		}
		if _, ok := coreOf[id]; !ok {
			readCore(root, id, coreOf)
		}
		cpus = append(cpus, gpu.CPU{ID: id, Core: coreOf[id], NUMA: numaOf[id], Socket: socketOf[id]})
	}
	return NewTopology(cpus), nil
}

const cpuDir = "sys/devices/system/cpu"

func cpuTopologyFile(id int, name string) string {
	return path.Join(cpuDir, "cpu"+strconv.Itoa(id), "topology", name)
}

// readNUMANodes is each CPU's NUMA node (rule 1).
func readNUMANodes(root fs.FS) map[int]int {
	numaOf := map[int]int{}
	nodes, _ := fs.Glob(root, "sys/devices/system/node/node*")
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
	return numaOf
}

// readPackage sets the socket of CPU id and of the CPUs of its package
// that have none yet (rule 2).
func readPackage(root fs.FS, id int, socketOf map[int]int) {
	socket := 0
	if s, err := readTrim(root, cpuTopologyFile(id, "physical_package_id")); err == nil {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			socket = n
		}
	}
	socketOf[id] = socket
	shareWith(root, id, []string{"package_cpus_list", "core_siblings_list"}, socketOf, socket)
}

// readCore sets the core of CPU id and of its SMT siblings that have none
// yet (rule 3).
func readCore(root fs.FS, id int, coreOf map[int]int) {
	coreOf[id] = id
	for _, f := range []string{"core_cpus_list", "thread_siblings_list"} {
		if sib, ok := readSet(root, cpuTopologyFile(id, f)); ok {
			coreOf[id] = sib.Min()
			share(sib, coreOf, sib.Min())
			return
		}
	}
}

// shareWith gives v to the CPUs that the first readable of CPU id's
// topology files names (share).
func shareWith(root fs.FS, id int, files []string, of map[int]int, v int) {
	for _, f := range files {
		if set, ok := readSet(root, cpuTopologyFile(id, f)); ok {
			share(set, of, v)
			return
		}
	}
}

// share gives v to the CPUs of set that have none yet.
func share(set cpuset.Set, of map[int]int, v int) {
	for _, c := range set.List() {
		if _, ok := of[c]; !ok {
			of[c] = v
		}
	}
}

// readSet is a CPU list file's non-empty set.
func readSet(root fs.FS, name string) (cpuset.Set, bool) {
	s, err := readTrim(root, name)
	if err != nil {
		return cpuset.Set{}, false
	}
	set, err := cpuset.Parse(s)
	return set, err == nil && !set.IsEmpty()
}

func readTrim(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	return strings.TrimSpace(string(b)), err
}
