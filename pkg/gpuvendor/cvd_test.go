package gpuvendor

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

func TestParseVisibleDevices(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		set      bool
		kind     string
		entries  []string
		stopWord string
	}{
		{name: "unset: all devices", set: false},
		{name: "empty: no device", value: "", set: true},
		{name: "blank: no device", value: "  ", set: true},
		{name: "indices", value: "0,2,3", set: true, kind: "index", entries: []string{"0", "2", "3"}},
		{name: "invalid entry mid-list ends the list", value: "0,2,-1,1", set: true, kind: "index", entries: []string{"0", "2"}, stopWord: `"-1"`},
		{name: "strtoul style integers", value: "1gpu2,2ampere", set: true, kind: "index", entries: []string{"1", "2"}},
		{name: "leading zeros", value: "007", set: true, kind: "index", entries: []string{"7"}},
		{name: "spaces trimmed", value: " 1 , 3", set: true, kind: "index", entries: []string{"1", "3"}},
		{name: "GPU uuids", value: "GPU-8932f937-d72c,GPU-AB", set: true, kind: "GPU", entries: []string{"8932f937-d72c", "ab"}},
		{name: "MIG uuids", value: "MIG-1234", set: true, kind: "MIG", entries: []string{"1234"}},
		{name: "uuid after index ends the list", value: "0,GPU-12", set: true, kind: "index", entries: []string{"0"}, stopWord: "mixes"},
		{name: "MIG after GPU ends the list", value: "GPU-1,MIG-2", set: true, kind: "GPU", entries: []string{"1"}, stopWord: "mixes"},
		{name: "garbage first entry", value: "NoDevFiles", set: true, stopWord: "NoDevFiles"},
		{name: "empty entry", value: "0,,1", set: true, kind: "index", entries: []string{"0"}, stopWord: `""`},
		{name: "huge index", value: "99999999999999999999", set: true, stopWord: "not a GPU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vd := ParseVisibleDevices(tc.value, tc.set)
			if vd.Set != tc.set || vd.Kind != tc.kind || !reflect.DeepEqual(vd.Entries, tc.entries) {
				t.Fatalf("got %+v, want kind %q entries %v", vd, tc.kind, tc.entries)
			}
			if (tc.stopWord == "") != (vd.Stop == "") || !strings.Contains(vd.Stop, tc.stopWord) {
				t.Fatalf("Stop = %q, want one containing %q", vd.Stop, tc.stopWord)
			}
		})
	}
}

var (
	gpuA = gpu.GPU{UUID: "GPU-aaaa1111-0000-0000-0000-000000000000", BusID: "0000:07:00.0", NUMANode: 0}
	gpuB = gpu.GPU{UUID: "GPU-aaaa2222-0000-0000-0000-000000000000", BusID: "0000:0f:00.0", NUMANode: 0}
	gpuC = gpu.GPU{UUID: "GPU-cccc3333-0000-0000-0000-000000000000", BusID: "0000:47:00.0", NUMANode: 1,
		MIG: []gpu.GPU{
			{UUID: "MIG-c1000000-0000-0000-0000-000000000000", BusID: "0000:47:00.0", NUMANode: 1, Parent: "GPU-cccc3333-0000-0000-0000-000000000000"},
			{UUID: "MIG-c2000000-0000-0000-0000-000000000000", BusID: "0000:47:00.0", NUMANode: 1, Parent: "GPU-cccc3333-0000-0000-0000-000000000000"},
		}}
)

func TestResolveVisibleDevices(t *testing.T) {
	visible := []gpu.GPU{gpuA, gpuB, gpuC}
	cases := []struct {
		name, value string
		want        []string // bus ids or MIG UUIDs
		stopWord    string
	}{
		{name: "index order is list order", value: "2,0", want: []string{gpuC.UUID, gpuA.UUID}},
		{name: "index beyond the visible GPUs stops", value: "1,5,0", want: []string{gpuB.UUID}, stopWord: "beyond"},
		{name: "full uuid", value: gpuB.UUID, want: []string{gpuB.UUID}},
		{name: "unique prefix", value: "GPU-cccc", want: []string{gpuC.UUID}},
		{name: "upper-case prefix", value: "GPU-CCCC", want: []string{gpuC.UUID}},
		{name: "ambiguous prefix stops", value: "GPU-cccc,GPU-aaaa", want: []string{gpuC.UUID}, stopWord: "ambiguous"},
		{name: "unknown uuid stops", value: "GPU-ffff", stopWord: "matches no GPU"},
		{name: "MIG uuid", value: "MIG-c2", want: []string{gpuC.MIG[1].UUID}},
		{name: "duplicate: CUDA sees nothing", value: "0,1,0", stopWord: "twice"},
		{name: "duplicate via prefix and index", value: "GPU-aaaa1,GPU-aaaa1111", stopWord: "twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, stop := ParseVisibleDevices(tc.value, true).Resolve(visible)
			var ids []string
			for _, g := range got {
				ids = append(ids, g.UUID)
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("resolved %v, want %v (stop %q)", ids, tc.want, stop)
			}
			if (tc.stopWord == "") != (stop == "") || !strings.Contains(stop, tc.stopWord) {
				t.Fatalf("stop = %q, want one containing %q", stop, tc.stopWord)
			}
		})
	}
}

func FuzzVisibleDevices(f *testing.F) {
	for _, s := range []string{"0,2,-1,1", "GPU-aaaa", "MIG-c2,MIG-c1", "1gpu2", "", "0,,1"} {
		f.Add(s)
	}
	visible := []gpu.GPU{gpuA, gpuB, gpuC}
	f.Fuzz(func(t *testing.T, s string) {
		vd := ParseVisibleDevices(s, true)
		got, _ := vd.Resolve(visible)
		if len(got) > len(vd.Entries) {
			t.Fatalf("%q resolved to %d GPUs from %d entries", s, len(got), len(vd.Entries))
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
