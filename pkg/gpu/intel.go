package gpu

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The Intel backend: the DRM devices the i915 and xe drivers publish in
// sysfs, with their tiles. No Level Zero library is needed.

const drmClass = "sys/class/drm"

// integratedGraphics is where an Intel processor's own graphics sits on
// every platform: not a compute accelerator here.
const integratedGraphics = "0000:00:02.0"

// intelCard is one DRM card of vendor 0x8086, as sysfs shows it.
type intelCard struct {
	card   string // cardN
	bus    string // its PCI address
	driver string // i915 or xe
	device uint64 // PCI device id
	render int    // N of /dev/dri/renderD<N>; -1 when none
	tiles  int    // tiles listed: i915's gt/gt<K>, xe's device/tile<K>
}

// readIntelCards reads the DRM cards of vendor 0x8086 under root, in
// PCI order.
func readIntelCards(root fs.FS) []intelCard {
	entries, _ := fs.ReadDir(root, drmClass)
	var cards []intelCard
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "card") || strings.Contains(name, "-") {
			continue // card0-DP-1 and the like are connectors
		}
		dev := path.Join(drmClass, name, "device")
		if v, _ := readTrim(root, path.Join(dev, "vendor")); v != "0x8086" {
			continue
		}
		c := intelCard{card: name, render: -1}
		uevent, _ := fs.ReadFile(root, path.Join(dev, "uevent"))
		c.bus, c.driver = parseUevent(string(uevent))
		if c.bus == "" {
			continue
		}
		if id, _ := readTrim(root, path.Join(dev, "device")); id != "" {
			c.device, _ = strconv.ParseUint(strings.TrimPrefix(id, "0x"), 16, 32)
		}
		drm, _ := fs.ReadDir(root, path.Join(dev, "drm"))
		for _, d := range drm {
			if n, err := strconv.Atoi(strings.TrimPrefix(d.Name(), "renderD")); err == nil && strings.HasPrefix(d.Name(), "renderD") {
				c.render = n
			}
		}
		c.tiles = countDirs(root, path.Join(drmClass, name, "gt"), "gt") + countDirs(root, dev, "tile")
		cards = append(cards, c)
	}
	sort.Slice(cards, func(i, j int) bool { return cards[i].bus < cards[j].bus })
	return cards
}

// parseUevent reads a device's PCI address and driver from its uevent.
func parseUevent(text string) (bus, driver string) {
	for _, line := range strings.Split(text, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "PCI_SLOT_NAME":
			bus, _ = NormalizeBusID(v)
		case "DRIVER":
			driver = v
		}
	}
	return bus, driver
}

// countDirs counts the entries of dir named prefix<number>.
func countDirs(root fs.FS, dir, prefix string) int {
	entries, _ := fs.ReadDir(root, dir)
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix)); err == nil && strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n
}

// intelGPUs turns Intel cards into GPUs. The rules, in order:
//  1. The processor's integrated graphics (0000:00:02.0) is left out.
//  2. A card's tiles are i915's gt/gt<K> or xe's device/tile<K>; a card
//     listing none has one, and is its own device.
//  3. The device file is the card's render node; its tiles share it.
//  4. NUMA node and local CPUs are the PCI device's.
//  5. Level Zero names devices by ordinal only (ZE_AFFINITY_MASK), so the
//     ids are derived: "ZE-<PCI address>" for a card, and ".<tile>" added
//     for a tile.
//
// It returns the cards, and why any was left out.
func intelGPUs(root fs.FS, cards []intelCard) ([]GPU, []string) {
	var gpus []GPU
	var notes []string
	for _, c := range cards {
		if c.bus == integratedGraphics {
			notes = append(notes, fmt.Sprintf("the Intel GPU at %s (%s) is the processor's integrated graphics: not used", c.bus, c.card))
			continue
		}
		g := GPU{Vendor: Intel, UUID: "ZE-" + c.bus, BusID: c.bus, Index: len(gpus), Minor: c.render, Name: intelName(c), NUMANode: -1}
		if c.render >= 0 {
			g.Device = fmt.Sprintf("/dev/dri/renderD%d", c.render)
		}
		g.NUMANode, g.LocalCPUs = SysfsLocality(root, c.bus)
		if c.tiles > 1 {
			g.Tiles = g.split(c.tiles)
		}
		gpus = append(gpus, g)
	}
	return gpus, notes
}

// intelName names a card by its PCI device id, where known.
func intelName(c intelCard) string {
	switch {
	case c.device >= 0x0bd0 && c.device <= 0x0bdb:
		return "Intel Data Center GPU Max"
	case c.device >= 0x56c0 && c.device <= 0x56c1:
		return "Intel Data Center GPU Flex"
	}
	return fmt.Sprintf("Intel GPU 0x%04x (%s)", c.device, c.driver)
}

// intelDRM is the Intel backend of this machine.
type intelDRM struct {
	root  fs.FS
	probe func(path string) error
}

func (d intelDRM) Inventory() (Node, error) {
	node := Node{Backend: "drm", Vendor: Intel}
	if d.root == nil {
		return node, nil
	}
	var notes []string
	node.GPUs, notes = intelGPUs(d.root, readIntelCards(d.root))
	node.Warnings = append(node.Warnings, notes...)
	if len(node.GPUs) == 0 {
		node.Warnings = append(node.Warnings, "no Intel GPU (no DRM device of vendor 0x8086 in /sys/class/drm, integrated graphics aside)")
	}
	probeHidden(node.GPUs, d.probe)
	return node, nil
}

// Usage: the i915 and xe drivers publish no utilisation in sysfs; Level
// Zero's sysman would be needed, which this backend does not load.
func (d intelDRM) Usage([]string) ([]Usage, error) {
	return nil, fmt.Errorf("%w: Intel's i915 and xe drivers publish no GPU utilisation or per-process GPU memory in sysfs (xpu-smi reads them through Level Zero's Sysman, which gpulaunch does not load), so GPU%% and GPU memory are not reported and launch verification cannot run", ErrNoTelemetry)
}
func (d intelDRM) Close() error { return nil }

// openIntel is Intel's backend: its DRM devices.
func openIntel(o Options) (Source, error) { return intelDRM{root: o.Root, probe: o.ProbeDevice}, nil }

// identifyIntel checks a described Intel GPU and gives it its id, derived
// from its address (Topology.identify).
func identifyIntel(_ Topology, g *GPU, tg TopologyGPU, _ int) error {
	if tg.MIG != nil {
		return fmt.Errorf("MIG devices are NVIDIA's; an Intel GPU has tiles")
	}
	if g.UUID == "" {
		g.UUID = "ZE-" + g.BusID
	}
	return nil
}
