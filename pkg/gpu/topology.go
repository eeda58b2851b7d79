package gpu

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
)

// Topology is a node described in JSON: the format of `--simulate FILE` and
// of the built-in simulated nodes (nodes/*.json). docs/topology.md is its
// reference.
type Topology struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Vendor made the node's GPUs: nvidia (the default), amd or intel.
	Vendor Vendor `json:"vendor,omitempty"`
	Driver string `json:"driver,omitempty"`
	// CUDAVersion is the newest CUDA the driver runs, "13.1" (nvidia-smi's
	// "CUDA Version"); "" when not given.
	CUDAVersion string `json:"cuda_version,omitempty"`
	// ReservedCPUs are kept for the system and given to no job (LUMI's
	// first core of every CCD, Aurora's cores 0 and 52), in the kernel's
	// list format.
	ReservedCPUs string `json:"reserved_cpus,omitempty"`
	// Mock names the go-nvml mock server a simulated node is built on
	// (dgxa100, dgxh100, dgxh200, dgxb200; gh200, which go-nvml has not:
	// pkg/nvml's mockServerGPUs); empty for plain descriptions.
	Mock string `json:"mock,omitempty"`
	// Layout generates the CPU list from counts; CPUList lists CPUs one by
	// one. Exactly one of them is given.
	Layout  *CPULayout    `json:"cpu_layout,omitempty"`
	CPUList []CPU         `json:"cpus,omitempty"`
	GPUs    []TopologyGPU `json:"gpus"`

	// machine is this machine's NUMA nodes, for a node file (nil: not
	// known): a GPU's numa naming its own memory node resolves to the node
	// holding its local CPUs (HostMemoryNode's rule 4).
	machine NUMANodes
}

// CPULayout is a regular node: Sockets × NUMAPerSocket × CoresPerNUMA cores,
// ThreadsPerCore hardware threads each.
type CPULayout struct {
	Sockets        int `json:"sockets"`
	NUMAPerSocket  int `json:"numa_per_socket"`
	CoresPerNUMA   int `json:"cores_per_numa"`
	ThreadsPerCore int `json:"threads_per_core"`
	// SMT is how Linux numbers the threads: "blocked" (x86 default: all
	// first threads, then all second threads) or "adjacent" (siblings have
	// consecutive ids, as on POWER and some BIOS settings).
	SMT string `json:"smt,omitempty"`
}

// TopologyGPU is one GPU of a described node.
type TopologyGPU struct {
	Name string `json:"name,omitempty"`
	UUID string `json:"uuid,omitempty"` // default: derived from the node name and position
	// ComputeCapability is an NVIDIA GPU's, "9.0"; "" when not given.
	ComputeCapability string `json:"compute_capability,omitempty"`
	PCI               string `json:"pci"`
	NUMA              *int   `json:"numa"` // null or -1: unknown
	// MemoryNUMA is the GPU's own memory as a NUMA node without CPUs
	// (Grace Hopper's HBM: 4, 12, 20, 28 on a 4×GH200 node), where host
	// memory is never bound (HostMemoryNode); the simulated NVML answers
	// it as the GPU's NUMA node id, as NVML does on those machines.
	MemoryNUMA *int   `json:"memory_numa,omitempty"`
	LocalCPUs  string `json:"local_cpus,omitempty"` // default: the CPUs of its NUMA node
	MemoryMiB  uint64 `json:"memory_mib,omitempty"`
	Minor      *int   `json:"minor,omitempty"` // default: position
	// Device is the GPU's device file (default /dev/nvidia<minor>, and an
	// AMD or Intel GPU's render node /dev/dri/renderD<128+minor>); node
	// files probe it to learn whether a device cgroup hides the GPU.
	Device string `json:"device,omitempty"`
	// Tiles is an Intel GPU's number of tiles (Level Zero sub-devices).
	Tiles int `json:"tiles,omitempty"`
	MIG   []struct {
		UUID      string `json:"uuid"`
		Name      string `json:"name,omitempty"`
		MemoryMiB uint64 `json:"memory_mib,omitempty"`
	} `json:"mig,omitempty"`
}

//go:embed nodes/*.json
var builtinNodes embed.FS

// SimulatedNames lists the built-in simulated nodes.
func SimulatedNames() []string {
	entries, _ := builtinNodes.ReadDir("nodes")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	return names
}

// BuiltinTopology returns a built-in node description by name.
func BuiltinTopology(name string) (Topology, error) {
	data, err := builtinNodes.ReadFile(path.Join("nodes", name+".json"))
	if err != nil {
		return Topology{}, fmt.Errorf("no simulated node %q (known: %s; or give a topology file path)",
			name, strings.Join(SimulatedNames(), ", "))
	}
	return ParseTopology(data, name)
}

