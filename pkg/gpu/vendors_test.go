package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// kfdFixture writes a KFD topology as amdgpu publishes it: CPU nodes
// first, then a node per GPU (or per partition), each with its
// properties, and a PCIe io_link to its CPU node.
type kfdFixture struct {
	fs      fstest.MapFS
	next    int
	cpuNode []int // KFD node id of each NUMA node's CPU node
}

func newKFD(numa int) *kfdFixture {
	k := &kfdFixture{fs: fstest.MapFS{}}
	for n := range numa {
		k.node("0", "", fmt.Sprintf("cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\nio_links_count 0\nvendor_id 0\ndevice_id 0\nlocation_id 0\ndomain 0\nunique_id 0\n"))
		k.cpuNode = append(k.cpuNode, n)
	}
	return k
}

func (k *kfdFixture) node(gpuID, name, props string) int {
	id := k.next
	k.next++
	dir := fmt.Sprintf("%s/%d", kfdNodes, id)
	k.fs[dir+"/gpu_id"] = &fstest.MapFile{Data: []byte(gpuID + "\n")}
	k.fs[dir+"/name"] = &fstest.MapFile{Data: []byte(name + "\n")}
	k.fs[dir+"/properties"] = &fstest.MapFile{Data: []byte(props)}
	return id
}

