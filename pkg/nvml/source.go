package nvml

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// Options choose and feed a backend.
type Options struct {
	// Simulate is a built-in node name (see SimulatedNames) or the path of
	// a topology file; empty means this machine.
	Simulate string
	// Root is the machine's filesystem for /proc/driver/nvidia and
	// /sys/bus/pci (normally os.DirFS("/")).
	Root fs.FS
	// NodeFile is the path of a node file: this machine's GPUs described
	// in JSON, for machines where NVML cannot see them (docs/topology.md).
	NodeFile string
	// SimulatedUsage is the directory where apps on a simulated or
	// described node declare their GPU use (SimulatedUsageEnv); "" means
	// such nodes have no telemetry.
	SimulatedUsage string
	// ProbeDevice opens a GPU's device file (/dev/nvidia<minor>); an
	// fs.ErrPermission means a device cgroup hides that GPU from this
	// process. Nil: no probing.
	ProbeDevice func(path string) error
}

// Open picks the backend: a simulated or described node when asked,
// else real NVML, else sysfs with a warning saying what is missing.
func Open(o Options) (Source, error) {
	if o.Simulate != "" {
		return openSimulated(o.Simulate, o.SimulatedUsage)
	}
	if o.NodeFile != "" {
		data, err := os.ReadFile(o.NodeFile)
		if err != nil {
			return nil, fmt.Errorf("node file: %w", err)
		}
		t, err := ParseNodeFile(data, o.NodeFile)
		if err != nil {
			return nil, err
		}
		node := t.Node("node file " + o.NodeFile)
		node.CPUs = nil
		probeHidden(node.GPUs, o.ProbeDevice)
		return staticSource{node: node}, nil
	}
	src, err := OpenNVML(o.Root)
	if err == nil {
		return src, nil
	}
	if !errors.Is(err, ErrNoLibrary) && !errors.Is(err, ErrNoCgo) {
		return nil, err
	}
	return sysfsSource{root: o.Root, probe: o.ProbeDevice, why: err.Error()}, nil
}

func openSimulated(spec, usageDir string) (Source, error) {
	if strings.ContainsRune(spec, '/') || strings.HasSuffix(spec, ".json") {
		t, err := ReadTopologyFile(spec)
		if err != nil {
			return nil, err
		}
		return staticSource{node: t.Node("topology file " + spec), usageDir: usageDir}, nil
	}
	t, err := BuiltinTopology(spec)
	if err != nil {
		return nil, err
	}
	return simulatedSource(t, usageDir)
}

// staticSource serves a fixed inventory (topology files) and the GPU use
// apps declare in usageDir.
type staticSource struct {
	node     Node
	usageDir string
}

func (s staticSource) Inventory() (Node, error) { return s.node, nil }
func (s staticSource) Close() error             { return nil }
func (s staticSource) Usage(uuids []string) ([]Usage, error) {
	if s.usageDir == "" {
		return nil, ErrNoTelemetry
	}
	return declaredUsage(s.usageDir, uuids), nil
}
func (s sysfsSource) Usage([]string) ([]Usage, error) { return nil, ErrNoTelemetry }
func (s sysfsSource) Close() error                    { return nil }
func sortByBus(gpus []GPU) {
	sort.SliceStable(gpus, func(i, j int) bool { return gpus[i].BusID < gpus[j].BusID })
}
func readTrim(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	return strings.TrimSpace(string(b)), err
}
func sysPCI(bus, file string) string { return path.Join("sys/bus/pci/devices", bus, file) }
func procGPUInfo(bus string) string  { return path.Join("proc/driver/nvidia/gpus", bus, "information") }
func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, os.ErrPermission)
}

// sysfsSource is the backend without NVML: the driver's
// /proc/driver/nvidia/gpus/<bus>/information lists every GPU with its UUID
// and minor (regardless of cgroups), and sysfs gives NUMA locality.
type sysfsSource struct {
	root  fs.FS
	probe func(path string) error
	why   string
}

