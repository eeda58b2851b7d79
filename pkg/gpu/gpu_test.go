package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

func TestNormalizeBusID(t *testing.T) {
	cases := map[string]string{
		"00000000:3B:00.0":     "0000:3b:00.0",
		"0000:3B:00.0":         "0000:3b:00.0",
		"0000:3b:00.0\n":       "0000:3b:00.0",
		"3b:00.0":              "0000:3b:00.0",
		"00000001:07:1F.7":     "0001:07:1f.7",
		"00010000:01:00.0":     "00010000:01:00.0",
		"0000:3b:00.0\x00\x00": "0000:3b:00.0",
	}
	for in, want := range cases {
		if got, err := NormalizeBusID(in); err != nil || got != want {
			t.Errorf("NormalizeBusID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "3b", "zz:00.0", "0000:3b:00.9", "0000:3b:40.0", "1:2:3:4"} {
		if _, err := NormalizeBusID(bad); err == nil {
			t.Errorf("NormalizeBusID(%q) accepted", bad)
		}
	}
}

// TestSimulatedNodes reads every built-in node through Open without NVML
// (the description; pkg/nvml's tests read the NVIDIA ones through go-nvml's
// mocks) and checks it against its description.
func TestSimulatedNodes(t *testing.T) {
	for _, name := range SimulatedNames() {
		t.Run(name, func(t *testing.T) {
			desc, err := BuiltinTopology(name)
			if err != nil {
				t.Fatal(err)
			}
			src, err := Open(Options{Simulate: name})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			node, err := src.Inventory()
			if err != nil {
				t.Fatal(err)
			}
			want := desc.Node("")
			if len(node.GPUs) != len(want.GPUs) || len(node.CPUs) != len(want.CPUs) {
				t.Fatalf("%d GPUs %d CPUs, want %d %d", len(node.GPUs), len(node.CPUs), len(want.GPUs), len(want.CPUs))
			}
			for i, g := range node.GPUs {
				w := want.GPUs[i]
				if g.UUID != w.UUID || g.BusID != w.BusID || g.NUMANode != w.NUMANode || !g.LocalCPUs.Equal(w.LocalCPUs) || g.MemoryBytes == 0 {
					t.Errorf("GPU %d = %+v, want %+v", i, g, w)
				}
			}
			if node.Driver == "" || !strings.Contains(node.Backend, name) || node.Vendor != desc.vendor() {
				t.Errorf("backend %q driver %q vendor %q", node.Backend, node.Driver, node.Vendor)
			}
		})
	}
}

func TestTopologyFileErrors(t *testing.T) {
	cases := map[string]string{
		`{"gpus": []}`: "no CPUs",
		`{"cpu_layout": {"sockets": 0, "numa_per_socket": 1, "cores_per_numa": 1, "threads_per_core": 1}, "gpus": []}`:                                            "must all be >= 1",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1, "smt": "odd"}, "gpus": []}`:                              "smt",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [{"pci": "nope"}]}`:                             "PCI address",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [{"pci": "01:00.0", "numa": 3}]}`:               "numa node 3 has no CPUs",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [{"pci": "01:00.0"}, {"pci": "0000:01:00.0"}]}`: "appears twice",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [{"pci": "01:00.0", "uuid": "abc"}]}`:           "GPU-",
		`{"cpus": [{"cpu": 0, "core": 0, "socket": 0, "numa": 0}, {"cpu": 0, "core": 0, "socket": 0, "numa": 0}], "gpus": []}`:                                    "listed twice",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [], "colour": 1}`:                               "unknown field",
		`{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1}, "gpus": [{"pci": "01:00.0", "local_cpus": "3-1"}]}`:     "local_cpus",
		// numbers that would be allocated by (issue 34: a panic or out of memory, never an error line)
		`{"cpus": [{"cpu": 9223372036854775807, "core": 9223372036854775807, "socket": 0, "numa": 0}], "gpus": []}`:                                                          "ids are 0..65535",
		`{"cpus": [{"cpu": 99999999999, "core": 0, "socket": 0, "numa": 0}], "gpus": []}`:                                                                                    "ids are 0..65535",
		`{"cpus": [{"cpu": 0, "core": 0, "socket": 0, "numa": 1099511627776}], "gpus": []}`:                                                                                  "ids are 0..65535",
		`{"cpus": [{"cpu": 0, "core": 0, "socket": 0, "numa": 0}], "gpus": [{"pci": "01:00.0", "numa": 9223372036854775807}]}`:                                               "numa 9223372036854775807: a NUMA node is 0..65535",
		`{"cpu_layout": {"sockets": 9223372036854775807, "numa_per_socket": 9223372036854775807, "cores_per_numa": 9223372036854775807, "threads_per_core": 2}, "gpus": []}`: "more than 65536 CPUs",
		`{"cpu_layout": {"sockets": 4294967296, "numa_per_socket": 4294967296, "cores_per_numa": 1, "threads_per_core": 1}, "gpus": []}`:                                     "more than 65536 CPUs",
	}
	for doc, want := range cases {
		if _, err := ParseTopology([]byte(doc), "t.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTopology(%s) err = %v, want %q", doc, err, want)
		}
	}
	// The decoder's errors are placed in the file and worded in JSON's
	// terms, without Go's type names.
	layout := `{"cpu_layout": {"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 2, "threads_per_core": 1},` + "\n"
	for doc, want := range map[string]string{
		layout + `  "gpus": [{"pci": "01:00.0", "numa": "zero"}]}`: `topology t.json:2:39: gpus.numa: a string where a whole number belongs`,
		layout + `  "gpus": [{"pci": "01:00.0",}]}`:                `topology t.json:2:30: invalid character '}' looking for beginning of object key string`,
		layout + `  "gpus": {"pci": "01:00.0"}}`:                   `topology t.json:2:11: gpus: an object where a list […] belongs`,
		layout + `  "gpus": [{"pci": "01:00.0"}]}}`:                `topology t.json:2:32: more after the node's JSON object ends`,
		layout + `  "gpu": []}`:                                    `topology t.json:2:3: unknown field "gpu"`,
		layout + `  "gpus": [`:                                     `topology t.json:2:12: the JSON ends early`,
	} {
		_, err := ParseTopology([]byte(doc), "t.json")
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "TopologyGPU") {
			t.Errorf("ParseTopology(%s)\n err = %v\nwant %q…", doc, err, want)
		}
	}
	if _, err := ParseNodeFile([]byte(`{"gpus": [{"pci": "01:00.0", "numa": 1.5}]}`), "n.json"); err == nil ||
		!strings.HasPrefix(err.Error(), "node file n.json:1:38: gpus.numa: the number 1.5 where a whole number belongs") {
		t.Errorf("node file: %v", err)
	}
	dir := t.TempDir()
	for _, o := range []Options{{Simulate: dir}, {NodeFile: dir}} {
		if _, err := Open(o); err == nil || !strings.Contains(err.Error(), dir+" is a directory: give the JSON file in it") {
			t.Errorf("Open(%+v) of a directory: %v", o, err)
		}
	}
	if _, err := Open(Options{Simulate: "dgx-z900"}); err == nil || !strings.Contains(err.Error(), "dgx-a100") || !strings.Contains(err.Error(), "lumi-g") {
		t.Errorf("unknown simulated node: %v", err)
	}
}

