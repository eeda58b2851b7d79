package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// Options choose and feed a backend.
type Options struct {
	// Simulate is a built-in node name (see SimulatedNames) or the path of
	// a topology file; empty means this machine.
	Simulate string
	// Root is the machine's filesystem for /proc and /sys (normally
	// os.DirFS("/")).
	Root fs.FS
	// NodeFile is the path of a node file: this machine's GPUs described
	// in JSON, for machines where the drivers cannot show them
	// (docs/topology.md).
	NodeFile string
	// Vendor, when set (--gpu-vendor), is the only vendor looked for.
	Vendor Vendor
	// SimulatedUsage is the directory where apps on a simulated or
	// described node declare their GPU use (SimulatedUsageEnv); "" means
	// such nodes have no telemetry.
	SimulatedUsage string
	// ProbeDevice opens a GPU's device file (/dev/nvidia<minor>,
	// /dev/dri/renderD<minor>); an fs.ErrPermission means a device cgroup
	// hides that GPU from this process. Nil: no probing.
	ProbeDevice func(path string) error
	// NVML is NVIDIA's management library (pkg/nvml); nil: none, as in a
	// build without cgo.
	NVML NVML
	// Need is what the caller needs of NVIDIA's GPUs, which decides
	// whether NVML is loaded (Open's rule 3).
	Need Need
	// NVMLWait bounds how long NVML's start (its init and inventory) is
	// waited for; 0: DefaultNVMLWait.
	NVMLWait time.Duration
}

// Need is what a caller needs of this machine's NVIDIA GPUs: NVML is
// loaded only where it adds something to the driver's /proc and sysfs,
// which name every GPU with its UUID, PCI address, minor and locality
// (Slurm's AutoDetect=nvidia reads the same files) but tell no name of a
// MIG device, no memory size and no utilisation.
type Need int

// What a caller may need.
const (
	// NeedAll: the GPUs' names and memory, MIG devices and telemetry
	// (info, plan, a run whose instances have GPUs): NVML.
	NeedAll Need = iota
	// NeedBinding: what binding needs, each GPU's NUMA node and local
	// CPUs (rank mode, which binds and execs): the driver's files, NVML
	// only where they do not say it (sysfsBinds).
	NeedBinding
	// NeedList: the GPUs listed, no more (no instance sees a GPU, -G 0:
	// the plan shows them and the instances are told "no device" in
	// their vendor's way): the driver's files, never NVML.
	NeedList
)

// DefaultNVMLWait bounds NVML's start unless GPULAUNCH_NVML_WAIT says:
// a healthy init takes milliseconds (8–10 ms on an H200, gpu-h200.md), a
// first one without persistence mode seconds (NVIDIA's persistence
// docs); an init that hangs (go-nvml #152) would hold every gpulaunch
// of the node for ever, where 10 s costs a run with GPUs its telemetry
// and 10 s once.
const DefaultNVMLWait = 10 * time.Second

// NVML is NVIDIA's management library, adapted by pkg/nvml — the only
// package that imports go-nvml — and handed to Open, so that this package
// needs no cgo and its tests none of NVIDIA's.
type NVML interface {
	// Open loads libnvidia-ml on this machine (ErrNoLibrary: no driver).
	Open(root fs.FS) (Source, error)
	// Simulate serves a described NVIDIA node through go-nvml's mock of
	// the same machine (Topology.Mock), so that simulated runs take the
	// same code path as real ones.
	Simulate(t Topology, usageDir string) (Source, error)
}

