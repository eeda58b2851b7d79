package instance

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// vendorNode is the allocation of a built-in node with env, as the CLI
// reconciles it; hide marks GPUs (by position) a device cgroup denies.
func vendorNode(t *testing.T, name string, env sched.Env, hide ...int) binding.Allocation {
	t.Helper()
	top, err := gpu.BuiltinTopology(name)
	if err != nil {
		t.Fatal(err)
	}
	node := top.Node("simulated " + name)
	for _, i := range hide {
		node.GPUs[i].Hide()
	}
	w, err := binding.ReadWorld(nil, node, env, "h")
	if err != nil {
		t.Fatal(err)
	}
	a, err := binding.Reconcile(w)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The variables an instance is told its GPUs by, per vendor (visibleVars'
// rules), for the sites' own nodes.
func TestVisibleVarsPerVendor(t *testing.T) {
	lumi := vendorNode(t, "lumi-g", nil)
	aurora := vendorNode(t, "aurora", nil)
	composite := vendorNode(t, "aurora", sched.Env{"ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"})
	// A device cgroup that lets the process open GPUs 2 and 3 only: the
	// runtime numbers what it can open from 0.
	fenced := vendorNode(t, "lumi-g", nil, 0, 1, 4, 5, 6, 7)
	dgx := vendorNode(t, "dgx-h100", nil)
	pick := func(a binding.Allocation, idx ...int) []gpu.GPU {
		var out []gpu.GPU
		for _, i := range idx {
			out = append(out, a.GPUs[i])
		}
		return out
	}
	cases := []struct {
		name  string
		alloc binding.Allocation
		own   []int // positions in the allocation's device list
		ids   GPUIDs
		vis   Visibility
		want  string // the variables, space-separated
	}{
		{"NVIDIA: UUID, PCI order", dgx, []int{3}, GPUIDsUUID, VisibleOwn, "CUDA_VISIBLE_DEVICES=" + dgx.GPUs[3].UUID + " CUDA_DEVICE_ORDER=PCI_BUS_ID"},
		{"NVIDIA without a GPU: empty", dgx, nil, GPUIDsUUID, VisibleOwn, "CUDA_VISIBLE_DEVICES= CUDA_DEVICE_ORDER=PCI_BUS_ID"},
		{"AMD: ROCR alone, by UUID", lumi, []int{2}, GPUIDsUUID, VisibleOwn, "ROCR_VISIBLE_DEVICES=" + lumi.GPUs[2].UUID},
		{"AMD: two GCDs by index", lumi, []int{6, 7}, GPUIDsIndex, VisibleOwn, "ROCR_VISIBLE_DEVICES=6,7"},
		{"AMD: all visible, own first", lumi, []int{2}, GPUIDsIndex, VisibleAll, "ROCR_VISIBLE_DEVICES=2,0,1,3,4,5,6,7"},
		{"AMD without a GPU: empty", lumi, nil, GPUIDsUUID, VisibleOwn, "ROCR_VISIBLE_DEVICES="},
		{"AMD in a device cgroup: ordinals from 0", fenced, []int{1}, GPUIDsIndex, VisibleOwn, "ROCR_VISIBLE_DEVICES=1"},
		{"Intel FLAT: a tile's ordinal", aurora, []int{3}, GPUIDsUUID, VisibleOwn, "ZE_AFFINITY_MASK=3 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"Intel FLAT: two tiles", aurora, []int{10, 11}, GPUIDsUUID, VisibleOwn, "ZE_AFFINITY_MASK=10,11 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"Intel without a GPU: one past the last", aurora, nil, GPUIDsUUID, VisibleOwn, "ZE_AFFINITY_MASK=12 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"Intel all visible: the runtime's order", aurora, []int{3}, GPUIDsUUID, VisibleAll, "ZE_AFFINITY_MASK=3,0,1,2,4,5,6,7,8,9,10,11 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"Intel COMPOSITE: card.tile", composite, []int{3}, GPUIDsUUID, VisibleOwn, "ZE_AFFINITY_MASK=1.1 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"Intel COMPOSITE: a whole card", composite, []int{4, 5}, GPUIDsUUID, VisibleOwn, "ZE_AFFINITY_MASK=2 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"Intel COMPOSITE without a GPU: one past the last card", composite, nil, GPUIDsUUID, VisibleOwn, "ZE_AFFINITY_MASK=6 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			got, err := visibleVars(a.Vendor, pick(a, tc.own...), EnvOptions{IDs: tc.ids, Visibility: tc.vis, AllGPUs: a.GPUs,
				Vendor: a.Vendor, Ordinal: a.Ordinal, CardOrdinal: a.CardOrdinal, ZEHierarchy: a.ZEHierarchy})
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// An instance keeps no other vendor's variable: Slurm writes its one list
// into all of them, and HIP would select again inside ROCR's.
func TestInstanceEnvDropsEveryVendorsVariables(t *testing.T) {
	lumi := vendorNode(t, "lumi-g", nil)
	base := []string{"CUDA_VISIBLE_DEVICES=0,1", "HIP_VISIBLE_DEVICES=0,1", "ROCR_VISIBLE_DEVICES=0,1", "GPU_DEVICE_ORDINAL=1",
		"ZE_AFFINITY_MASK=0", "ZE_ENABLE_PCI_ID_DEVICE_ORDER=0", "CUDA_DEVICE_ORDER=FASTEST_FIRST"}
	slot := binding.Slot{Index: 1, GPUs: lumi.GPUs[1:2]}
	env, err := Env(base, slot, nodegroup.Local(8, "h").Ranks(1), EnvOptions{IDs: GPUIDsIndex, Vendor: gpu.AMD, Ordinal: lumi.Ordinal})
	if err != nil {
		t.Fatal(err)
	}
	// The other vendors' order settings do not select a GPU: they pass.
	var gpuVars []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "ZE_ENABLE_PCI_ID_DEVICE_ORDER=") || strings.HasPrefix(kv, "CUDA_DEVICE_ORDER=") {
			continue
		}
		if strings.Contains(kv, "VISIBLE") || strings.HasPrefix(kv, "ZE_") || strings.HasPrefix(kv, "CUDA_") || strings.HasPrefix(kv, "GPU_DEVICE") {
			gpuVars = append(gpuVars, kv)
		}
	}
	if got := strings.Join(gpuVars, " "); got != "ROCR_VISIBLE_DEVICES=1" {
		t.Errorf("an AMD instance's GPU variables: %s", got)
	}
	aurora := vendorNode(t, "aurora", nil)
	env, err = Env(base, binding.Slot{GPUs: aurora.GPUs[:1]}, nodegroup.Local(1, "h").Ranks(0),
		EnvOptions{Vendor: gpu.Intel, Ordinal: aurora.Ordinal, CardOrdinal: aurora.CardOrdinal, ZEHierarchy: aurora.ZEHierarchy})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(env, " "); !strings.Contains(got, "ZE_ENABLE_PCI_ID_DEVICE_ORDER=1") || strings.Contains(got, "ZE_ENABLE_PCI_ID_DEVICE_ORDER=0") ||
		strings.Contains(got, "CUDA_VISIBLE") || strings.Contains(got, "ROCR") {
		t.Errorf("an Intel instance's environment: %s", got)
	}
}
