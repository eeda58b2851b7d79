package binding

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
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

func TestReadTopologySysfs(t *testing.T) {
	// 1 socket, 2 cores × 2 threads, siblings (0,2) and (1,3), NUMA 0.
	root := fstest.MapFS{
		"sys/devices/system/cpu/online":                             {Data: []byte("0-3\n")},
		"sys/devices/system/node/node0/cpulist":                     {Data: []byte("0-3\n")},
		"sys/devices/system/cpu/cpu0/topology/core_cpus_list":       {Data: []byte("0,2\n")},
		"sys/devices/system/cpu/cpu1/topology/thread_siblings_list": {Data: []byte("1,3\n")},
		"sys/devices/system/cpu/cpu2/topology/core_cpus_list":       {Data: []byte("0,2\n")},
		"sys/devices/system/cpu/cpu3/topology/core_cpus_list":       {Data: []byte("1,3\n")},
		"sys/devices/system/cpu/cpu3/topology/physical_package_id":  {Data: []byte("0\n")},
		"sys/devices/system/cpu/cpu0/topology/physical_package_id":  {Data: []byte("0\n")},
		"sys/devices/system/cpu/cpu2/topology/physical_package_id":  {Data: []byte("0\n")},
		"sys/devices/system/cpu/cpu1/topology/physical_package_id":  {Data: []byte("0\n")},
	}
	topo, err := ReadTopology(root)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := topo.Info(2); c.Core != 0 || topo.ThreadsPerCore() != 2 || topo.CPUs().String() != "0-3" {
		t.Fatalf("cpu2 = %+v, threads/core %d", c, topo.ThreadsPerCore())
	}
	if _, err := ReadTopology(fstest.MapFS{}); err == nil {
		t.Fatal("a missing sysfs was accepted")
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

// smtNode is sysfs for sockets × cores × threads CPUs numbered as Linux
// does on x86: thread t of core k is CPU t*cores*sockets + k; the file
// names are the current kernel's (package_cpus_list, core_cpus_list), or
// older ones' (core_siblings_list, thread_siblings_list).
func smtNode(sockets, cores, threads int, old bool) fstest.MapFS {
	n := sockets * cores
	root := fstest.MapFS{"sys/devices/system/cpu/online": {Data: []byte(fmt.Sprintf("0-%d\n", n*threads-1))}}
	pkgFile, coreFile := "package_cpus_list", "core_cpus_list"
	if old {
		pkgFile, coreFile = "core_siblings_list", "thread_siblings_list"
	}
	for s := 0; s < sockets; s++ {
		var pkg []int
		for t := 0; t < threads; t++ {
			for k := s * cores; k < (s+1)*cores; k++ {
				pkg = append(pkg, t*n+k)
			}
		}
		root[fmt.Sprintf("sys/devices/system/node/node%d/cpulist", s)] = &fstest.MapFile{Data: []byte(cpuset.New(pkg...).String() + "\n")}
		for _, c := range pkg {
			k := c % n
			var sib []int
			for t := 0; t < threads; t++ {
				sib = append(sib, t*n+k)
			}
			dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", c)
			root[dir+"physical_package_id"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d\n", s))}
			root[dir+pkgFile] = &fstest.MapFile{Data: []byte(cpuset.New(pkg...).String() + "\n")}
			root[dir+coreFile] = &fstest.MapFile{Data: []byte(cpuset.New(sib...).String() + "\n")}
		}
	}
	return root
}

// openCounting counts the files opened under each CPU's topology/.
type openCounting struct {
	fs.FS
	opens *int
}

func (o openCounting) Open(name string) (fs.File, error) {
	if strings.Contains(name, "/topology/") {
		*o.opens++
	}
	return o.FS.Open(name)
}

// Each rank reads the layout at its start: a package's and a core's
// files are read once for all their CPUs (ReadTopology's rules 2 and 3),
// with the layout that reading every CPU's files gives.
func TestReadTopologyReadsEachPackageAndCoreOnce(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		sockets, cores, threads int
		old                     bool
		opens                   int // files opened under topology/
	}{
		{"rule 2 and 3: 2 sockets x 4 cores x 2 threads", 2, 4, 2, false, 2*2 + 8},
		{"rule 2 and 3: 2 sockets x 64 cores x 2 threads, 512 files read per CPU", 2, 64, 2, false, 2*2 + 128},
		{"rule 3: no SMT, one core each", 1, 4, 1, false, 1*2 + 4},
		// the current names are looked for first, then the older ones
		{"older kernels' file names", 2, 4, 2, true, 2*3 + 8*2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opens := 0
			topo, err := ReadTopology(openCounting{smtNode(tc.sockets, tc.cores, tc.threads, tc.old), &opens})
			if err != nil {
				t.Fatal(err)
			}
			if opens != tc.opens {
				t.Errorf("%d files opened under topology/, want %d", opens, tc.opens)
			}
			n := tc.sockets * tc.cores
			for id := 0; id < n*tc.threads; id++ {
				c, ok := topo.Info(id)
				core, socket := id%n, (id%n)/tc.cores
				if !ok || c.Core != core || c.Socket != socket || c.NUMA != socket {
					t.Fatalf("cpu%d = %+v, want core %d, socket and NUMA node %d", id, c, core, socket)
				}
			}
			if topo.Sockets() != tc.sockets || topo.ThreadsPerCore() != tc.threads {
				t.Fatalf("%d sockets, %d threads per core", topo.Sockets(), topo.ThreadsPerCore())
			}
		})
	}
}