func TestTopologyLayouts(t *testing.T) {
	doc := `{"name": "n", "cpu_layout": {"sockets": 1, "numa_per_socket": 2, "cores_per_numa": 2, "threads_per_core": 2, "smt": "adjacent"},
	  "gpus": [{"pci": "0000:81:00.0", "numa": 1, "mig": [{"uuid": "MIG-1"}]}, {"pci": "0000:01:00.0", "numa": -1}]}`
	top, err := ParseTopology([]byte(doc), "n.json")
	if err != nil {
		t.Fatal(err)
	}
	node := top.Node("file")
	// adjacent SMT: core 2 (NUMA 1) has CPUs 4,5.
	if node.CPUs[5].Core != 4 || node.CPUs[5].NUMA != 1 {
		t.Fatalf("cpu 5 = %+v", node.CPUs[5])
	}
	if g := node.GPUs[1]; g.BusID != "0000:81:00.0" || g.LocalCPUs.String() != "4-7" || len(g.MIG) != 1 || g.MIG[0].Parent != g.UUID {
		t.Fatalf("GPU sorted second = %+v", g)
	}
	if g := node.GPUs[0]; g.NUMANode != -1 || !g.LocalCPUs.IsEmpty() {
		t.Fatalf("unknown-NUMA GPU = %+v", g)
	}
	if got := len(node.Flatten()); got != 2 {
		t.Fatalf("Flatten gave %d devices, want the plain GPU and one MIG device", got)
	}
}