// Open picks the backend. The rules, in order:
//  1. --simulate NODE|FILE: a described node, another machine; a
//     built-in NVIDIA node with a go-nvml mock is served through NVML.
//  2. --node-file FILE (or GPULAUNCH_NODE_FILE): this machine's GPUs, of
//     any vendor, described; their device files are probed, so that a
//     device cgroup still decides which are the job's.
//  3. Otherwise this machine's GPUs, vendor by vendor: NVIDIA's by
//     openNVIDIA's rules (NVML where it adds something to the driver's
//     /proc and sysfs, and never fatal); AMD through the KFD topology;
//     Intel through its DRM devices, the processor's integrated graphics
//     left out. A vendor asked for (Options.Vendor) is the only one
//     looked for.
//  4. GPUs of more than one vendor are an error naming them and the fix:
//     one plan cannot give instances GPUs that different runtimes number
//     and select differently.
//  5. No GPU at all: NVIDIA's sysfs backend, whose warnings say what is
//     missing, with AMD's and Intel's reasons added.
//  6. A described node (rules 1 and 2) has one vendor's GPUs: a vendor
//     asked for that is not theirs is an error (OtherVendorError), not
//     ignored — the node would be used whole, which is not what was asked.
func Open(o Options) (Source, error) {
	switch {
	case o.Simulate != "":
		return openSimulated(o.Simulate, o.SimulatedUsage, o.NVML, o.Vendor)
	case o.NodeFile != "":
		return openNodeFile(o.NodeFile, o.Root, o.ProbeDevice, o.Vendor)
	}
	var found []Source
	var absent []string
	for _, b := range backends {
		v := b.vendor
		if o.Vendor != "" && v != o.Vendor {
			continue
		}
		src, node, err := openVendor(b, o)
		switch {
		case err != nil:
			closeAll(found)
			return nil, err
		case len(node.GPUs) > 0:
			found = append(found, inventoried{src, node})
		case len(node.Warnings) > 0:
			absent = append(absent, node.Warnings...)
			src.Close()
		default:
			absent = append(absent, fmt.Sprintf("%s finds no %s GPU", node.Backend, v))
			src.Close()
		}
	}
	switch len(found) {
	case 0:
		return noGPU{absent}, nil
	case 1:
		return found[0], nil
	}
	return nil, mixedVendors(found)
}

// openVendor opens a vendor's backend on this machine and reads it once.
func openVendor(b backend, o Options) (Source, Node, error) {
	src, err := b.open(o)
	if err != nil {
		return nil, Node{}, err
	}
	node, err := src.Inventory()
	if err != nil {
		src.Close()
		return nil, Node{}, err
	}
	return src, node, nil
}

// openNVIDIA is NVIDIA's backend. The rules, in order:
//  1. A caller that needs the GPUs listed only (NeedList) reads them from
//     the driver's /proc and sysfs, and never loads NVML: nothing is
//     missing, so nothing is warned of.
//  2. A caller that only binds (NeedBinding) reads them from those files
//     first, and loads NVML only where they do not tell binding enough
//     (sysfsBinds).
//  3. Otherwise, and in rule 2's case, NVML, with its inventory, waited
//     for at most Options.NVMLWait (openNVML).
//  4. NVML that does not start — no library, an init that fails with any
//     error ("Driver/library version mismatch" after a driver update
//     without a reboot), an inventory that fails, a start that does not
//     answer in time — is a warning, not an error: the GPUs are read from
//     the driver's files, the warning and the telemetry's error saying why
//     (nvidiaSysfs.why).
func openNVIDIA(o Options) (Source, error) {
	sys := nvidiaSysfs{root: o.Root, probe: o.ProbeDevice}
	switch {
	case o.Need == NeedList:
		sys.why, sys.unneeded = nvmlUnneeded, true
		return sys, nil
	case o.NVML == nil:
		sys.why = ErrNoCgo.Error()
		return sys, nil
	case o.Need == NeedBinding:
		sys.why = nvmlNotLoaded
		if node, err := sys.Inventory(); err == nil && sysfsBinds(o.Root, node) {
			return inventoried{sys, node}, nil
		}
	}
	lib, node, err := openNVML(o.NVML, o.Root, cmp.Or(o.NVMLWait, DefaultNVMLWait))
	if err != nil {
		sys.why = err.Error()
		return sys, nil
	}
	return inventoried{lib, node}, nil
}

