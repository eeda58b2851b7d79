package gpu

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The AMD backend: the KFD topology the amdgpu driver publishes in sysfs
// (drivers/gpu/drm/amd/amdkfd/kfd_topology.c), as ROCm's runtime and AMD's
// own Kubernetes device plugin read it, and amdgpu's sysfs attributes for
// telemetry. No ROCm library is needed.

const (
	kfdNodes = "sys/class/kfd/kfd/topology/nodes"
	kfdProcs = "sys/class/kfd/kfd/proc"
)

// kfdNode is one node of the KFD topology, nodes/N.
type kfdNode struct {
	id    int               // N
	gpuID uint64            // gpu_id: 0 for a CPU node
	name  string            // the name file ("gfx90a")
	props map[string]uint64 // the properties file
	links []kfdLink         // io_links/M/properties
}

// kfdLink is an io_link of a node.
type kfdLink struct{ typ, to, weight uint64 }

// kfdLinkPCIe is an io_link's type for PCIe (11 is XGMI).
const kfdLinkPCIe = 2

// kfdLocalWeight is the weight of a GPU's PCIe link to its local CPU node
// at most, as libhsakmt picks it.
const kfdLocalWeight = 20

// parseKFDProperties reads a KFD properties file: one "key value" per line,
// the value a decimal integer (the kernel prints them with %u and %llu).
func parseKFDProperties(text string) (map[string]uint64, error) {
	props := map[string]uint64{}
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d %q is not \"key value\"", n+1, line)
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s %q is not a number", n+1, f[0], f[1])
		}
		props[f[0]] = v
	}
	return props, nil
}

// readKFD reads every node of the KFD topology under root, in node order;
// a missing topology is no node and no error.
func readKFD(root fs.FS) ([]kfdNode, error) {
	entries, err := fs.ReadDir(root, kfdNodes)
	if err != nil {
		return nil, nil
	}
	var nodes []kfdNode
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		n, err := readKFDNode(root, path.Join(kfdNodes, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("KFD topology node %d: %w", id, err)
		}
		n.id = id
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].id < nodes[j].id })
	return nodes, nil
}

func readKFDNode(root fs.FS, dir string) (kfdNode, error) {
	var n kfdNode
	text, err := fs.ReadFile(root, path.Join(dir, "properties"))
	if err != nil {
		return n, err
	}
	if n.props, err = parseKFDProperties(string(text)); err != nil {
		return n, fmt.Errorf("properties: %w", err)
	}
	if s, err := readTrim(root, path.Join(dir, "gpu_id")); err == nil && s != "" {
		if n.gpuID, err = strconv.ParseUint(s, 10, 64); err != nil {
			return n, fmt.Errorf("gpu_id %q is not a number", s)
		}
	}
	n.name, _ = readTrim(root, path.Join(dir, "name"))
	links, _ := fs.ReadDir(root, path.Join(dir, "io_links"))
	for _, l := range links {
		text, err := fs.ReadFile(root, path.Join(dir, "io_links", l.Name(), "properties"))
		if err != nil {
			continue
		}
		p, err := parseKFDProperties(string(text))
		if err != nil {
			return n, fmt.Errorf("io_link %s: %w", l.Name(), err)
		}
		n.links = append(n.links, kfdLink{typ: p["type"], to: p["node_to"], weight: p["weight"]})
	}
	return n, nil
}

// amdDevice is what telemetry needs of a GPU: its PCI device and KFD id.
type amdDevice struct {
	bus   string
	gpuID uint64
}