func TestSysfsBackend(t *testing.T) {
	info := "Model:           NVIDIA H100 80GB HBM3\nIRQ: 1\nGPU UUID:        GPU-11111111-2222-3333-4444-555555555555\nBus Location:    0000:18:00.0\nDevice Minor:    1\n"
	root := fstest.MapFS{
		"proc/driver/nvidia/gpus/0000:18:00.0/information": {Data: []byte(info)},
		"proc/driver/nvidia/gpus/0000:2a:00.0/information": {Data: []byte(strings.NewReplacer("18:00", "2a:00", "1111", "2222", "Minor:    1", "Minor:    0").Replace(info))},
		"sys/bus/pci/devices/0000:18:00.0/numa_node":       {Data: []byte("0\n")},
		"sys/bus/pci/devices/0000:18:00.0/local_cpulist":   {Data: []byte("0-55,112-167\n")},
		"sys/bus/pci/devices/0000:2a:00.0/numa_node":       {Data: []byte("-1\n")},
	}
	// A device cgroup denies /dev/nvidia0: open fails with EPERM.
	src, _ := Open(Options{Root: root, ProbeDevice: func(path string) error {
		if path == "/dev/nvidia0" {
			return fmt.Errorf("open %s: %w", path, fs.ErrPermission)
		}
		return nil
	}})
	node, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	if node.Backend != "sysfs" || node.Vendor != NVIDIA || len(node.GPUs) != 2 {
		t.Fatalf("GPUs %+v", node.GPUs)
	}
	g0, g1 := node.GPUs[0], node.GPUs[1]
	if g0.Minor != 1 || g0.NUMANode != 0 || g0.LocalCPUs.String() != "0-55,112-167" || g0.Hidden || g0.Name != "NVIDIA H100 80GB HBM3" {
		t.Fatalf("GPU 0 = %+v", g0)
	}
	if g1.NUMANode != -1 || !g1.Hidden {
		t.Fatalf("GPU 1 = %+v, want numa -1 and hidden by the device cgroup", g1)
	}
	if !strings.Contains(strings.Join(node.Warnings, " "), "without utilisation telemetry") {
		t.Fatalf("warnings %q", node.Warnings)
	}
}

func TestNoGPUMachine(t *testing.T) {
	src, err := Open(Options{Root: fstest.MapFS{}})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := src.Inventory()
	why := strings.Join(node.Warnings, " ")
	// each vendor's reason once
	if node.Backend != "sysfs" || len(node.GPUs) != 0 || strings.Count(why, "no NVIDIA GPU") != 1 || strings.Count(why, "no AMD GPU") != 1 || strings.Count(why, "no Intel GPU") != 1 {
		t.Fatalf("node %+v", node)
	}
	if _, err := src.Usage(nil); !errors.Is(err, ErrNoTelemetry) {
		t.Fatalf("Usage err = %v", err)
	}
	// a vendor asked for is the only one looked for, and named
	src, err = Open(Options{Root: fstest.MapFS{}, Vendor: AMD})
	if err != nil {
		t.Fatal(err)
	}
	node, _ = src.Inventory()
	if why := strings.Join(node.Warnings, " "); !strings.Contains(why, "no AMD GPU") || strings.Contains(why, "NVIDIA") || strings.Contains(why, "Intel") {
		t.Fatalf("--gpu-vendor amd: %q", why)
	}
}

