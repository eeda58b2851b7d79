package gpu

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// The Grace rule: an instance's host memory is bound to a NUMA node with
// CPUs, never to a GPU's own memory.
//
// On a Grace Hopper (GH200) node the GPU's HBM is system memory the kernel
// shows as NUMA nodes without CPUs: on CSCS Alps' 4×GH200 node the Grace
// CPUs' LPDDR5X is nodes 0–3 and each GPU's memory is a block of 8 nodes
// from 4, 12, 20 and 28 (36 in all, the first of each block holding the
// HBM: NVIDIA/mlperf-common#16, "lscpu shows 36 numa nodes on GH200 with 4
// GPUs (4 numa nodes on the CPUs + 4 * 8 numa nodes on the GPUs)"; a
// single GH200 shows 9, node 0 with CPUs 0-71, nodes 1-8 without:
// bytedance/xpu-perf#129; Fusco et al., "Understanding Data Movement in
// Tightly Coupled Heterogeneous Systems: A Case Study with the Grace Hopper
// Superchip", arXiv:2408.11556, measure Alps' node). NVML's
// nvmlDeviceGetNumaNodeId names that GPU memory node on these platforms
// (NVIDIA/cuCascade#119: "it returns the NUMA node of the GPU itself,
// which is only meaningful on Grace/GB200-style coherent platforms"),
// which is why the NVML backend asks the memory affinity instead; the
// driver's PCI function's numa_node and `nvidia-smi topo -m`'s "NUMA
// Affinity" column name the Grace's node (its "GPU NUMA ID" column the
// GPU's own). No published capture of a GH200's sysfs numa_node was found;
// a firmware or kernel that gave the GPU memory node there instead would
// have the plan bind host memory to the HBM — or, as Mems_allowed lists
// only the nodes with CPUs, bind none — so every backend passes what its
// driver names through HostMemoryNode, one rule for NVML and sysfs alike.

// NUMANodes is what the rule needs to know of a machine's NUMA nodes.
type NUMANodes interface {
	// CPUs is node n's CPUs (empty for a node without CPUs); known is
	// false where the machine does not say (no such node listed).
	CPUs(n int) (cpus cpuset.Set, known bool)
	// All lists the machine's nodes in ascending order.
	All() []int
}

// HostMemoryNode is the NUMA node an instance's host memory is bound to
// for a GPU (GPU.NUMANode), from the nodes its driver names for it (named:
// sysfs's numa_node, one node; NVML's memory affinity, a set), the GPU's
// local CPUs and the machine's nodes (nil: not known). The rules:
//  1. No node named: -1, unknown (the firmware did not say; the local
//     CPUs of such a GPU are the whole machine's, where no node holds
//     them). Where the machine's nodes are not known, a single named node
//     is the GPU's node, as named: nothing says it lacks CPUs.
//  2. A named node the machine lists without CPUs is never the node: it is
//     a GPU's own memory (Grace Hopper's HBM; the description's
//     memory_numa), where host memory must not be bound. A named node the
//     machine does not list is kept: nothing says it lacks CPUs.
//  3. One named node left is the GPU's node.
//  4. None left, or several (NVML naming a whole socket's nodes): the node
//     whose CPUs hold every one of the GPU's local CPUs — on a GH200 the
//     Grace the GPU is attached to by NVLink-C2C.
//  5. Otherwise -1: unknown, as when the firmware does not say.
func HostMemoryNode(named []int, local cpuset.Set, nodes NUMANodes) int {
	if len(named) == 0 {
		return -1
	}
	if nodes == nil {
		if len(named) == 1 {
			return named[0]
		}
		return -1
	}
	kept := withCPUsOrUnlisted(named, nodes)
	if len(kept) == 1 {
		return kept[0]
	}
	return nodeHoldingCPUs(local, nodes)
}

// withCPUsOrUnlisted is rule 2: the named nodes less those the machine
// lists without CPUs.
func withCPUsOrUnlisted(named []int, nodes NUMANodes) []int {
	var kept []int
	for _, n := range named {
		if cpus, known := nodes.CPUs(n); known && cpus.IsEmpty() {
			continue
		}
		kept = append(kept, n)
	}
	return kept
}