func (s sysfsSource) Inventory() (Node, error) {
	node := Node{Backend: "sysfs"}
	node.Warnings = append(node.Warnings, s.why+": GPUs are read from /proc/driver/nvidia and sysfs, without utilisation telemetry or MIG devices")
	if s.root == nil {
		return node, nil
	}
	entries, err := fs.ReadDir(s.root, "proc/driver/nvidia/gpus")
	if err != nil {
		if n := countNvidiaPCI(s.root); n > 0 {
			node.Warnings = append(node.Warnings, fmt.Sprintf(
				"sysfs lists %d NVIDIA PCI display device(s) but /proc/driver/nvidia is missing: the NVIDIA kernel driver is not loaded, so they cannot be used", n))
		} else {
			node.Warnings = append(node.Warnings, "no NVIDIA driver (/proc/driver/nvidia is missing) and no NVIDIA PCI device in sysfs: this machine has no NVIDIA GPU")
		}
		return node, nil
	}
	for _, e := range entries {
		info, err := fs.ReadFile(s.root, procGPUInfo(e.Name()))
		if err != nil {
			node.Warnings = append(node.Warnings, fmt.Sprintf("GPU %s: %v", e.Name(), err))
			continue
		}
		g, err := parseGPUInformation(string(info), e.Name())
		if err != nil {
			node.Warnings = append(node.Warnings, err.Error())
			continue
		}
		g.NUMANode, g.LocalCPUs = sysfsLocality(s.root, g.BusID)
		node.GPUs = append(node.GPUs, g)
	}
	probeHidden(node.GPUs, s.probe)
	sortByBus(node.GPUs)
	for i := range node.GPUs {
		node.GPUs[i].Index = i
	}
	return node, nil
}

// probeHidden marks the GPUs whose device file a device cgroup denies: the
// driver lists every GPU of the node, but this process may open only its
// job's. Other errors (ENXIO on a device with no driver behind it, ENOENT)
// do not hide a GPU: only the cgroup's EPERM says "not yours".
func probeHidden(gpus []GPU, probe func(path string) error) {
	if probe == nil {
		return
	}
	for i, g := range gpus {
		dev := g.Device
		if dev == "" && g.Minor >= 0 {
			dev = fmt.Sprintf("/dev/nvidia%d", g.Minor)
		}
		if dev == "" {
			continue
		}
		if err := probe(dev); err != nil && isPermission(err) {
			gpus[i].Hidden = true
		}
	}
}

// parseGPUInformation reads the driver's per-GPU file:
//
//	Model:           NVIDIA H100 80GB HBM3
//	GPU UUID:        GPU-8932f937-d72c-4106-c12f-20bd9faed9f6
//	Bus Location:    0000:18:00.0
//	Device Minor:    0
func parseGPUInformation(text, dir string) (GPU, error) {
	g := GPU{Minor: -1, NUMANode: -1}
	for _, line := range strings.Split(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "Model":
			g.Name = val
		case "GPU UUID":
			g.UUID = val
		case "Bus Location":
			g.BusID = val
		case "Device Minor":
			if n, err := strconv.Atoi(val); err == nil {
				g.Minor = n
			}
		}
	}
	if g.BusID == "" {
		g.BusID = dir
	}
	bus, err := NormalizeBusID(g.BusID)
	if err != nil {
		return GPU{}, fmt.Errorf("GPU %s: %w", dir, err)
	}
	g.BusID = bus
	if !strings.HasPrefix(g.UUID, "GPU-") {
		return GPU{}, fmt.Errorf("GPU %s: no GPU UUID in /proc/driver/nvidia information", dir)
	}
	return g, nil
}

// sysfsLocality reads a PCI device's NUMA node (-1: firmware did not say)
// and local CPU list.
func sysfsLocality(root fs.FS, bus string) (int, cpuset.Set) {
	numa := -1
	if root == nil {
		return numa, cpuset.Set{}
	}
	if s, err := readTrim(root, sysPCI(bus, "numa_node")); err == nil {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			numa = n
		}
	}
	var cpus cpuset.Set
	if s, err := readTrim(root, sysPCI(bus, "local_cpulist")); err == nil {
		cpus, _ = cpuset.Parse(s)
	}
	return numa, cpus
}

func countNvidiaPCI(root fs.FS) int {
	entries, err := fs.ReadDir(root, "sys/bus/pci/devices")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		vendor, _ := readTrim(root, sysPCI(e.Name(), "vendor"))
		class, _ := readTrim(root, sysPCI(e.Name(), "class"))
		if vendor == "0x10de" && (strings.HasPrefix(class, "0x0300") || strings.HasPrefix(class, "0x0302")) {
			n++
		}
	}
	return n
}