// A node file describes this machine's GPUs; the device cgroup decides which
// are this process's, as the testbed's fake devices show: ENXIO (no driver)
// is openable-but-dead, EPERM is another job's.
func TestNodeFileProbesDevices(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "node.json")
	os.WriteFile(file, []byte(`{"name": "bed", "gpus": [
	  {"pci": "0000:11:00.0", "numa": 0, "minor": 1, "device": "/x/nvidia1", "uuid": "GPU-00000000-0000-4000-8000-000000000001"},
	  {"pci": "0000:10:00.0", "numa": 0, "minor": 0, "device": "/x/nvidia0", "uuid": "GPU-00000000-0000-4000-8000-000000000000"},
	  {"pci": "0000:12:00.0", "numa": null, "minor": 2}]}`), 0o644)
	var probed []string
	src, err := Open(Options{NodeFile: file, ProbeDevice: func(path string) error {
		probed = append(probed, path)
		switch path {
		case "/x/nvidia0":
			return fmt.Errorf("open: %w", fs.ErrPermission)
		case "/x/nvidia1":
			return fmt.Errorf("open: %w", syscall.ENXIO)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	node, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	if node.CPUs != nil {
		t.Fatalf("a node file's CPUs are this machine's, got %v", node.CPUs)
	}
	var got []string
	for _, g := range node.GPUs {
		got = append(got, fmt.Sprintf("%s:%d:%v:%d", g.BusID, g.Minor, g.Hidden, g.NUMANode))
	}
	want := "0000:10:00.0:0:true:0 0000:11:00.0:1:false:0 0000:12:00.0:2:false:-1"
	if strings.Join(got, " ") != want {
		t.Fatalf("gpus %v, want %s", got, want)
	}
	if strings.Join(probed, " ") != "/x/nvidia0 /x/nvidia1 /dev/nvidia2" {
		t.Fatalf("probed %v", probed)
	}
}

func TestNodeFileRejectsCPUs(t *testing.T) {
	_, err := ParseNodeFile([]byte(`{"cpu_layout": {"sockets":1,"numa_per_socket":1,"cores_per_numa":2,"threads_per_core":1}, "gpus": [{"pci": "10:00.0"}]}`), "n.json")
	if err == nil || !strings.Contains(err.Error(), "--simulate") {
		t.Fatalf("err %v", err)
	}
}

// Simulated nodes answer telemetry from what apps declare (pkg/nvml's
// tests do the same through go-nvml's mock).
func TestSimulatedUsageFromDeclarations(t *testing.T) {
	dir := t.TempDir()
	topo, err := BuiltinTopology("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Open(Options{Simulate: "dgx-h100", SimulatedUsage: dir})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := src.Inventory()
	g0, g1 := node.GPUs[0].UUID, node.GPUs[1].UUID
	self := strconv.Itoa(os.Getpid())
	os.WriteFile(filepath.Join(dir, self), []byte(g0+" 70 2048\n"+g1+" 10 512\n"), 0o644)
	// a process that is gone: its declaration no longer counts
	os.WriteFile(filepath.Join(dir, "999999999"), []byte(g0+" 50 100\n"), 0o644)
	us, err := src.Usage([]string{g0, g1, node.GPUs[2].UUID})
	if err != nil {
		t.Fatal(err)
	}
	if us[0].Utilization != 70 || us[0].MemoryUsed != 2048<<20 || len(us[0].Processes) != 1 || us[0].Processes[0].PID != os.Getpid() {
		t.Errorf("GPU 0: %+v", us[0])
	}
	if us[1].Utilization != 10 || us[2].Utilization != 0 || len(us[2].Processes) != 0 {
		t.Errorf("GPU 1/2: %+v %+v", us[1], us[2])
	}
	if node.GPUs[0].MemoryBytes == 0 || topo.Mock == "" {
		t.Errorf("declared use must not hide the GPU's memory size")
	}
	if _, err := Open(Options{Simulate: "dgx-h100"}); err != nil {
		t.Fatal(err)
	}
	plain, _ := Open(Options{Simulate: "perlmutter-gpu"})
	if _, err := plain.Usage(nil); !errors.Is(err, ErrNoTelemetry) {
		t.Errorf("without a declaration directory: %v, want ErrNoTelemetry", err)
	}
}

// countingNVML stands for NVML on a machine with one GPU, and counts how
// often its inventory is read.
type countingNVML struct{ reads *int }

func (c countingNVML) Open(fs.FS) (Source, error) { return countingSource(c), nil }
func (c countingNVML) Simulate(Topology, string) (Source, error) {
	return nil, ErrNoLibrary
}

type countingSource struct{ reads *int }

func (c countingSource) Inventory() (Node, error) {
	*c.reads++
	return Node{Backend: "nvml", Vendor: NVIDIA, GPUs: []GPU{{Index: 0, UUID: "GPU-1", BusID: "00000000:18:00.0"}}}, nil
}
func (c countingSource) Usage([]string) ([]Usage, error) { return nil, ErrNoTelemetry }
func (c countingSource) Close() error                    { return nil }

// Open reads a backend's inventory to choose it; the caller's Inventory
// is that one, not a second pass over every GPU.
func TestOpenReadsTheInventoryOnce(t *testing.T) {
	reads := 0
	src, err := Open(Options{Root: fstest.MapFS{}, NVML: countingNVML{&reads}})
	if err != nil {
		t.Fatal(err)
	}
	node, err := src.Inventory()
	if err != nil || len(node.GPUs) != 1 || reads != 1 {
		t.Fatalf("inventory %+v %v read %d time(s), want once", node, err, reads)
	}
}

// nvidiaRoot is a machine whose driver lists two GPUs (minors 0 and 1)
// with their NUMA nodes and local CPUs in sysfs; with changes applied.
func nvidiaRoot(changes fstest.MapFS) fstest.MapFS {
	info := "Model:           NVIDIA H100 80GB HBM3\nGPU UUID:        GPU-11111111-2222-3333-4444-555555555555\nBus Location:    0000:18:00.0\nDevice Minor:    0\n"
	root := fstest.MapFS{
		"proc/driver/nvidia/gpus/0000:18:00.0/information": {Data: []byte(info)},
		"proc/driver/nvidia/gpus/0000:9a:00.0/information": {Data: []byte(strings.NewReplacer("18:00", "9a:00", "1111", "2222", "Minor:    0", "Minor:    1").Replace(info))},
		"sys/bus/pci/devices/0000:18:00.0/numa_node":       {Data: []byte("0\n")},
		"sys/bus/pci/devices/0000:18:00.0/local_cpulist":   {Data: []byte("0-3\n")},
		"sys/bus/pci/devices/0000:9a:00.0/numa_node":       {Data: []byte("1\n")},
		"sys/bus/pci/devices/0000:9a:00.0/local_cpulist":   {Data: []byte("4-7\n")},
		"proc/driver/nvidia/capabilities/mig/config":       {Data: []byte("DeviceFileMinor: 1\n")},
	}
	for k, v := range changes {
		if v == nil {
			delete(root, k)
		} else {
			root[k] = v
		}
	}
	return root
}

func TestSysfsBinds(t *testing.T) {
	mig1 := fstest.MapFS{"proc/driver/nvidia/capabilities/gpu1/mig/gi3/access": {Data: []byte("DeviceFileMinor: 12\n")}}
	noNUMA := fstest.MapFS{"sys/bus/pci/devices/0000:9a:00.0/numa_node": {Data: []byte("-1\n")}}
	for _, tc := range []struct {
		name   string
		root   fstest.MapFS
		hidden string // the device file a cgroup denies
		want   bool
	}{
		{"rule 1: no driver: sysfs's answer (no GPU) stands", fstest.MapFS{}, "", true},
		{"rule 1: the driver lists no GPU: NVML", fstest.MapFS{"proc/driver/nvidia/version": {Data: []byte("NVRM\n")}}, "", false},
		{"rule 2: every GPU's NUMA node and CPUs known: sysfs", nvidiaRoot(nil), "", true},
		{"rule 2: a GPU's NUMA node unknown: NVML", nvidiaRoot(noNUMA), "", false},
		{"rule 2: numa_node -1 on one NUMA node is node 0: sysfs", nvidiaRoot(fstest.MapFS{"sys/bus/pci/devices/0000:9a:00.0/numa_node": {Data: []byte("-1\n")},
			"sys/devices/system/node/online": {Data: []byte("0\n")}}), "", true},
		{"rule 2: a GPU's local CPUs unknown: NVML", nvidiaRoot(fstest.MapFS{"sys/bus/pci/devices/0000:18:00.0/local_cpulist": nil}), "", false},
		{"rule 2: unknown NUMA on a GPU the cgroup hides: sysfs", nvidiaRoot(noNUMA), "/dev/nvidia1", true},
		{"rule 3: MIG instances on a GPU: NVML", nvidiaRoot(mig1), "", false},
		{"rule 3: no driver capabilities to rule MIG out: NVML", nvidiaRoot(fstest.MapFS{"proc/driver/nvidia/capabilities/mig/config": nil}), "", false},
		{"rule 3: MIG instances on a GPU the cgroup hides: sysfs", nvidiaRoot(mig1), "/dev/nvidia1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := func(path string) error {
				if path == tc.hidden {
					return fs.ErrPermission
				}
				return nil
			}
			node, err := nvidiaSysfs{root: tc.root, probe: probe}.Inventory()
			if err != nil {
				t.Fatal(err)
			}
			if got := sysfsBinds(tc.root, node); got != tc.want {
				t.Fatalf("sysfsBinds = %v, want %v (GPUs %+v)", got, tc.want, node.GPUs)
			}
		})
	}
}

// openingNVML stands for NVML on a machine with one GPU and counts how
// often it is loaded.
type openingNVML struct{ opens *int }

func (o openingNVML) Open(fs.FS) (Source, error) {
	*o.opens++
	return countingSource{new(int)}, nil
}
func (o openingNVML) Simulate(Topology, string) (Source, error) { return nil, ErrNoLibrary }

// A caller that only binds gets the driver's /proc and sysfs where they
// suffice, and NVML where they do not; a caller that needs the GPUs
// listed only never loads NVML; every other caller NVML.
func TestOpenBindOnlyLoadsNVMLOnlyWhenNeeded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		root      fstest.MapFS
		need      Need
		wantOpens int
		backend   string
	}{
		{"binding only, sysfs suffices: NVML not loaded", nvidiaRoot(nil), NeedBinding, 0, "sysfs"},
		{"binding only, MIG instances: NVML", nvidiaRoot(fstest.MapFS{"proc/driver/nvidia/capabilities/gpu0/mig/gi1/access": {}}), NeedBinding, 1, "nvml"},
		{"binding only, no NVIDIA driver: NVML not loaded", fstest.MapFS{}, NeedBinding, 0, "sysfs"},
		{"telemetry wanted: NVML", nvidiaRoot(nil), NeedAll, 1, "nvml"},
		{"the list only: NVML not loaded, even where binding would need it", nvidiaRoot(fstest.MapFS{"proc/driver/nvidia/capabilities/gpu0/mig/gi1/access": {}}), NeedList, 0, "sysfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opens := 0
			src, err := Open(Options{Root: tc.root, Vendor: NVIDIA, NVML: openingNVML{&opens}, Need: tc.need})
			if err != nil {
				t.Fatal(err)
			}
			node, _ := src.Inventory()
			if opens != tc.wantOpens || node.Backend != tc.backend {
				t.Fatalf("NVML loaded %d time(s), backend %q; want %d, %q", opens, node.Backend, tc.wantOpens, tc.backend)
			}
		})
	}
}

