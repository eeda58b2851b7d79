package gpuvendor

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// devices is a built-in node's devices as the runtime shows them (MIG
// devices, tiles), with their ordinals.
func devices(t *testing.T, name string) ([]gpu.GPU, Naming) {
	t.Helper()
	top, err := gpu.BuiltinTopology(name)
	if err != nil {
		t.Fatal(err)
	}
	node := top.Node("simulated " + name)
	ordinal, card := Ordinals(node.GPUs)
	return node.Flatten(), Naming{Ordinal: ordinal, CardOrdinal: card}
}

// What each vendor's value tells an instance (vendors' rules 1-4).
func TestTell(t *testing.T) {
	dgx, dgxN := devices(t, "dgx-h100")
	lumi, lumiN := devices(t, "lumi-g")
	aurora, auroraN := devices(t, "aurora")
	byIndex := func(n Naming) Naming { n.ByIndex = true; return n }
	composite := func(n Naming) Naming { n.Model = ZEComposite; return n }
	noUniqueID := gpu.GPU{Vendor: gpu.AMD, UUID: "amd-kfd-4"}
	cases := []struct {
		rule   string
		vendor gpu.Vendor
		show   []gpu.GPU
		naming Naming
		want   string // the variables, space-separated; or the error's words
	}{
		{"rule 1: NVIDIA by UUID, in PCI order", gpu.NVIDIA, dgx[3:4], dgxN, "CUDA_VISIBLE_DEVICES=" + dgx[3].UUID + " CUDA_DEVICE_ORDER=PCI_BUS_ID"},
		{"rule 1: NVIDIA by CUDA's ordinals", gpu.NVIDIA, []gpu.GPU{dgx[1], dgx[3]}, byIndex(dgxN), "CUDA_VISIBLE_DEVICES=1,3 CUDA_DEVICE_ORDER=PCI_BUS_ID"},
		{"rule 1: a device without an ordinal is named by UUID only", gpu.NVIDIA, []gpu.GPU{{UUID: "MIG-1"}}, byIndex(dgxN), "error: --gpu-ids index: MIG-1 has no ordinal"},
		{"rule 2: AMD, ROCR alone, by UUID", gpu.AMD, lumi[2:3], lumiN, "ROCR_VISIBLE_DEVICES=" + lumi[2].UUID},
		{"rule 2: AMD by ROCR's ordinals", gpu.AMD, lumi[6:8], byIndex(lumiN), "ROCR_VISIBLE_DEVICES=6,7"},
		{"rule 2: an AMD GPU without a unique id by its ordinal", gpu.AMD, []gpu.GPU{noUniqueID}, Naming{Ordinal: map[string]int{noUniqueID.UUID: 4}}, "ROCR_VISIBLE_DEVICES=4"},
		{"rule 3: Intel FLAT, a tile's ordinal", gpu.Intel, aurora[3:4], auroraN, "ZE_AFFINITY_MASK=3 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"rule 3: Intel FLAT, two tiles", gpu.Intel, aurora[10:12], auroraN, "ZE_AFFINITY_MASK=10,11 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"rule 3: Intel COMPOSITE, card.tile", gpu.Intel, aurora[3:4], composite(auroraN), "ZE_AFFINITY_MASK=1.1 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"rule 3: Intel COMPOSITE, a whole card", gpu.Intel, aurora[4:6], composite(auroraN), "ZE_AFFINITY_MASK=2 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"rule 4: NVIDIA, no device", gpu.NVIDIA, nil, dgxN, "CUDA_VISIBLE_DEVICES= CUDA_DEVICE_ORDER=PCI_BUS_ID"},
		{"rule 4: AMD, no device", gpu.AMD, nil, lumiN, "ROCR_VISIBLE_DEVICES="},
		{"rule 4: Intel FLAT, one past the last tile", gpu.Intel, nil, auroraN, "ZE_AFFINITY_MASK=12 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"rule 4: Intel COMPOSITE, one past the last card", gpu.Intel, nil, composite(auroraN), "ZE_AFFINITY_MASK=6 ZE_ENABLE_PCI_ID_DEVICE_ORDER=1"},
		{"rule 4: a node without GPUs is told CUDA's empty list", "", nil, Naming{}, "CUDA_VISIBLE_DEVICES= CUDA_DEVICE_ORDER=PCI_BUS_ID"},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			told, err := Of(tc.vendor).Tell(tc.show, tc.naming)
			got := strings.Join(told, " ")
			if err != nil {
				got = "error: " + err.Error()
			}
			if !strings.HasPrefix(got, tc.want) || (err == nil && got != tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// How each vendor's variable is read from an environment: Level Zero's
// model comes from ZE_FLAT_DEVICE_HIERARCHY; the others have one.
func TestRead(t *testing.T) {
	aurora, _ := devices(t, "aurora")
	cards := func() []gpu.GPU {
		top, _ := gpu.BuiltinTopology("aurora")
		return top.Node("aurora").GPUs
	}()
	cases := []struct {
		name        string
		vendor      gpu.Vendor
		env         map[string]string
		value       string
		model, warn string
		want        []gpu.GPU
	}{
		{"Intel, FLAT by default", gpu.Intel, nil, "3", ZEFlat, "", aurora[3:4]},
		{"Intel, COMPOSITE: a card is its tiles", gpu.Intel, map[string]string{"ZE_FLAT_DEVICE_HIERARCHY": "composite"}, "1", ZEComposite, "", aurora[2:4]},
		{"Intel, a model Level Zero does not know is read as FLAT", gpu.Intel, map[string]string{"ZE_FLAT_DEVICE_HIERARCHY": "TREE"}, "1", ZEFlat, "ZE_FLAT_DEVICE_HIERARCHY=TREE is not FLAT, COMPOSITE or COMBINED", aurora[1:2]},
		{"NVIDIA has one model", gpu.NVIDIA, map[string]string{"ZE_FLAT_DEVICE_HIERARCHY": "TREE"}, "", "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Of(tc.vendor).Read(tc.env)
			if r.Name != Of(tc.vendor).Visible || r.Model != tc.model || !strings.Contains(r.Warning, tc.warn) || (tc.warn == "") != (r.Warning == "") {
				t.Errorf("read %+v, want model %q warning %q", r, tc.model, tc.warn)
			}
			if tc.vendor != gpu.Intel {
				return
			}
			got, _ := r.Resolve(tc.value, cards)
			if !slices.EqualFunc(got, tc.want, func(a, b gpu.GPU) bool { return a.UUID == b.UUID }) {
				t.Errorf("%s=%s resolved to %d device(s), want %d", r.Name, tc.value, len(got), len(tc.want))
			}
		})
	}
}

// The variables an instance of each vendor does not inherit: every
// vendor's selecting ones, and its own told ones.
func TestNotInherited(t *testing.T) {
	every := []string{"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK"}
	for _, tc := range []struct {
		vendor gpu.Vendor
		extra  []string
	}{{gpu.NVIDIA, nil}, {gpu.AMD, nil}, {gpu.Intel, []string{"ZE_ENABLE_PCI_ID_DEVICE_ORDER"}}, {"", nil}} {
		got := Of(tc.vendor).NotInherited()
		slices.Sort(got)
		want := slices.Concat(every, tc.extra)
		slices.Sort(want)
		if !slices.Equal(slices.Compact(got), want) {
			t.Errorf("%q: %v, want %v", tc.vendor, slices.Compact(got), want)
		}
	}
}

// Every vendor gpu.ParseVendor knows has a value, and the words `info`
// uses for it; a node without GPUs has none.
func TestEveryVendorHasAValue(t *testing.T) {
	want := map[gpu.Vendor][2]string{gpu.NVIDIA: {"NVIDIA", "CUDA"}, gpu.AMD: {"AMD", "HIP"}, gpu.Intel: {"Intel", "ZE"}}
	for name, words := range want {
		v := Of(name)
		if _, ok := gpu.ParseVendor(string(name)); !ok || v.Name != name || v.Word != words[0] || v.OrdinalName("") != words[1] {
			t.Errorf("%s: %+v", name, v)
		}
	}
	if len(All()) != len(want) {
		t.Errorf("%d values, want %d", len(All()), len(want))
	}
	for _, v := range All() {
		if _, ok := gpu.ParseVendor(string(v.Name)); !ok {
			t.Errorf("gpu.ParseVendor does not know %s", v.Name)
		}
	}
	if n := Of(""); n.Word != "" || n.MPS || n.Visible != "CUDA_VISIBLE_DEVICES" {
		t.Errorf("a node without GPUs: %+v", n)
	}
	if Of(gpu.Intel).OrdinalName(ZEComposite) != "ZE TILE" {
		t.Errorf("Intel under COMPOSITE: %s", Of(gpu.Intel).OrdinalName(ZEComposite))
	}
	if got := strings.Join(VisibleVars(), " "); got != "CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES ZE_AFFINITY_MASK" {
		t.Errorf("VisibleVars: %s", got)
	}
	if !Of(gpu.NVIDIA).MPS || Of(gpu.AMD).MPS || Of(gpu.Intel).MPS {
		t.Error("MPS is NVIDIA's alone")
	}
}