// nvmlNotLoaded says why a caller that only binds read NVIDIA's GPUs
// without NVML.
const nvmlNotLoaded = "rank mode did not load NVML"

// nvmlUnneeded says why a caller that needs the GPUs listed only read
// them without NVML.
const nvmlUnneeded = "no instance is given a GPU, so NVML was not loaded"

// openNVML starts NVML — loads the library, initialises it — and reads
// its inventory, waiting at most wait: an init can hang (go-nvml #152),
// and the GPUs' handles, where NVML attaches them, can take seconds. A
// start that does not answer in time is left to the process's end (a
// shutdown could hang as well), its answer, if it comes, unused.
func openNVML(lib NVML, root fs.FS, wait time.Duration) (Source, Node, error) {
	type started struct {
		src  Source
		node Node
		err  error
	}
	done := make(chan started, 1)
	var initialised atomic.Bool
	go func() {
		src, err := lib.Open(root)
		if err != nil {
			done <- started{err: err}
			return
		}
		initialised.Store(true)
		node, err := src.Inventory()
		if err != nil {
			src.Close()
		}
		done <- started{src, node, err}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case s := <-done:
		return s.src, s.node, s.err
	case <-timer.C:
		if initialised.Load() {
			return nil, Node{}, fmt.Errorf("NVML did not list its GPUs in %s", wait)
		}
		return nil, Node{}, fmt.Errorf("NVML init did not answer in %s", wait)
	}
}

// sysfsBinds says whether the driver's /proc and sysfs (node, read by
// nvidiaSysfs) tell binding all that NVML would, so that rank mode need
// not load NVML: on a real node nvmlInit costs tens to hundreds of
// milliseconds, which the 3-line wrapper rank mode replaces does not pay.
// They do when:
//  1. the driver lists a GPU (no driver: NVML, which needs it, would see
//     none either — the answer is sysfs's, with its reasons);
//  2. every GPU this process may open has its NUMA node and local CPUs
//     in sysfs (NVML's affinity is the same node's; where sysfs has none,
//     NVML may still tell);
//  3. no GPU this process may open has MIG instances (the driver's
//     capabilities/gpu<minor>/mig/gi*): MIG needs NVML (NamesMIG's rule
//     2), and MIG devices then stand for their GPU. Where the driver's
//     capabilities are not there at all (a container that mounts
//     /proc/driver/nvidia/gpus only), MIG cannot be ruled out: NVML.
//
// Devices a cgroup hides are never bound, so rules 2 and 3 skip them.
func sysfsBinds(root fs.FS, node Node) bool {
	if root == nil {
		return false
	}
	if len(node.GPUs) == 0 {
		_, err := fs.Stat(root, "proc/driver/nvidia")
		return err != nil
	}
	if _, err := fs.Stat(root, "proc/driver/nvidia/capabilities"); err != nil {
		return false
	}
	for _, g := range node.GPUs {
		if g.Hidden {
			continue
		}
		if g.NUMANode < 0 || g.LocalCPUs.IsEmpty() || g.Minor < 0 || hasMIGInstances(root, g.Minor) {
			return false
		}
	}
	return true
}

// hasMIGInstances: the driver lists GPU instances of the GPU of this
// minor (/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<N>, NVIDIA's
// MIG user guide, "Device Nodes and Capabilities").
func hasMIGInstances(root fs.FS, minor int) bool {
	gis, _ := fs.Glob(root, fmt.Sprintf("proc/driver/nvidia/capabilities/gpu%d/mig/gi*", minor))
	return len(gis) > 0
}

