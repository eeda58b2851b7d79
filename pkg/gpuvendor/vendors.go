package gpuvendor

import (
	"fmt"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// Vendor is what one GPU maker's runtime is told, and how gpulaunch reads
// what it was told. Every vendor-dependent rule asks it (Of); a new vendor
// is a new value in vendors, below.
type Vendor struct {
	// Name is the vendor's name: the inventory's gpu.Vendor, --gpu-vendor's
	// word, the JSON's "vendor".
	Name gpu.Vendor
	// Word names the vendor for people, before "GPUs" in `info` and `plan`.
	Word string
	// Visible is the variable the runtime selects its devices by: read
	// from gpulaunch's environment (Read), written for each instance
	// (Tell), named by telemetry when an app ignores it.
	Visible string
	// Order is the setting, "NAME=value", that makes the runtime number
	// devices in PCI order, as gpulaunch counts ordinals (Ordinals); ""
	// where it always does (ROCR numbers by KFD's node order).
	Order string
	// Stale are the runtime's other variables that select or renumber
	// devices: no instance inherits them, whatever its vendor (Slurm
	// writes one list into every vendor's variable, and HIP would select
	// again inside ROCR's list).
	Stale []string
	// Inner are the variables the runtime applies inside Visible's
	// selection, the first set taking effect, numbering what Visible left
	// from 0 and read in Visible's grammar (HIP's inside ROCR's); nil
	// where there is no second list.
	Inner []string
	// Ordinal names the device numbers the app sees (the first column of
	// `info`'s GPU table; OrdinalName).
	Ordinal string
	// MPS: the vendor's GPUs may be shared through NVIDIA's Multi-Process
	// Service (pkg/mps).
	MPS bool

	// hierarchy reads, from the environment, the model Visible's value is
	// written in, and warns of a value the runtime does not know; nil:
	// the runtime has one model.
	hierarchy func(env map[string]string) (model, warning string)
	// resolve picks, from a value of Visible (or of Inner), the devices
	// it names among those the process can open, in the runtime's order;
	// stop says why the list ended early ("": it did not).
	resolve func(value, model string, openable []gpu.GPU) (gpus []gpu.GPU, stop string)
	// list is Visible's value for the devices show (Tell's rules).
	list func(show []gpu.GPU, n Naming) (string, error)
}

// vendors are every vendor's value, in the order pkg/gpu looks for their
// GPUs. The rules each writes (Tell), by its variable:
//  1. NVIDIA: CUDA_VISIBLE_DEVICES, the devices' UUIDs (GPU-… and MIG-…),
//     or CUDA's ordinals with --gpu-ids index; and
//     CUDA_DEVICE_ORDER=PCI_BUS_ID, so that ordinals follow PCI order, as
//     gpulaunch numbers them.
//  2. AMD: ROCR_VISIBLE_DEVICES alone, as ROCm recommends —
//     HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES would select again
//     inside it and can leave a process no GPU (Parsl #3858 on Frontier):
//     the GPUs' UUIDs (GPU-<hex>), or ROCR's ordinals with --gpu-ids index;
//     a GPU without a unique id is named by its ordinal.
//  3. Intel: ZE_AFFINITY_MASK with Level Zero's ordinals, as it takes no
//     UUID — a tile's FLAT ordinal under FLAT and COMBINED, "card.tile"
//     under COMPOSITE, or "card" for every tile of one card — and
//     ZE_ENABLE_PCI_ID_DEVICE_ORDER=1, so that Level Zero's order is the
//     PCI order the ordinals were counted in.
//  4. No device: CUDA's and ROCR's variable empty (no device). An empty
//     ZE_AFFINITY_MASK masks nothing, so Intel's gets the ordinal one past
//     the last device, which the runtime skips, reporting none.
var vendors = []Vendor{
	{
		Name: gpu.NVIDIA, Word: "NVIDIA", Visible: "CUDA_VISIBLE_DEVICES", Order: "CUDA_DEVICE_ORDER=PCI_BUS_ID",
		Stale:   []string{"CUDA_DEVICE_ORDER"}, // no instance, of any vendor, inherits a CUDA device order
		Ordinal: "CUDA", MPS: true,
		resolve: func(v, _ string, open []gpu.GPU) ([]gpu.GPU, string) {
			return ParseVisibleDevices(v, true).Resolve(open)
		},
		list: func(show []gpu.GPU, n Naming) (string, error) {
			return idList(show, n, func(gpu.GPU) bool { return true })
		},
	},
	{
		Name: gpu.AMD, Word: "AMD", Visible: "ROCR_VISIBLE_DEVICES",
		Stale: []string{"HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"}, Inner: []string{"HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"},
		Ordinal: "HIP",
		resolve: func(v, _ string, open []gpu.GPU) ([]gpu.GPU, string) { return ParseAMDVisible(v).Resolve(open) },
		list: func(show []gpu.GPU, n Naming) (string, error) {
			return idList(show, n, func(g gpu.GPU) bool { return strings.HasPrefix(g.UUID, "GPU-") })
		},
	},
	{
		Name: gpu.Intel, Word: "Intel", Visible: "ZE_AFFINITY_MASK", Order: "ZE_ENABLE_PCI_ID_DEVICE_ORDER=1",
		Ordinal:   "ZE",
		hierarchy: zeHierarchyOf,
		resolve:   func(v, model string, open []gpu.GPU) ([]gpu.GPU, string) { return ParseZEMask(v).Resolve(open, model) },
		list:      zeMask,
	},
}

// none is a node without GPUs: no vendor to name, no MPS, and an instance
// told an empty list as NVIDIA's runtime is (CUDA_VISIBLE_DEVICES=, which
// HIP reads too), as before vendors were known.
func none() Vendor {
	v := vendors[0]
	v.Name, v.Word, v.MPS = "", "", false
	return v
}

// Of is the value of the vendor named name; a node without GPUs (name "")
// gets none's.
func Of(name gpu.Vendor) Vendor {
	for _, v := range vendors {
		if v.Name == name {
			return v
		}
	}
	return none()
}

// All is every vendor's value.
func All() []Vendor { return append([]Vendor(nil), vendors...) }

// VisibleVars are every vendor's Visible: the variables that say which
// GPUs a process was told. The slice is shared: callers only read it.
func VisibleVars() []string { return visibleVars }

// ToldVars are the variable names an instance of some vendor is told (Tell
// writes them): every vendor's Visible and Order. The slice is shared:
// callers only read it.
func ToldVars() []string { return toldVars }

// visibleVars and toldVars are made once: the launcher asks at every
// instance's start, and `exec --dry-run` for every variable.
var visibleVars, toldVars = func() (visible, told []string) {
	for _, v := range vendors {
		visible = append(visible, v.Visible)
		told = append(told, v.toldVars()...)
	}
	return visible, told
}()

// toldVars are the names of the variables Tell writes for v.
func (v Vendor) toldVars() []string {
	if v.Order == "" {
		return []string{v.Visible}
	}
	return []string{v.Visible, orderName(v.Order)}
}

func orderName(setting string) string {
	name, _, _ := strings.Cut(setting, "=")
	return name
}

// NotInherited are the variables an instance of v does not take from
// gpulaunch's environment: every vendor's Visible and Stale (a stale one
// would contradict the instance's own list) and the variables v tells
// (Tell sets them).
func (v Vendor) NotInherited() []string {
	var names []string
	for _, w := range vendors {
		names = append(names, w.Visible)
		names = append(names, w.Stale...)
	}
	return append(names, v.toldVars()...)
}

// OrdinalName names the device numbers an app sees, for a table that
// lists devices in FLAT order: under Level Zero's COMPOSITE model the app
// numbers cards, so the column's numbers are tiles ("ZE TILE").
func (v Vendor) OrdinalName(model string) string {
	if model == ZEComposite {
		return v.Ordinal + " TILE"
	}
	return v.Ordinal
}

// Reading is how one environment's Visible (and Inner) values are read.
type Reading struct {
	// Name is the variable read: the vendor's Visible.
	Name string
	// Model is the model the values are written in (Level Zero's
	// ZE_FLAT_DEVICE_HIERARCHY); "" for a runtime with one.
	Model string
	// Warning says that the environment named a model the runtime does
	// not know, and which was read instead; "" when it did not.
	Warning string
	resolve func(value, model string, openable []gpu.GPU) ([]gpu.GPU, string)
}

// Read is how env's values of v's variables are read.
func (v Vendor) Read(env map[string]string) Reading {
	r := Reading{Name: v.Visible, resolve: v.resolve}
	if v.hierarchy != nil {
		r.Model, r.Warning = v.hierarchy(env)
	}
	return r
}

// Resolve picks the devices value names among openable, in the order the
// runtime numbers them; stop says why the list ended early, "" when it
// did not.
func (r Reading) Resolve(value string, openable []gpu.GPU) (gpus []gpu.GPU, stop string) {
	return r.resolve(value, r.Model, openable)
}

// zeHierarchyOf reads ZE_FLAT_DEVICE_HIERARCHY, FLAT when it names no
// model Level Zero knows.
func zeHierarchyOf(env map[string]string) (model, warning string) {
	h, ok := ZEHierarchy(env["ZE_FLAT_DEVICE_HIERARCHY"])
	if !ok {
		warning = fmt.Sprintf("ZE_FLAT_DEVICE_HIERARCHY=%s is not FLAT, COMPOSITE or COMBINED: reading ZE_AFFINITY_MASK as FLAT", env["ZE_FLAT_DEVICE_HIERARCHY"])
	}
	return h, warning
}

// Naming is how the devices an instance is shown are named in its
// vendor's variable.
type Naming struct {
	// ByIndex (--gpu-ids index): the runtime's ordinals, not UUIDs.
	ByIndex bool
	// Ordinal and CardOrdinal are the allocation's (Ordinals).
	Ordinal, CardOrdinal map[string]int
	// Model is the model Level Zero's mask is written in (Reading.Model).
	Model string
}

// Tell is the environment that tells an instance its devices, show, in
// v's variables (vendors' rules 1-4).
func (v Vendor) Tell(show []gpu.GPU, n Naming) ([]string, error) {
	list, err := v.list(show, n)
	told := []string{v.Visible + "=" + list}
	if v.Order != "" {
		told = append(told, v.Order)
	}
	return told, err
}

// Ordinals numbers the devices this process can open as their runtimes
// do: each device's ordinal (CUDA's and ROCR's index of a GPU; Level
// Zero's FLAT ordinal of a tile), and the ordinal of the GPU it is, or is
// part of (Level Zero's COMPOSITE device).
func Ordinals(openable []gpu.GPU) (ordinal, card map[string]int) {
	ordinal, card = map[string]int{}, map[string]int{}
	n := 0
	for c, g := range openable {
		card[g.UUID] = c
		for _, d := range tilesOf(g) {
			ordinal[d.UUID], card[d.UUID] = n, c
			n++
		}
	}
	return ordinal, card
}