// ReadTopologyFile reads and checks a topology file.
func ReadTopologyFile(file string) (Topology, error) {
	data, err := readDescription(file, "topology file")
	if err != nil {
		return Topology{}, err
	}
	return ParseTopology(data, file)
}

// readDescription reads a topology or node file (what), saying what is
// there instead when it is not a file.
func readDescription(file, what string) ([]byte, error) {
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s %s is a directory: give the JSON file in it that describes the node (docs/topology.md)", what, file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return data, nil
}

// ParseTopology decodes and validates a description; origin names it in
// errors.
func ParseTopology(data []byte, origin string) (Topology, error) {
	t, err := decodeTopology(data, "topology", origin)
	if err != nil {
		return Topology{}, err
	}
	if _, err := t.cpus(); err != nil {
		return Topology{}, fmt.Errorf("topology %s: %w", origin, err)
	}
	if _, err := t.gpus(); err != nil {
		return Topology{}, fmt.Errorf("topology %s: %w", origin, err)
	}
	return t, nil
}

// ParseNodeFile decodes a node file: a description of this machine's GPUs
// for when NVML cannot see them. It has no CPUs: they are this machine's,
// read from sysfs like its affinity and cgroups.
func ParseNodeFile(data []byte, origin string) (Topology, error) {
	t, err := decodeTopology(data, "node file", origin)
	if err != nil {
		return Topology{}, err
	}
	if t.Layout != nil || t.CPUList != nil {
		return Topology{}, fmt.Errorf("node file %s: a node file describes this machine's GPUs only (its CPUs are read from sysfs); remove cpu_layout/cpus, or use --simulate for another machine", origin)
	}
	if t.Mock != "" {
		return Topology{}, fmt.Errorf("node file %s: mock is for built-in simulated nodes", origin)
	}
	if _, err := t.gpus(); err != nil {
		return Topology{}, fmt.Errorf("node file %s: %w", origin, err)
	}
	return t, nil
}

// decodeTopology decodes a description; kind ("topology", "node file")
// and origin name it in errors, which give the line and column.
func decodeTopology(data []byte, kind, origin string) (Topology, error) {
	var t Topology
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Topology{}, fmt.Errorf("%s %w", kind, jsonerr.Explain(origin, data, err))
	}
	// Decode reads one value: what follows it would be ignored
	if rest := data[dec.InputOffset():]; len(bytes.TrimSpace(rest)) > 0 {
		off := dec.InputOffset() + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n")))
		line, col := jsonerr.Position(data, off)
		return Topology{}, fmt.Errorf("%s %s:%d:%d: more after the node's JSON object ends: one file describes one node (a stray } or a second object?)", kind, origin, line, col)
	}
	if t.Name == "" {
		t.Name = strings.TrimSuffix(path.Base(origin), ".json")
	}
	return t, nil
}

// Node turns the description into an inventory without any NVML in
// between (topology files, node files, and simulated nodes in builds
// without cgo). A node file's Node has no CPUs: "this machine's".
func (t Topology) Node(backend string) Node {
	cpus, _ := t.cpus()
	gpus, _ := t.gpus()
	reserved, _ := cpuset.Parse(t.ReservedCPUs)
	n := Node{Backend: backend, Vendor: t.vendor(), Driver: t.Driver, CUDAVersion: t.CUDAVersion, GPUs: gpus, CPUs: cpus, ReservedCPUs: reserved, Described: true}
	if len(gpus) == 0 {
		n.Vendor = ""
	}
	return n
}

func (t Topology) vendor() Vendor {
	if t.Vendor == "" {
		return NVIDIA
	}
	return t.Vendor
}

func (t Topology) cpus() ([]CPU, error) {
	switch {
	case t.Layout != nil && t.CPUList != nil:
		return nil, fmt.Errorf("give either cpu_layout or cpus, not both")
	case t.CPUList != nil:
		seen := map[int]bool{}
		for _, c := range t.CPUList {
			if c.ID < 0 || c.Core < 0 || c.Socket < 0 || c.NUMA < 0 {
				return nil, fmt.Errorf("cpu %d: ids must be >= 0", c.ID)
			}
			// a set of CPUs or NUMA nodes is a bitmap as long as its
			// largest id: cpu 99999999999 asked for 12 GB (issue 34)
			if c.ID >= cpuset.MaxID || c.Core >= cpuset.MaxID || c.Socket >= cpuset.MaxID || c.NUMA >= cpuset.MaxID {
				return nil, fmt.Errorf("cpu %d: its cpu, core, socket and numa ids are 0..%d", c.ID, cpuset.MaxID-1)
			}
			if seen[c.ID] {
				return nil, fmt.Errorf("cpu %d listed twice", c.ID)
			}
			seen[c.ID] = true
		}
		out := append([]CPU(nil), t.CPUList...)
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out, nil
	case t.Layout != nil:
		return t.Layout.expand()
	}
	return nil, fmt.Errorf("no CPUs: give cpu_layout or cpus")
}