// NamesMIG says whether a CUDA_VISIBLE_DEVICES value names MIG devices.
// MIG needs NVML: only NVML names MIG devices (the MIG-… UUIDs that
// CUDA_VISIBLE_DEVICES takes); the driver's /proc and sysfs tell at most
// that a GPU has MIG instances. So a caller that only binds
// (NeedBinding) reads the GPUs without NVML only where no MIG device
// is in play:
//  1. its launcher named none (NamesMIG false): the CLI asks before it
//     opens a backend;
//  2. no GPU it may open has MIG instances (hasMIGInstances, sysfsBinds'
//     rule 3).
func NamesMIG(visible string) bool { return strings.Contains(visible, "MIG-") }

// inventoried is a backend whose inventory Open has read to choose it:
// that inventory is the one the caller gets, not a second pass over NVML
// and sysfs at every start.
type inventoried struct {
	Source
	node Node
}

func (s inventoried) Inventory() (Node, error) { return s.node, nil }

func mixedVendors(found []Source) error {
	var parts []string
	for _, src := range found {
		node, _ := src.Inventory()
		parts = append(parts, fmt.Sprintf("%d %s GPU(s) (%s)", len(node.GPUs), node.Vendor, node.Backend))
	}
	closeAll(found)
	return fmt.Errorf("this node has %s: one plan cannot mix vendors, whose runtimes number and select GPUs differently; choose one with --gpu-vendor (or GPULAUNCH_GPU_VENDOR)",
		strings.Join(parts, " and "))
}

// OtherVendorError is rule 6's: a described node (What) whose GPUs are
// Has's, where Asked's were asked for.
type OtherVendorError struct {
	What       string
	Asked, Has Vendor
}

func (e *OtherVendorError) Error() string {
	return fmt.Sprintf("%s describes %s GPUs, not %s ones: a described node is one vendor's, and the vendor asked for would be ignored; drop it, or describe a node of %s GPUs",
		e.What, e.Has, e.Asked, e.Asked)
}

// checkVendor is rule 6 for a described node t.
func (t Topology) checkVendor(asked Vendor, what string) error {
	if asked == "" || len(t.GPUs) == 0 || t.vendor() == asked {
		return nil
	}
	return &OtherVendorError{What: what, Asked: asked, Has: t.vendor()}
}

func closeAll(srcs []Source) {
	for _, s := range srcs {
		s.Close()
	}
}

// noGPU is a machine where no vendor looked for found a GPU; reasons say
// what each found missing, once each. Every such look reads sysfs (and
// /proc/driver/nvidia), hence its name.
type noGPU struct{ reasons []string }

func (n noGPU) Inventory() (Node, error) {
	return Node{Backend: "sysfs", Warnings: n.reasons}, nil
}
func (n noGPU) Usage([]string) ([]Usage, error) {
	return nil, fmt.Errorf("%w: this node has no GPU", ErrNoTelemetry)
}
func (n noGPU) Close() error { return nil }

func openNodeFile(file string, root fs.FS, probe func(string) error, asked Vendor) (Source, error) {
	data, err := readDescription(file, "node file")
	if err != nil {
		return nil, err
	}
	t, err := ParseNodeFile(data, file)
	if err != nil {
		return nil, err
	}
	if err := t.checkVendor(asked, "the node file "+file); err != nil {
		return nil, err
	}
	t.machine = NewSysfsNodes(root)
	node := t.Node("node file " + file)
	node.CPUs = nil
	probeHidden(node.GPUs, probe)
	return staticSource{node: node}, nil
}

func openSimulated(spec, usageDir string, lib NVML, asked Vendor) (Source, error) {
	if describesAFile(spec) {
		t, err := ReadTopologyFile(spec)
		if err != nil {
			return nil, err
		}
		if err := t.checkVendor(asked, "the topology file "+spec); err != nil {
			return nil, err
		}
		return staticSource{node: t.Node("topology file " + spec), usageDir: usageDir}, nil
	}
	t, err := BuiltinTopology(spec)
	if err != nil {
		return nil, err
	}
	if err := t.checkVendor(asked, "the simulated "+t.Name); err != nil {
		return nil, err
	}
	if t.Mock != "" && lib != nil {
		return lib.Simulate(t, usageDir)
	}
	backend := "simulated " + t.Name
	if t.Mock != "" {
		backend += " (no cgo: description only)"
	}
	return staticSource{node: t.Node(backend), usageDir: usageDir}, nil
}