// failingNVML is NVML whose start fails with err: at its init (Open), or
// at its inventory (inventory true).
type failingNVML struct {
	err       error
	inventory bool
	closed    *bool
}

func (f failingNVML) Open(fs.FS) (Source, error) {
	if f.inventory {
		return failingSource{f}, nil
	}
	return nil, f.err
}
func (f failingNVML) Simulate(Topology, string) (Source, error) { return nil, ErrNoLibrary }

type failingSource struct{ failingNVML }

func (f failingSource) Inventory() (Node, error)        { return Node{}, f.err }
func (f failingSource) Usage([]string) ([]Usage, error) { return nil, f.err }
func (f failingSource) Close() error                    { *f.closed = true; return nil }

// hangingNVML is NVML whose init never answers (go-nvml #152) until
// released.
type hangingNVML struct{ release chan struct{} }

func (h hangingNVML) Open(fs.FS) (Source, error) {
	<-h.release
	return nil, errors.New("NVML init: released")
}
func (h hangingNVML) Simulate(Topology, string) (Source, error) { return nil, ErrNoLibrary }

// openNVIDIA's rule 4: NVML that does not start is a warning, with its
// reason, and the GPUs come from the driver's files; the telemetry's
// error says the same reason. Only the library's absence was quiet
// before; the others stopped every command.
func TestOpenNVIDIANVMLThatDoesNotStartIsAWarning(t *testing.T) {
	hang := hangingNVML{make(chan struct{})}
	defer close(hang.release)
	closed := false
	for _, tc := range []struct {
		name string
		lib  NVML
		wait time.Duration
		why  string
	}{
		{"rule 4: no library", failingNVML{err: ErrNoLibrary}, 0, "NVML library libnvidia-ml.so.1 not found"},
		{"rule 4: an init that fails", failingNVML{err: errors.New("NVML init: Driver/library version mismatch")}, 0, "NVML init: Driver/library version mismatch"},
		{"rule 4: an inventory that fails", failingNVML{err: errors.New("NVML device count: GPU is lost"), inventory: true, closed: &closed}, 0, "NVML device count: GPU is lost"},
		{"rule 4: an init that does not answer", hang, 20 * time.Millisecond, "NVML init did not answer in 20ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Open(Options{Root: nvidiaRoot(nil), Vendor: NVIDIA, NVML: tc.lib, NVMLWait: tc.wait})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			node, err := src.Inventory()
			if err != nil || node.Backend != "sysfs" || len(node.GPUs) != 2 {
				t.Fatalf("inventory %+v, %v: want the driver's two GPUs", node, err)
			}
			if w := strings.Join(node.Warnings, "\n"); !strings.Contains(w, tc.why+": GPUs are read from /proc/driver/nvidia and sysfs") {
				t.Errorf("warnings %q lack %q", node.Warnings, tc.why)
			}
			if _, err := src.Usage([]string{node.GPUs[0].UUID}); !errors.Is(err, ErrNoTelemetry) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("usage error %v, want no telemetry because %q", err, tc.why)
			}
		})
	}
	if !closed {
		t.Error("NVML whose inventory failed was not shut down")
	}
}