// gpu adds a GPU node at bus:dev.fn (partition p), on NUMA node numa as
// sysfs says it (-1: the firmware does not), linked to that CPU node.
func (k *kfdFixture) gpu(bus int, partition uint64, numa, linkNUMA int, gpuID, uniqueID uint64, render int) {
	loc := partition<<28 | uint64(bus)<<8
	props := fmt.Sprintf("cpu_cores_count 0\nsimd_count 440\nio_links_count 1\ngfx_target_version 90010\nvendor_id 4098\ndevice_id 29704\n"+
		"location_id %d\ndomain 0\ndrm_render_minor %d\nhive_id 8\nunique_id %d\nnum_xcc 1\nlocal_mem_size 68702699520\n", loc, render, uniqueID)
	id := k.node(fmt.Sprint(gpuID), "gfx90a", props)
	k.fs[fmt.Sprintf("%s/%d/io_links/0/properties", kfdNodes, id)] = &fstest.MapFile{Data: []byte(
		fmt.Sprintf("type 2\nversion_major 0\nnode_from %d\nnode_to %d\nweight 20\nmin_bandwidth 312\nmax_bandwidth 64000\n", id, k.cpuNode[linkNUMA]))}
	bdf := fmt.Sprintf("0000:%02x:00.0", bus)
	k.fs["sys/bus/pci/devices/"+bdf+"/numa_node"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d\n", numa))}
}

// The KFD topology of a LUMI-G / Frontier node: 4 CPU nodes (NPS4), 8
// GCDs out of NUMA order.
func lumiKFD() *kfdFixture {
	k := newKFD(4)
	for g, numa := range []int{3, 3, 1, 1, 0, 0, 2, 2} {
		bus := []int{0xc1, 0xc6, 0xc9, 0xce, 0xd1, 0xd6, 0xd9, 0xde}[g]
		k.gpu(bus, 0, numa, numa, uint64(1000+g), 0x1234567800000000+uint64(g), 128+g)
	}
	return k
}

func TestKFDMI250XNode(t *testing.T) {
	k := lumiKFD()
	probed := map[string]bool{}
	src := &amdKFD{root: k.fs, probe: func(path string) error {
		probed[path] = true
		if path == "/dev/dri/renderD128" || path == "/dev/dri/renderD129" {
			return fmt.Errorf("open %s: %w", path, fs.ErrPermission) // another job's
		}
		return nil
	}}
	node, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	if node.Vendor != AMD || node.Backend != "kfd" || len(node.GPUs) != 8 {
		t.Fatalf("node %+v", node)
	}
	for g, want := range []string{"0000:c1:00.0 3", "0000:c6:00.0 3", "0000:c9:00.0 1", "0000:ce:00.0 1", "0000:d1:00.0 0", "0000:d6:00.0 0", "0000:d9:00.0 2", "0000:de:00.0 2"} {
		got := node.GPUs[g]
		if fmt.Sprintf("%s %d", got.BusID, got.NUMANode) != want || got.Vendor != AMD || got.Index != g {
			t.Errorf("GCD %d: %s numa %d, want %s", g, got.BusID, got.NUMANode, want)
		}
		if wantID := fmt.Sprintf("GPU-123456780000000%d", g); got.UUID != wantID || got.Device != fmt.Sprintf("/dev/dri/renderD%d", 128+g) {
			t.Errorf("GCD %d: uuid %s device %s, want %s", g, got.UUID, got.Device, wantID)
		}
		if got.Hidden != (g < 2) || got.MemoryBytes != 68702699520 || got.Name != "gfx90a" {
			t.Errorf("GCD %d: hidden %v memory %d name %q", g, got.Hidden, got.MemoryBytes, got.Name)
		}
	}
	if len(probed) != 8 {
		t.Errorf("probed %v, want every render node", probed)
	}
}

// MI300A: each APU its own NUMA node; the firmware's numa_node is -1 here,
// so the PCIe link to the CPU node decides (rule 5).
func TestKFDMI300AFromLinks(t *testing.T) {
	k := newKFD(4)
	for i := range 4 {
		k.gpu(0x02+0x40*i, 0, -1, i, uint64(2000+i), 0xa0+uint64(i), 128+i)
	}
	gpus, devices := amdGPUs(k.fs, mustKFD(t, k.fs))
	for i, g := range gpus {
		if g.NUMANode != i || devices[g.UUID].gpuID != uint64(2000+i) {
			t.Errorf("APU %d: NUMA %d gpu_id %d, want NUMA %d (from its PCIe link)", i, g.NUMANode, devices[g.UUID].gpuID, i)
		}
	}
}

// A partitioned GPU (an MI300X in CPX mode) shows a node per partition on
// one PCI address: each is a device of its own; a consumer part without a
// unique id gets an id from its address.
func TestKFDPartitionsAndNoUniqueID(t *testing.T) {
	k := newKFD(1)
	for p := range 3 {
		k.gpu(0x11, uint64(p), 0, 0, uint64(3000+p), 0xbeef00+uint64(p), 128+p)
	}
	k.gpu(0x21, 0, 0, 0, 3100, 0, 140)
	gpus, _ := amdGPUs(k.fs, mustKFD(t, k.fs))
	var got []string
	for _, g := range gpus {
		got = append(got, g.BusID+" "+g.UUID)
	}
	want := "0000:11:00.0 GPU-0000000000beef00|0000:11:00.0 GPU-0000000000beef01|0000:11:00.0 GPU-0000000000beef02|0000:21:00.0 AMD-0000:21:00.0"
	if strings.Join(got, "|") != want {
		t.Errorf("got %v\nwant %s", got, want)
	}
}

func TestKFDPropertiesErrors(t *testing.T) {
	for _, bad := range []string{"simd_count x\n", "location_id 1 2\n", "lonely\n"} {
		if _, err := parseKFDProperties(bad); err == nil {
			t.Errorf("parseKFDProperties(%q) accepted", bad)
		}
	}
	k := newKFD(1)
	k.fs[kfdNodes+"/0/properties"] = &fstest.MapFile{Data: []byte("simd_count x\n")}
	if _, err := (&amdKFD{root: k.fs}).Inventory(); err == nil || !strings.Contains(err.Error(), "KFD topology node 0") {
		t.Errorf("a broken properties file: %v", err)
	}
}

// Telemetry from amdgpu's sysfs and KFD's per-process entries.
func TestKFDUsage(t *testing.T) {
	k := lumiKFD()
	k.fs["sys/bus/pci/devices/0000:c1:00.0/gpu_busy_percent"] = &fstest.MapFile{Data: []byte("87\n")}
	k.fs["sys/bus/pci/devices/0000:c1:00.0/mem_info_vram_used"] = &fstest.MapFile{Data: []byte("4294967296\n")}
	k.fs[kfdProcs+"/4242/vram_1000"] = &fstest.MapFile{Data: []byte("1073741824\n")}
	k.fs[kfdProcs+"/4343/vram_1001"] = &fstest.MapFile{Data: []byte("5\n")}
	src := &amdKFD{root: k.fs}
	node, _ := src.Inventory()
	us, err := src.Usage([]string{node.GPUs[0].UUID, node.GPUs[1].UUID})
	if err != nil {
		t.Fatal(err)
	}
	if u := us[0]; u.Utilization != 87 || u.MemoryUsed != 4<<30 || len(u.Processes) != 1 || u.Processes[0] != (GPUProcess{PID: 4242, MemoryUsed: 1 << 30}) {
		t.Errorf("GCD 0: %+v", u)
	}
	if u := us[1]; u.Utilization != -1 || len(u.Processes) != 1 || u.Processes[0].PID != 4343 {
		t.Errorf("GCD 1 (no busy percent published): %+v", u)
	}
}

// pvcFixture is an Aurora-like node: 6 PVC cards of 2 tiles, under i915
// (gt/gt0, gt1) or xe (device/tile0, tile1), and the processor's own
// graphics at 0000:00:02.0.
func pvcFixture(driver string) fstest.MapFS {
	m := fstest.MapFS{}
	card := func(n int, bus string, device string, tiles int) {
		dir := fmt.Sprintf("%s/card%d", drmClass, n)
		m[dir+"/device/vendor"] = &fstest.MapFile{Data: []byte("0x8086\n")}
		m[dir+"/device/device"] = &fstest.MapFile{Data: []byte(device + "\n")}
		m[dir+"/device/uevent"] = &fstest.MapFile{Data: []byte("DRIVER=" + driver + "\nPCI_CLASS=38000\nPCI_SLOT_NAME=" + bus + "\n")}
		m[fmt.Sprintf("%s/device/drm/renderD%d/dev", dir, 128+n)] = &fstest.MapFile{Data: []byte("226:128\n")}
		m[fmt.Sprintf("%s/device/drm/card%d/dev", dir, n)] = &fstest.MapFile{Data: []byte("226:0\n")}
		for t := range tiles {
			if driver == "xe" {
				m[fmt.Sprintf("%s/device/tile%d/gt%d/id", dir, t, t)] = &fstest.MapFile{Data: []byte("0\n")}
			} else {
				m[fmt.Sprintf("%s/gt/gt%d/id", dir, t)] = &fstest.MapFile{Data: []byte("0\n")}
			}
		}
		m["sys/bus/pci/devices/"+bus+"/numa_node"] = &fstest.MapFile{Data: []byte(map[bool]string{true: "0\n", false: "1\n"}[bus < "0001"])}
	}
	card(0, "0000:00:02.0", "0x4680", 0) // the processor's integrated graphics
	for i, bus := range []string{"0000:18:00.0", "0000:42:00.0", "0000:6c:00.0", "0001:18:00.0", "0001:42:00.0", "0001:6c:00.0"} {
		card(i+1, bus, "0x0bd5", 2)
	}
	m[drmClass+"/card1-DP-1/status"] = &fstest.MapFile{Data: []byte("disconnected\n")}
	return m
}

func TestIntelPVCNode(t *testing.T) {
	for _, driver := range []string{"i915", "xe"} {
		t.Run(driver, func(t *testing.T) {
			src := intelDRM{root: pvcFixture(driver), probe: func(path string) error {
				if path == "/dev/dri/renderD129" {
					return fmt.Errorf("open: %w", fs.ErrPermission)
				}
				return nil
			}}
			node, err := src.Inventory()
			if err != nil {
				t.Fatal(err)
			}
			if node.Vendor != Intel || len(node.GPUs) != 6 || !strings.Contains(strings.Join(node.Warnings, " "), "integrated graphics") {
				t.Fatalf("node %+v", node)
			}
			flat := node.Flatten()
			if len(flat) != 12 {
				t.Fatalf("%d devices, want 12 tiles", len(flat))
			}
			for i, d := range flat {
				card := node.GPUs[i/2]
				if d.Parent != card.UUID || d.Tile != i%2 || d.UUID != fmt.Sprintf("%s.%d", card.UUID, i%2) || d.NUMANode != i/6 {
					t.Errorf("device %d = %+v (card %s)", i, d, card.UUID)
				}
				if d.Hidden != (i < 2) {
					t.Errorf("tile %d hidden %v: card 0's render node is denied, so both its tiles are", i, d.Hidden)
				}
			}
			if g := node.GPUs[0]; g.Name != "Intel Data Center GPU Max" || g.Device != "/dev/dri/renderD129" || g.UUID != "ZE-0000:18:00.0" {
				t.Errorf("card 0 = %+v", g)
			}
			if _, err := src.Usage(nil); !errors.Is(err, ErrNoTelemetry) || !strings.Contains(err.Error(), "Intel") {
				t.Errorf("Usage: %v, want ErrNoTelemetry (sysfs has no utilisation)", err)
			}
		})
	}
}

// Open looks for every vendor and refuses a node with two, unless one is
// chosen.
func TestOpenVendors(t *testing.T) {
	root := lumiKFD().fs
	for name, f := range pvcFixture("xe") {
		root[name] = f
	}
	if _, err := Open(Options{Root: root}); err == nil || !strings.Contains(err.Error(), "8 amd GPU(s) (kfd) and 6 intel GPU(s) (drm)") || !strings.Contains(err.Error(), "--gpu-vendor") {
		t.Errorf("mixed vendors: %v", err)
	}
	for _, v := range []Vendor{AMD, Intel} {
		src, err := Open(Options{Root: root, Vendor: v})
		if err != nil {
			t.Fatal(err)
		}
		if node, _ := src.Inventory(); node.Vendor != v {
			t.Errorf("--gpu-vendor %s gave %s", v, node.Vendor)
		}
	}
	src, err := Open(Options{Root: lumiKFD().fs})
	if node, _ := src.Inventory(); err != nil || node.Vendor != AMD || len(node.GPUs) != 8 {
		t.Errorf("an AMD node: %v %+v", err, node)
	}
}

// A node file describes AMD and Intel GPUs too: render nodes probed, tiles.
func TestNodeFileVendors(t *testing.T) {
	amd, err := ParseNodeFile([]byte(`{"vendor": "amd", "gpus": [{"pci": "c1:00.0", "numa": 3}, {"pci": "c6:00.0", "numa": 3, "device": "/fake/renderD9"}]}`), "amd.json")
	if err != nil {
		t.Fatal(err)
	}
	n := amd.Node("node file")
	if g := n.GPUs[0]; n.Vendor != AMD || g.Vendor != AMD || g.Device != "/dev/dri/renderD128" || !strings.HasPrefix(g.UUID, "GPU-") || len(g.UUID) != 20 {
		t.Errorf("AMD node file GPU %+v", g)
	}
	if n.GPUs[1].Device != "/fake/renderD9" {
		t.Errorf("device %q", n.GPUs[1].Device)
	}
	intel, err := ParseNodeFile([]byte(`{"vendor": "intel", "gpus": [{"pci": "18:00.0", "tiles": 2, "memory_mib": 131072}]}`), "intel.json")
	if err != nil {
		t.Fatal(err)
	}
	// A tile is a device of its own: no tiles of its own (a later tile
	// copied from a half-built GPU once carried its elder sibling, and
	// flattening turned tile 1 back into tile 0), half the memory.
	flat := intel.Node("").Flatten()
	if len(flat) != 2 || flat[1].UUID != "ZE-0000:18:00.0.1" || flat[1].Tile != 1 || len(flat[1].Tiles) != 0 || flat[1].MemoryBytes != 64<<30 {
		t.Errorf("Intel node file devices %+v", flat)
	}
	for doc, want := range map[string]string{
		`{"vendor": "via", "gpus": []}`:                                   "vendor",
		`{"vendor": "amd", "gpus": [{"pci": "1:00.0", "tiles": 2}]}`:      "AMD GPU has no MIG devices or tiles",
		`{"gpus": [{"pci": "1:00.0", "tiles": 2}]}`:                       "tiles are Intel's",
		`{"vendor": "intel", "gpus": [{"pci": "1:00.0", "mig": [{}]}]}`:   "MIG devices are NVIDIA's",
		`{"reserved_cpus": "x", "gpus": []}`:                              "reserved_cpus",
		`{"vendor": "amd", "gpus": [{"pci": "1:00.0", "uuid": "12345"}]}`: "GPU-",
		`{"cuda_version": "13", "gpus": []}`:                              `cuda_version "13": give it as major.minor (e.g. 13.1)`,
		`{"gpus": [{"pci": "1:00.0", "compute_capability": "sm_90"}]}`:    `gpu 0: compute_capability "sm_90": give it as major.minor`,
	} {
		if _, err := ParseNodeFile([]byte(doc), "n.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

func mustKFD(t *testing.T, root fs.FS) []kfdNode {
	t.Helper()
	nodes, err := readKFD(root)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func FuzzKFDProperties(f *testing.F) {
	f.Add("simd_count 440\nlocation_id 49408\nunique_id 1311768465173141112\n")
	f.Add("a 1\n\n b 2 \n")
	f.Add("x\n")
	f.Fuzz(func(t *testing.T, text string) {
		props, err := parseKFDProperties(text)
		if err == nil {
			for k := range props {
				if strings.ContainsAny(k, " \t\n") {
					t.Fatalf("key %q", k)
				}
			}
		}
	})
}

func FuzzIntelUevent(f *testing.F) {
	f.Add("DRIVER=i915\nPCI_SLOT_NAME=0000:18:00.0\n")
	f.Add("PCI_SLOT_NAME=zz\n")
	f.Fuzz(func(t *testing.T, text string) {
		bus, _ := parseUevent(text)
		if bus != "" {
			if again, err := NormalizeBusID(bus); err != nil || again != bus {
				t.Fatalf("bus %q does not normalise to itself", bus)
			}
		}
	})
}

// Open's rule 6: a described node is one vendor's, and a vendor asked
// for that is not its own is refused, not ignored (issue 34: --gpu-vendor
// amd with an NVIDIA node file, and --simulate lumi-g --gpu-vendor nvidia,
// used the other vendor's GPUs without a word).
func TestDescribedNodeOfAnotherVendor(t *testing.T) {
	dir := t.TempDir()
	nodeFile := filepath.Join(dir, "node.json")
	os.WriteFile(nodeFile, []byte(`{"gpus": [{"pci": "01:00.0", "numa": 0}]}`), 0o644)
	topo := filepath.Join(dir, "topo.json")
	os.WriteFile(topo, []byte(`{"vendor": "amd", "cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [{"pci": "c1:00.0", "numa": 0}]}`), 0o644)
	probe := func(string) error { return nil }
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" when it opens
	}{
		{"rule 6: an NVIDIA node file, amd asked", Options{NodeFile: nodeFile, Vendor: AMD, ProbeDevice: probe}, "the node file " + nodeFile + " describes nvidia GPUs, not amd ones"},
		{"rule 6: the NVIDIA node file, nvidia asked", Options{NodeFile: nodeFile, Vendor: NVIDIA, ProbeDevice: probe}, ""},
		{"rule 6: a built-in AMD node, nvidia asked", Options{Simulate: "lumi-g", Vendor: NVIDIA}, "the simulated lumi-g describes amd GPUs, not nvidia ones"},
		{"rule 6: a built-in AMD node, amd asked", Options{Simulate: "lumi-g", Vendor: AMD}, ""},
		{"rule 6: an AMD topology file, intel asked", Options{Simulate: topo, Vendor: Intel}, "the topology file " + topo + " describes amd GPUs, not intel ones"},
		{"rule 6: no vendor asked", Options{Simulate: topo}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Open(tc.o)
			var other *OtherVendorError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
				src.Close()
			case !errors.As(err, &other) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