// describesAFile: --simulate names a file (or a directory, refused as
// one) rather than a built-in node: a path, a .json name, or anything
// that is on disk and no built-in's name.
func describesAFile(spec string) bool {
	if strings.ContainsRune(spec, '/') || strings.HasSuffix(spec, ".json") {
		return true
	}
	if slices.Contains(SimulatedNames(), spec) {
		return false
	}
	_, err := os.Stat(spec)
	return err == nil
}

// staticSource serves a fixed inventory (topology and node files, simulated
// nodes) and the GPU use apps declare in usageDir.
type staticSource struct {
	node     Node
	usageDir string
}

func (s staticSource) Inventory() (Node, error) { return s.node, nil }
func (s staticSource) Close() error             { return nil }
func (s staticSource) Usage(uuids []string) ([]Usage, error) {
	if s.usageDir == "" {
		return nil, fmt.Errorf("%w: a node file or simulated node describes GPUs, not their use", ErrNoTelemetry)
	}
	return AsTheDriverGives(s.node, DeclaredUsage(s.usageDir, uuids)), nil
}
func sortByBus(gpus []GPU) {
	sort.SliceStable(gpus, func(i, j int) bool { return gpus[i].BusID < gpus[j].BusID })
}
func readTrim(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	return strings.TrimSpace(string(b)), err
}
func sysPCI(bus, file string) string { return path.Join("sys/bus/pci/devices", bus, file) }
func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, os.ErrPermission)
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
			gpus[i].Hide()
		}
	}
}

// NewStaticSource serves node as it is, with the GPU use apps declare in
// usageDir ("": no telemetry).
func NewStaticSource(node Node, usageDir string) Source {
	return staticSource{node: node, usageDir: usageDir}
}

// SysfsLocality reads a PCI device's NUMA node — where an instance's host
// memory goes: the node numa_node names (-1: unknown; numaNodeOf's rules),
// by HostMemoryNode's rules, so never a GPU's own memory node — and its
// local CPU list.
func SysfsLocality(root fs.FS, bus string) (int, cpuset.Set) {
	numa := -1
	if root == nil {
		return numa, cpuset.Set{}
	}
	var cpus cpuset.Set
	if s, err := readTrim(root, sysPCI(bus, "local_cpulist")); err == nil {
		cpus, _ = cpuset.Parse(s)
	}
	if s, err := readTrim(root, sysPCI(bus, "numa_node")); err == nil {
		numa = numaNodeOf(s, func() string { online, _ := readTrim(root, nodesOnline); return online })
	}
	var named []int
	if numa >= 0 {
		named = []int{numa}
	}
	return HostMemoryNode(named, cpus, NewSysfsNodes(root)), cpus
}

// nodesOnline lists the machine's NUMA nodes.
const nodesOnline = "sys/devices/system/node/online"

// numaNodeOf is a PCI device's NUMA node from sysfs's numa_node (value)
// and, read only when needed, the machine's NUMA nodes (online: the
// kernel's list, /sys/devices/system/node/online). The rules:
//  1. a node the firmware gave (a number ≥ 0) is the device's node;
//  2. -1 — the firmware did not say, as on the H200's VM (gpu-h200.md) —
//     on a machine with one NUMA node ("0") is node 0: there is no other,
//     and a GPU whose node is unknown would make rank mode load NVML
//     (sysfsBinds' rule 2) and the plan guess;
//  3. otherwise -1: unknown (several nodes, or their list unreadable).
func numaNodeOf(value string, online func() string) int {
	n, err := strconv.Atoi(value)
	switch {
	case err == nil && n >= 0:
		return n
	case err == nil && n == -1 && online() == "0":
		return 0
	}
	return -1
}