// Rule 1 of openNVIDIA: the list only is read without NVML, and nothing
// is warned of (nothing is missing), though telemetry says why there is
// none.
func TestOpenNVIDIAListOnlyWarnsOfNothing(t *testing.T) {
	src, err := Open(Options{Root: nvidiaRoot(nil), Vendor: NVIDIA, NVML: failingNVML{err: errors.New("NVML init: Driver/library version mismatch")}, Need: NeedList})
	if err != nil {
		t.Fatal(err)
	}
	node, _ := src.Inventory()
	if len(node.GPUs) != 2 || len(node.Warnings) != 0 {
		t.Fatalf("GPUs %d, warnings %q: want 2 and none", len(node.GPUs), node.Warnings)
	}
	if _, err := src.Usage(nil); !strings.Contains(fmt.Sprint(err), nvmlUnneeded) {
		t.Fatalf("usage error %v", err)
	}
}

func TestNUMANodeOf(t *testing.T) {
	for _, tc := range []struct {
		name, value, online string
		want                int
	}{
		{"rule 1: the firmware's node", "1", "0-1", 1},
		{"rule 1: node 0, the online list unread", "0", "", 0},
		{"rule 2: -1 on one NUMA node is node 0", "-1", "0", 0},
		{"rule 3: -1 on several nodes is unknown", "-1", "0-1", -1},
		{"rule 3: -1 with the nodes unreadable is unknown", "-1", "", -1},
		{"rule 3: not a number is unknown", "x", "0", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := numaNodeOf(tc.value, func() string { return tc.online }); got != tc.want {
				t.Fatalf("numaNodeOf(%q, %q) = %d, want %d", tc.value, tc.online, got, tc.want)
			}
		})
	}
}