// nodeHoldingCPUs is rule 4: the one node whose CPUs include every CPU
// of local; -1 where local is empty or spans nodes.
func nodeHoldingCPUs(local cpuset.Set, nodes NUMANodes) int {
	if local.IsEmpty() {
		return -1
	}
	for _, n := range nodes.All() {
		if cpus, _ := nodes.CPUs(n); !cpus.IsEmpty() && local.IsSubsetOf(cpus) {
			return n
		}
	}
	return -1
}

// DescribedNodes are a description's NUMA nodes: those of its CPUs, and
// the GPUs' own memory nodes (memory_numa), which have none.
type DescribedNodes map[int]cpuset.Set

// CPUs is NUMANodes'.
func (d DescribedNodes) CPUs(n int) (cpuset.Set, bool) { s, ok := d[n]; return s, ok }

// All is NUMANodes'.
func (d DescribedNodes) All() []int {
	out := make([]int, 0, len(d))
	for n := range d {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// NUMANodes are the description's NUMA nodes (describedNodes); nil for a
// node file, whose nodes are this machine's (nodeFileNodes).
func (t Topology) NUMANodes() NUMANodes {
	cpus, err := t.cpus()
	if err != nil || len(cpus) == 0 {
		return nil
	}
	return describedNodes(cpus, t.GPUs)
}

// describedNodes is what cpus and the GPUs' memory nodes say of the
// description's NUMA nodes.
func describedNodes(cpus []CPU, gpus []TopologyGPU) DescribedNodes {
	ids := map[int][]int{}
	for _, c := range cpus {
		ids[c.NUMA] = append(ids[c.NUMA], c.ID)
	}
	d := DescribedNodes{}
	for n, l := range ids {
		d[n] = cpuset.New(l...)
	}
	for _, g := range gpus {
		if g.MemoryNUMA != nil && *g.MemoryNUMA >= 0 {
			if _, ok := d[*g.MemoryNUMA]; !ok {
				d[*g.MemoryNUMA] = cpuset.Set{}
			}
		}
	}
	return d
}

// nodeFileNodes are a node file's NUMA nodes: this machine's (machine,
// nil where not known), except that the GPUs' own memory nodes the file
// names (memory, from memory_numa) have no CPUs, whatever the machine says.
type nodeFileNodes struct {
	machine NUMANodes
	memory  DescribedNodes
}

// CPUs is NUMANodes'.
func (n nodeFileNodes) CPUs(id int) (cpuset.Set, bool) {
	if _, ok := n.memory[id]; ok {
		return cpuset.Set{}, true
	}
	if n.machine == nil {
		return cpuset.Set{}, false
	}
	return n.machine.CPUs(id)
}

// All is NUMANodes'.
func (n nodeFileNodes) All() []int {
	all := n.memory.All()
	if n.machine != nil {
		for _, id := range n.machine.All() {
			if _, ok := n.memory[id]; !ok {
				all = append(all, id)
			}
		}
	}
	sort.Ints(all)
	return all
}

// SysfsNodes are this machine's NUMA nodes as sysfs lists them
// (/sys/devices/system/node/node<N>/cpulist, empty for a node without
// CPUs), read when asked: the common answer (a GPU's node has CPUs) costs
// one file; only rule 4 lists them all.
type SysfsNodes struct{ Root fs.FS }

// NewSysfsNodes is root's NUMA nodes; nil where there is no root.
func NewSysfsNodes(root fs.FS) NUMANodes {
	if root == nil {
		return nil
	}
	return SysfsNodes{root}
}

// CPUs is NUMANodes'.
func (s SysfsNodes) CPUs(n int) (cpuset.Set, bool) {
	b, err := fs.ReadFile(s.Root, path.Join(nodeDir, fmt.Sprintf("node%d", n), "cpulist"))
	if err != nil {
		return cpuset.Set{}, false
	}
	cpus, err := cpuset.Parse(strings.TrimSpace(string(b)))
	return cpus, err == nil
}

// All is NUMANodes'.
func (s SysfsNodes) All() []int {
	dirs, _ := fs.Glob(s.Root, path.Join(nodeDir, "node*"))
	var out []int
	for _, d := range dirs {
		if n, err := strconv.Atoi(strings.TrimPrefix(path.Base(d), "node")); err == nil {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

const nodeDir = "sys/devices/system/node"