func (l CPULayout) expand() ([]CPU, error) {
	if l.Sockets < 1 || l.NUMAPerSocket < 1 || l.CoresPerNUMA < 1 || l.ThreadsPerCore < 1 {
		return nil, fmt.Errorf("cpu_layout: sockets, numa_per_socket, cores_per_numa and threads_per_core must all be >= 1")
	}
	// multiplied one at a time, each product bounded: four counts of
	// 2^63-1 would wrap to a small one
	all := 1
	for _, n := range []int{l.Sockets, l.NUMAPerSocket, l.CoresPerNUMA, l.ThreadsPerCore} {
		if n > cpuset.MaxID || all*n > cpuset.MaxID {
			return nil, fmt.Errorf("cpu_layout: more than %d CPUs (sockets × numa_per_socket × cores_per_numa × threads_per_core)", cpuset.MaxID)
		}
		all *= n
	}
	cores := l.Sockets * l.NUMAPerSocket * l.CoresPerNUMA
	var out []CPU
	for c := 0; c < cores; c++ {
		numa := c / l.CoresPerNUMA
		socket := numa / l.NUMAPerSocket
		for th := 0; th < l.ThreadsPerCore; th++ {
			var id, first int
			switch l.SMT {
			case "", "blocked":
				id, first = th*cores+c, c
			case "adjacent":
				id, first = c*l.ThreadsPerCore+th, c*l.ThreadsPerCore
			default:
				return nil, fmt.Errorf("cpu_layout: smt %q is not blocked or adjacent", l.SMT)
			}
			out = append(out, CPU{ID: id, Core: first, Socket: socket, NUMA: numa})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (t Topology) gpus() ([]GPU, error) {
	if _, ok := ParseVendor(string(t.vendor())); !ok {
		return nil, fmt.Errorf("vendor %q: use %s", t.Vendor, VendorNames())
	}
	if _, err := cpuset.Parse(t.ReservedCPUs); err != nil {
		return nil, fmt.Errorf("reserved_cpus: %w", err)
	}
	if t.CUDAVersion != "" {
		if _, err := ParseVersion(t.CUDAVersion, "cuda_version"); err != nil {
			return nil, err
		}
	}
	// A node file has no CPUs; its NUMA ids are checked against sysfs later.
	described := t.Layout != nil || t.CPUList != nil
	var cpus []CPU
	if described {
		var err error
		if cpus, err = t.cpus(); err != nil {
			return nil, err
		}
	}
	numaCPUs := map[int][]int{}
	for _, c := range cpus {
		numaCPUs[c.NUMA] = append(numaCPUs[c.NUMA], c.ID)
	}
	var nodes NUMANodes = nodeFileNodes{machine: t.machine, memory: describedNodes(nil, t.GPUs)}
	if described {
		nodes = describedNodes(cpus, t.GPUs)
	}
	seen := map[string]bool{}
	var out []GPU
	for i, tg := range t.GPUs {
		bus, err := NormalizeBusID(tg.PCI)
		if err != nil {
			return nil, fmt.Errorf("gpu %d: %w", i, err)
		}
		g := GPU{
			Vendor: t.vendor(), UUID: tg.UUID, BusID: bus, Index: i, Minor: i, Name: tg.Name,
			MemoryBytes: tg.MemoryMiB << 20, NUMANode: -1, ComputeCapability: tg.ComputeCapability,
		}
		if tg.ComputeCapability != "" {
			if _, err := ParseVersion(tg.ComputeCapability, "compute_capability"); err != nil {
				return nil, fmt.Errorf("gpu %d: %w", i, err)
			}
		}
		if tg.Minor != nil {
			g.Minor = *tg.Minor
		}
		if err := t.identify(&g, tg, i); err != nil {
			return nil, fmt.Errorf("gpu %d: %w", i, err)
		}
		if err := checkNUMA(tg, numaCPUs, nodes, described); err != nil {
			return nil, fmt.Errorf("gpu %d: %w", i, err)
		}
		switch {
		case tg.LocalCPUs != "":
			if g.LocalCPUs, err = cpuset.Parse(tg.LocalCPUs); err != nil {
				return nil, fmt.Errorf("gpu %d: local_cpus: %w", i, err)
			}
		case tg.NUMA != nil && *tg.NUMA >= 0 && described:
			g.LocalCPUs = cpuset.New(numaCPUs[*tg.NUMA]...)
		}
		if tg.NUMA != nil && *tg.NUMA >= 0 {
			g.NUMANode = HostMemoryNode([]int{*tg.NUMA}, g.LocalCPUs, nodes)
		}
		if tg.Tiles > 1 {
			g.Tiles = g.split(tg.Tiles)
		}
		for j, m := range tg.MIG {
			if !strings.HasPrefix(m.UUID, "MIG-") {
				return nil, fmt.Errorf("gpu %d mig %d: uuid %q does not start with MIG-", i, j, m.UUID)
			}
			g.MIG = append(g.MIG, GPU{UUID: m.UUID, BusID: bus, Index: i, Minor: g.Minor, Name: m.Name,
				MemoryBytes: m.MemoryMiB << 20, NUMANode: g.NUMANode, LocalCPUs: g.LocalCPUs, Parent: g.UUID, ComputeCapability: g.ComputeCapability})
		}
		for _, id := range append([]string{g.UUID, g.BusID}, migUUIDs(g)...) {
			if id == g.BusID && backendOf(g.Vendor).sharedBus {
				continue // the partitions of one AMD GPU share its address
			}
			if seen[id] {
				return nil, fmt.Errorf("gpu %d: %s appears twice", i, id)
			}
			seen[id] = true
		}
		out = append(out, g)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].BusID < out[j].BusID })
	return out, nil
}

// checkNUMA checks a described GPU's numa and memory_numa against the
// description's nodes (described false: a node file, whose nodes are this
// machine's, which it does not check): numa names a node with CPUs, or the
// memory node of a GPU — as a driver may name a Grace Hopper GPU's own
// node — with local_cpus saying where its Grace is; memory_numa names a
// node without CPUs.
func checkNUMA(tg TopologyGPU, numaCPUs map[int][]int, nodes NUMANodes, described bool) error {
	for _, v := range []struct {
		field string
		n     *int
	}{{"numa", tg.NUMA}, {"memory_numa", tg.MemoryNUMA}} {
		if v.n != nil && *v.n >= cpuset.MaxID {
			return fmt.Errorf("%s %d: a NUMA node is 0..%d (or -1: unknown)", v.field, *v.n, cpuset.MaxID-1)
		}
	}
	if m := tg.MemoryNUMA; m != nil && *m >= 0 && len(numaCPUs[*m]) > 0 {
		return fmt.Errorf("memory_numa %d: that node has CPUs in this description; a GPU's own memory node has none", *m)
	}
	if tg.NUMA == nil || *tg.NUMA < 0 || nodes == nil || len(numaCPUs[*tg.NUMA]) > 0 {
		return nil
	}
	cpus, listed := nodes.CPUs(*tg.NUMA)
	switch {
	case !listed && described:
		return fmt.Errorf("numa node %d has no CPUs in this description", *tg.NUMA)
	case !listed || !cpus.IsEmpty():
		return nil // a node file: this machine's node, or one it does not list
	}
	if tg.LocalCPUs == "" {
		return fmt.Errorf("numa node %d is a GPU's memory (memory_numa), without CPUs: give local_cpus, the CPUs of the node it is attached to", *tg.NUMA)
	}
	return nil
}

// identify gives a described GPU its id and device file, as its vendor's
// backend would (backend.identify): NVIDIA's and AMD's ids start GPU-
// (default: derived from the node's name and the GPU's position, in the
// vendor's shape), Intel's are derived from the PCI address (Level Zero
// names devices by ordinal only); an AMD or Intel GPU's device file is its
// render node.
func (t Topology) identify(g *GPU, tg TopologyGPU, i int) error {
	b := backendOf(g.Vendor)
	if err := b.identify(t, g, tg, i); err != nil {
		return err
	}
	g.Device = tg.Device
	if g.Device == "" && b.renderNode {
		g.Device = fmt.Sprintf("/dev/dri/renderD%d", 128+g.Minor)
	}
	return nil
}

func migUUIDs(g GPU) []string {
	var ids []string
	for _, m := range g.MIG {
		ids = append(ids, m.UUID)
	}
	return ids
}

// DeterministicUUID makes a stable, UUID-shaped GPU id for a described GPU,
// so simulated runs are reproducible (go-nvml's mock draws random ones).
func DeterministicUUID(node string, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("gpulaunch/%s/%d", node, i)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