// classCounting counts the PCI class files opened.
type classCounting struct {
	fs.FS
	opens *int
}

func (c classCounting) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, "/class") {
		*c.opens++
	}
	return c.FS.Open(name)
}

// Without NVIDIA's driver, the PCI functions are looked through for
// NVIDIA GPUs the driver would serve (the warning says so); a node has a
// hundred functions or more, and every rank of an AMD or Intel node looks:
// only NVIDIA's have their class read.
func TestNoDriverReadsOnlyNVIDIAsPCIClass(t *testing.T) {
	root := fstest.MapFS{
		"sys/bus/pci/devices/0000:c1:00.0/vendor": {Data: []byte("0x10de\n")},
		"sys/bus/pci/devices/0000:c1:00.0/class":  {Data: []byte("0x030200\n")},
	}
	for i := range 100 {
		dev := fmt.Sprintf("sys/bus/pci/devices/0000:%02x:00.0/", i)
		root[dev+"vendor"] = &fstest.MapFile{Data: []byte("0x1002\n")}
		root[dev+"class"] = &fstest.MapFile{Data: []byte("0x038000\n")}
	}
	opens := 0
	node, err := nvidiaSysfs{root: classCounting{root, &opens}}.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	if opens != 1 || !strings.Contains(strings.Join(node.Warnings, "\n"), "sysfs lists 1 NVIDIA PCI display device(s)") {
		t.Fatalf("%d class files read, want 1; warnings %q", opens, node.Warnings)
	}
}

