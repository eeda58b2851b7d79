package gpu

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// The NVIDIA backend without NVML: what the kernel driver and sysfs say.

// nvidiaSysfs is the backend without NVML: the driver's
// /proc/driver/nvidia/gpus/<bus>/information lists every GPU with its UUID
// and minor (regardless of cgroups), and sysfs gives NUMA locality.
type nvidiaSysfs struct {
	root  fs.FS
	probe func(path string) error
	// why says why NVML is not used: its error, or why it was not
	// loaded; the inventory's warning and Usage's error give it.
	why string
	// unneeded: NVML was not loaded because the caller needs nothing it
	// adds (NeedList), so nothing is missing and the inventory does not
	// warn.
	unneeded bool
}

func (s nvidiaSysfs) Inventory() (Node, error) {
	node := Node{Backend: "sysfs", Vendor: NVIDIA}
	if !s.unneeded {
		node.Warnings = append(node.Warnings, s.why+": GPUs are read from /proc/driver/nvidia and sysfs, without utilisation telemetry or MIG devices")
	}
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
		g.NUMANode, g.LocalCPUs = SysfsLocality(s.root, g.BusID)
		node.GPUs = append(node.GPUs, g)
	}
	probeHidden(node.GPUs, s.probe)
	sortByBus(node.GPUs)
	for i := range node.GPUs {
		node.GPUs[i].Index = i
	}
	return node, nil
}

// parseGPUInformation reads the driver's per-GPU file:
//
//	Model:           NVIDIA H100 80GB HBM3
//	GPU UUID:        GPU-8932f937-d72c-4106-c12f-20bd9faed9f6
//	Bus Location:    0000:18:00.0
//	Device Minor:    0
func parseGPUInformation(text, dir string) (GPU, error) {
	g := GPU{Vendor: NVIDIA, Minor: -1, NUMANode: -1}
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

func (s nvidiaSysfs) Usage([]string) ([]Usage, error) {
	return nil, fmt.Errorf("%w: %s, and the NVIDIA driver publishes no utilisation in /proc or sysfs, so GPU%% and GPU memory are not reported and launch verification cannot run", ErrNoTelemetry, s.why)
}
func (s nvidiaSysfs) Close() error { return nil }

func procGPUInfo(bus string) string { return path.Join("proc/driver/nvidia/gpus", bus, "information") }

func countNvidiaPCI(root fs.FS) int {
	entries, err := fs.ReadDir(root, "sys/bus/pci/devices")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		// a node without NVIDIA's driver (every rank on an AMD or Intel
		// node looks) has a hundred PCI functions or more: their class is
		// read only for NVIDIA's
		if vendor, _ := readTrim(root, sysPCI(e.Name(), "vendor")); vendor != "0x10de" {
			continue
		}
		class, _ := readTrim(root, sysPCI(e.Name(), "class"))
		if strings.HasPrefix(class, "0x0300") || strings.HasPrefix(class, "0x0302") {
			n++
		}
	}
	return n
}

// identifyNVIDIA checks a described NVIDIA GPU and gives it its id
// (Topology.identify).
func identifyNVIDIA(t Topology, g *GPU, tg TopologyGPU, i int) error {
	if tg.Tiles > 0 {
		return fmt.Errorf("tiles are Intel's; an NVIDIA GPU has MIG devices")
	}
	if g.UUID == "" {
		g.UUID = DeterministicUUID(t.Name, i)
	}
	return uuidOfGPU(g.UUID)
}
