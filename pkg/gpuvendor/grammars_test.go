package gpuvendor

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

func TestParseAMDVisible(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		entries  []string
		stopWord string
	}{
		{name: "empty: no GPU", value: ""},
		{name: "indices", value: "0,2,3", entries: []string{"0", "2", "3"}},
		{name: "spaces", value: " 1 , 3", entries: []string{"1", "3"}},
		{name: "UUIDs, any case", value: "GPU-A5C2B9E7F2F1B1F3,gpu-0011", entries: []string{"GPU-a5c2b9e7f2f1b1f3", "GPU-0011"}},
		{name: "indices and UUIDs mixed", value: "1,GPU-ab", entries: []string{"1", "GPU-ab"}},
		{name: "invalid entry ends the list", value: "0,-1,1", entries: []string{"0"}, stopWord: `"-1"`},
		{name: "an NVIDIA-style uuid is not AMD's", value: "GPU-8932f937-d72c", stopWord: "not a GPU index or GPU-<hex>"},
		{name: "garbage", value: "all", stopWord: `"all"`},
		{name: "empty entry", value: "0,,1", entries: []string{"0"}, stopWord: `""`},
	}
	for _, tc := range cases {
		v := ParseAMDVisible(tc.value)
		if !reflect.DeepEqual(v.Entries, tc.entries) || (tc.stopWord == "") != (v.Stop == "") || !strings.Contains(v.Stop, tc.stopWord) {
			t.Errorf("%s: %+v, want entries %v stop %q", tc.name, v, tc.entries, tc.stopWord)
		}
	}
}

func TestParseZEMask(t *testing.T) {
	cases := []struct {
		value    string
		set      bool
		entries  string
		stopWord string
	}{
		{value: "", set: false},
		{value: "default", set: false},
		{value: "0,3", set: true, entries: "0 3"},
		{value: "0.1, 2", set: true, entries: "0.1 2"},
		{value: "1.0,1.1", set: true, entries: "1.0 1.1"},
		{value: "0,x", set: true, entries: "0", stopWord: `"x"`},
		{value: "0.y", set: true, stopWord: "device.tile"},
		{value: "-1", set: true, stopWord: `"-1"`},
	}
	for _, tc := range cases {
		m := ParseZEMask(tc.value)
		var got []string
		for _, e := range m.Entries {
			got = append(got, e.String())
		}
		if m.Set != tc.set || strings.Join(got, " ") != tc.entries || (tc.stopWord == "") != (m.Stop == "") || !strings.Contains(m.Stop, tc.stopWord) {
			t.Errorf("%q: %+v, want set %v entries %q stop %q", tc.value, m, tc.set, tc.entries, tc.stopWord)
		}
	}
	for _, tc := range []struct {
		value string
		want  string
		ok    bool
	}{{"", ZEFlat, true}, {"flat", ZEFlat, true}, {"COMPOSITE", ZEComposite, true}, {"COMBINED", ZECombined, true}, {"TREE", ZEFlat, false}} {
		if got, ok := ZEHierarchy(tc.value); got != tc.want || ok != tc.ok {
			t.Errorf("ZEHierarchy(%q) = %s %v", tc.value, got, ok)
		}
	}
}

func FuzzAMDVisible(f *testing.F) {
	for _, s := range []string{"0,2,1", "GPU-4a5b6c7d8e9f0a1b", "gpu-4A5B,3", "1,1", "", " 3 , x", "99999999999999999999"} {
		f.Add(s)
	}
	top, err := gpu.BuiltinTopology("lumi-g")
	if err != nil {
		f.Fatal(err)
	}
	visible := top.Node("lumi-g").GPUs
	f.Fuzz(func(t *testing.T, s string) {
		v := ParseAMDVisible(s)
		got, _ := v.Resolve(visible)
		if len(got) > len(v.Entries) {
			t.Fatalf("%q resolved to %d GPUs from %d entries", s, len(got), len(v.Entries))
		}
		seen := map[string]bool{}
		for _, g := range got {
			if seen[g.UUID] {
				t.Fatalf("%q resolved %s twice", s, g.UUID)
			}
			seen[g.UUID] = true
		}
	})
}

func FuzzZEMask(f *testing.F) {
	for _, s := range []string{"0,3", "1.1,0", "default", "", "5.0,2.1", "x", "0.", "12,0.99"} {
		f.Add(s, false)
	}
	top, err := gpu.BuiltinTopology("aurora")
	if err != nil {
		f.Fatal(err)
	}
	cards := top.Node("aurora").GPUs
	f.Fuzz(func(t *testing.T, s string, composite bool) {
		h := ZEFlat
		if composite {
			h = ZEComposite
		}
		m := ParseZEMask(s)
		got, _ := m.Resolve(cards, h)
		if !m.Set && len(got) != 12 {
			t.Fatalf("%q masks nothing but resolved to %d devices", s, len(got))
		}
		// Devices come back once each, in Level Zero's order.
		last := -1
		ordinal, _ := Ordinals(cards)
		for _, g := range got {
			if n := ordinal[g.UUID]; n <= last {
				t.Fatalf("%q: %s out of order or twice", s, g.UUID)
			} else {
				last = n
			}
		}
	})
}