// AsTheDriverGives' rules, each by its number: declared usage narrowed to
// what each device's driver tells.
func TestAsTheDriverGivesRules(t *testing.T) {
	node := Node{GPUs: []GPU{
		{Vendor: NVIDIA, UUID: "GPU-n"},
		{Vendor: NVIDIA, UUID: "GPU-m", MIG: []GPU{{Vendor: NVIDIA, UUID: "MIG-1", Parent: "GPU-m"}}},
		{Vendor: AMD, UUID: "GPU-a"},
		{Vendor: Intel, UUID: "GPU-i"},
	}}
	declared := func(id string) Usage {
		return Usage{UUID: id, Utilization: 70, MemoryUsed: 1 << 30, PerProcess: true,
			ProcessUtil: []ProcessUtil{{PID: 10, SM: 70}}, Processes: []GPUProcess{{PID: 10, MemoryUsed: 1 << 30}}}
	}
	for _, tc := range []struct {
		rule       string
		id         string
		perProcess bool
		util       int
	}{
		{"1: an NVIDIA GPU, as declared", "GPU-n", true, 70},
		{"2: a MIG device, no per-process samples nor utilisation", "MIG-1", false, -1},
		{"3: an AMD GPU, its use but no process's", "GPU-a", false, 70},
		{"3: an Intel GPU, its use but no process's", "GPU-i", false, 70},
		{"4: a device the node does not have, as declared", "GPU-x", true, 70},
	} {
		u := AsTheDriverGives(node, []Usage{declared(tc.id)})[0]
		if u.PerProcess != tc.perProcess || (len(u.ProcessUtil) > 0) != tc.perProcess || u.Utilization != tc.util {
			t.Errorf("%s: per-process %v (%d samples), utilisation %d; want %v, %d", tc.rule, u.PerProcess, len(u.ProcessUtil), u.Utilization, tc.perProcess, tc.util)
		}
		if len(u.Processes) != 1 || u.MemoryUsed != 1<<30 {
			t.Errorf("%s: processes %v, memory %d: they stay", tc.rule, u.Processes, u.MemoryUsed)
		}
	}
}