// amdGPUs turns KFD nodes into GPUs. The rules, in order:
//  1. A node without SIMDs (simd_count 0, gpu_id 0) is a CPU node.
//  2. The PCI address is domain and location_id's bus (bits 15:8),
//     device (7:3) and function (2:0). A partitioned GPU (an MI300X in CPX
//     mode) shows a node per partition on one address, the partition in
//     location_id's bits 31:28: each partition is a device of its own.
//  3. The UUID is GPU- and unique_id in 16 hex digits, as rocminfo prints
//     it and ROCR_VISIBLE_DEVICES takes it. A GPU without one (0: consumer
//     parts) gets an id from its address, which only indices can name.
//  4. The device file is the render node /dev/dri/renderD<drm_render_minor>:
//     a device cgroup that denies it hides the GPU.
//  5. The NUMA node and local CPUs are the PCI device's (numa_node,
//     local_cpulist). When the firmware does not say, the CPU node that the
//     GPU's PCIe link reaches (weight 20 or less, as libhsakmt picks it) is
//     taken for its NUMA node: KFD numbers CPU nodes as the NUMA nodes.
//  6. Memory is local_mem_size, the name the node's name file.
//
// The GPUs come in KFD's node order, the order ROCR numbers them in.
func amdGPUs(root fs.FS, nodes []kfdNode) ([]GPU, map[string]amdDevice) {
	cpuNode := map[int]int{} // KFD node id → its place among the CPU nodes
	for _, n := range nodes {
		if n.props["simd_count"] == 0 {
			cpuNode[n.id] = len(cpuNode)
		}
	}
	var gpus []GPU
	devices := map[string]amdDevice{}
	for _, n := range nodes {
		if n.props["simd_count"] == 0 || n.gpuID == 0 {
			continue
		}
		loc := n.props["location_id"]
		bus := fmt.Sprintf("%04x:%02x:%02x.%x", n.props["domain"], (loc>>8)&0xff, (loc>>3)&0x1f, loc&7)
		g := GPU{Vendor: AMD, BusID: bus, Index: len(gpus), Name: n.name, MemoryBytes: n.props["local_mem_size"], NUMANode: -1}
		if m, ok := n.props["drm_render_minor"]; ok {
			g.Minor, g.Device = int(m), fmt.Sprintf("/dev/dri/renderD%d", m)
		}
		partition := (loc >> 28) & 0xf
		switch id := n.props["unique_id"]; {
		case id != 0:
			g.UUID = fmt.Sprintf("GPU-%016x", id)
		case partition > 0:
			g.UUID = fmt.Sprintf("AMD-%s-p%d", bus, partition)
		default:
			g.UUID = "AMD-" + bus
		}
		g.NUMANode, g.LocalCPUs = SysfsLocality(root, bus)
		if g.NUMANode < 0 {
			for _, l := range n.links {
				if cpu, ok := cpuNode[int(l.to)]; ok && l.typ == kfdLinkPCIe && l.weight <= kfdLocalWeight {
					g.NUMANode = cpu
					break
				}
			}
		}
		devices[g.UUID] = amdDevice{bus: bus, gpuID: n.gpuID}
		gpus = append(gpus, g)
	}
	return gpus, devices
}

// amdKFD is the AMD backend of this machine.
type amdKFD struct {
	root  fs.FS
	probe func(path string) error
	// devices are the last inventory's GPUs, by UUID, for telemetry.
	devices map[string]amdDevice
}

func (a *amdKFD) Inventory() (Node, error) {
	node := Node{Backend: "kfd", Vendor: AMD}
	if a.root == nil {
		return node, nil
	}
	nodes, err := readKFD(a.root)
	if err != nil {
		return Node{}, err
	}
	node.GPUs, a.devices = amdGPUs(a.root, nodes)
	if len(node.GPUs) == 0 {
		node.Warnings = append(node.Warnings, "no AMD GPU (no GPU node in the KFD topology, /sys/class/kfd)")
	}
	probeHidden(node.GPUs, a.probe)
	if v, err := readTrim(a.root, "sys/module/amdgpu/version"); err == nil {
		node.Driver = v
	}
	return node, nil
}

// Usage reads amdgpu's sysfs: gpu_busy_percent and mem_info_vram_used of
// each GPU's PCI device (a partition reports its whole GPU's), and the
// processes with memory on it from KFD's per-process entries,
// /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>.
func (a *amdKFD) Usage(uuids []string) ([]Usage, error) {
	if a.root == nil {
		return nil, fmt.Errorf("%w: no sysfs to read amdgpu's counters from", ErrNoTelemetry)
	}
	procs, _ := fs.ReadDir(a.root, kfdProcs)
	out := make([]Usage, len(uuids))
	for i, id := range uuids {
		u := Usage{UUID: id, Utilization: -1}
		d, ok := a.devices[id]
		if !ok {
			out[i] = u
			continue
		}
		if s, err := readTrim(a.root, sysPCI(d.bus, "gpu_busy_percent")); err == nil {
			if v, err := strconv.Atoi(s); err == nil {
				u.Utilization = v
			}
		}
		if s, err := readTrim(a.root, sysPCI(d.bus, "mem_info_vram_used")); err == nil {
			u.MemoryUsed, _ = strconv.ParseUint(s, 10, 64)
		}
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			s, err := readTrim(a.root, path.Join(kfdProcs, p.Name(), fmt.Sprintf("vram_%d", d.gpuID)))
			if err != nil {
				continue
			}
			mem, _ := strconv.ParseUint(s, 10, 64)
			u.Processes = append(u.Processes, GPUProcess{PID: pid, MemoryUsed: mem})
		}
		out[i] = u
	}
	return out, nil
}

func (a *amdKFD) Close() error { return nil }

// openAMD is AMD's backend: the KFD topology.
func openAMD(o Options) (Source, error) { return &amdKFD{root: o.Root, probe: o.ProbeDevice}, nil }

// identifyAMD checks a described AMD GPU and gives it its id
// (Topology.identify).
func identifyAMD(t Topology, g *GPU, tg TopologyGPU, i int) error {
	if tg.MIG != nil || tg.Tiles > 0 {
		return fmt.Errorf("an AMD GPU has no MIG devices or tiles: describe each partition (GCD) as a GPU of its own")
	}
	if g.UUID == "" {
		g.UUID = "GPU-" + strings.ReplaceAll(strings.TrimPrefix(DeterministicUUID(t.Name, i), "GPU-"), "-", "")[:16]
	}
	return uuidOfGPU(g.UUID)
}
