package binding

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

var (
	gpuA = gpu.GPU{UUID: "GPU-aaaa1111-0000-0000-0000-000000000000", BusID: "0000:07:00.0", NUMANode: 0}
	gpuB = gpu.GPU{UUID: "GPU-aaaa2222-0000-0000-0000-000000000000", BusID: "0000:0f:00.0", NUMANode: 0}
	gpuC = gpu.GPU{UUID: "GPU-cccc3333-0000-0000-0000-000000000000", BusID: "0000:47:00.0", NUMANode: 1,
		MIG: []gpu.GPU{
			{UUID: "MIG-c1000000-0000-0000-0000-000000000000", BusID: "0000:47:00.0", NUMANode: 1, Parent: "GPU-cccc3333-0000-0000-0000-000000000000"},
			{UUID: "MIG-c2000000-0000-0000-0000-000000000000", BusID: "0000:47:00.0", NUMANode: 1, Parent: "GPU-cccc3333-0000-0000-0000-000000000000"},
		}}
)

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

// Bindable: a plan whose every CPU this process may run on is applied;
// a plan beyond them, or no /proc status to tell, is not.
func TestBindable(t *testing.T) {
	plan := Plan{Slots: []Slot{{CPUs: cpuset.MustParse("0-1")}, {CPUs: cpuset.MustParse("2-3")}}}
	status := func(cpus string) fstest.MapFS {
		return fstest.MapFS{"proc/self/status": {Data: []byte("Cpus_allowed_list:\t" + cpus + "\nMems_allowed_list:\t0\n")}}
	}
	for _, tc := range []struct {
		name string
		root fstest.MapFS
		want bool
	}{
		{"every CPU allowed", status("0-7"), true},
		{"a slot beyond the allowed CPUs", status("0-2"), false},
		{"no status", fstest.MapFS{}, false},
	} {
		if got := Bindable(tc.root, plan); got != tc.want {
			t.Errorf("%s: Bindable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
