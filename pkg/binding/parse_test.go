package binding

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

func TestExpandHostlist(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "vm", want: []string{"vm"}},
		{in: "tux[0-2,12]", want: []string{"tux0", "tux1", "tux2", "tux12"}},
		{in: "n[009-011]", want: []string{"n009", "n010", "n011"}},
		{in: "a[01-03,07],b1", want: []string{"a01", "a02", "a03", "a07", "b1"}},
		{in: "node[1-2]-ib", want: []string{"node1-ib", "node2-ib"}},
		{in: "rack[1-2]-node[01-04]", want: []string{
			"rack1-node01", "rack1-node02", "rack1-node03", "rack1-node04",
			"rack2-node01", "rack2-node02", "rack2-node03", "rack2-node04"}},
		{in: "gpu[01-02],login1 x", want: []string{"gpu01", "gpu02", "login1", "x"}},
		{in: "", want: nil},
		{in: "n[3-1]", wantErr: "backwards"},
		{in: "n[1-", wantErr: "without ']'"},
		{in: "n]1", wantErr: "without '['"},
		{in: "][0]", wantErr: "without '['"},
		{in: "n[]", wantErr: "empty range"},
		{in: "n[a-b]", wantErr: "not a host number"},
		{in: "n[1-[2]]", wantErr: "nests"},
		{in: "n[0-99999999]", wantErr: "more than"},
	}
	for _, tc := range cases {
		got, err := ExpandHostlist(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ExpandHostlist(%q) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	cases := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "4", want: []int{4}},
		{in: "2(x3),1", want: []int{2, 2, 2, 1}},
		{in: "72(x2),36", want: []int{72, 72, 36}},
		{in: "1,1", want: []int{1, 1}},
		{in: "", wantErr: true},
		{in: "2(x0)", wantErr: true},
		{in: "2(3)", wantErr: true},
		{in: "2(x3", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "a", wantErr: true},
		{in: "1(x99999999)", wantErr: true},
	}
	for _, tc := range cases {
		got, err := ParseCounts(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseCounts(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

const mountinfoV1 = `25 1 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
30 25 0:27 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset
31 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
32 25 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
`

func TestReadCgroupV1(t *testing.T) {
	step := "/slurm_vm/uid_0/job_30/step_batch"
	root := fstest.MapFS{
		"sys/fs/cgroup/cpuset" + step + "/cpuset.cpus":                     {Data: []byte("1\n")},
		"sys/fs/cgroup/cpuset" + step + "/cpuset.mems":                     {Data: []byte("0\n")},
		"sys/fs/cgroup/memory" + step + "/memory.limit_in_bytes":           {Data: []byte("9223372036854771712\n")},
		"sys/fs/cgroup/memory/slurm_vm/uid_0/job_30/memory.limit_in_bytes": {Data: []byte("4294967296\n")},
	}
	self := "12:memory:" + step + "\n5:devices:" + step + "/task_0\n3:cpuset:" + step + "\n0::/\n"
	cg, err := ReadCgroup(root, self, mountinfoV1)
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version != 1 || cg.CPUs.String() != "1" || cg.Mems.String() != "0" || cg.MemoryLimit != 4<<30 {
		t.Fatalf("got %+v; want v1, cpus 1, mems 0, the job's 4 GiB limit (the step's is unlimited)", cg)
	}
}

func TestReadCgroupV2(t *testing.T) {
	mi := "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	job := "sys/fs/cgroup/system.slice/slurmstepd.scope/job_7"
	root := fstest.MapFS{
		job + "/step_0/user/task_0/cpuset.cpus.effective": {Data: []byte("0-3,8-11\n")},
		job + "/step_0/user/task_0/cpuset.mems.effective": {Data: []byte("0-1\n")},
		job + "/step_0/user/task_0/memory.max":            {Data: []byte("max\n")},
		job + "/memory.max":                               {Data: []byte("8589934592\n")},
	}
	cg, err := ReadCgroup(root, "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n", mi)
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version != 2 || cg.CPUs.String() != "0-3,8-11" || cg.Mems.String() != "0-1" || cg.MemoryLimit != 8<<30 {
		t.Fatalf("got %+v", cg)
	}
}

func TestReadCgroupContainerMountRoot(t *testing.T) {
	// Inside a container the v2 mount shows only the container's subtree.
	mi := "40 1 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	root := fstest.MapFS{"sys/fs/cgroup/cpuset.cpus.effective": {Data: []byte("2-3")}}
	cg, err := ReadCgroup(root, "0::/docker/abc\n", mi)
	if err != nil || cg.CPUs.String() != "2-3" {
		t.Fatalf("got %+v, %v", cg, err)
	}
}

func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]uint64{"max": 0, "1024\n": 1024, "9223372036854771712": 0} {
		if got, err := ParseMemoryLimit(in); err != nil || got != want {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "lots"} {
		if _, err := ParseMemoryLimit(bad); err == nil {
			t.Errorf("ParseMemoryLimit(%q) accepted", bad)
		}
	}
	if _, err := ReadCgroup(nil, "garbage", ""); err == nil {
		t.Error("a malformed /proc/self/cgroup was accepted")
	}
}

func TestDetectLocalRank(t *testing.T) {
	cases := []struct {
		name    string
		env     Env
		want    LocalRank
		ok      bool
		wantErr string
	}{
		{name: "nothing set", env: Env{}},
		{name: "batch step leaks SLURM_LOCALID=0 without a step", env: Env{"SLURM_JOB_ID": "5", "SLURM_LOCALID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "4"}},
		{name: "srun task", env: Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "2", "SLURM_NODEID": "0", "SLURM_STEP_TASKS_PER_NODE": "4"},
			want: LocalRank{Rank: 2, Size: 4, Source: "SLURM_LOCALID"}, ok: true},
		{name: "srun task on the second node", env: Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "SLURM_STEP_TASKS_PER_NODE": "4,2"},
			want: LocalRank{Rank: 1, Size: 2, Source: "SLURM_LOCALID"}, ok: true},
		{name: "mpirun inside sbatch: OMPI beats the leaked SLURM_LOCALID", env: Env{"SLURM_JOB_ID": "5", "SLURM_LOCALID": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
			want: LocalRank{Rank: 3, Size: 4, Source: "OMPI_COMM_WORLD_LOCAL_RANK"}, ok: true},
		{name: "hydra inside sbatch: its proxy step leaks a step id", env: Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "0", "MPI_LOCALRANKID": "2", "MPI_LOCALNRANKS": "4"},
			want: LocalRank{Rank: 2, Size: 4, Source: "MPI_LOCALRANKID"}, ok: true},
		{name: "flux: tasks per node from the job's size over its nodes", env: Env{"FLUX_TASK_LOCAL_ID": "1", "FLUX_TASK_RANK": "5", "FLUX_JOB_SIZE": "8", "FLUX_JOB_NNODES": "2"},
			want: LocalRank{Rank: 1, Size: 4, Source: "FLUX_TASK_LOCAL_ID"}, ok: true},
		{name: "flux: an uneven spread is unknown", env: Env{"FLUX_TASK_LOCAL_ID": "0", "FLUX_JOB_SIZE": "7", "FLUX_JOB_NNODES": "2"}, wantErr: "not spread evenly"},
		{name: "flux: no job size", env: Env{"FLUX_TASK_LOCAL_ID": "1"}, wantErr: "do not give the tasks per node"},
		{name: "rank not below size", env: Env{"PMI_LOCAL_RANK": "4", "PMI_LOCAL_SIZE": "4"}, wantErr: "not below"},
		{name: "garbage rank", env: Env{"OMPI_COMM_WORLD_LOCAL_RANK": "x"}, wantErr: "not a local rank"},
		{name: "garbage size", env: Env{"MV2_COMM_WORLD_LOCAL_RANK": "0", "MV2_COMM_WORLD_LOCAL_SIZE": "0"}, wantErr: "not a local size"},
		{name: "slurm local id beyond tasks", env: Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "1", "SLURM_LOCALID": "3", "SLURM_STEP_TASKS_PER_NODE": "2"}, wantErr: "not below"},
		// every rank plans the node's ranks (NewPlan's rule 11): G × 2^62 wrapped
		{name: "a local size beyond a node's instances", env: Env{"OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "4611686018427387904"}, wantErr: "more ranks on one node than gpulaunch places (8192)"},
		{name: "slurm tasks beyond a node's instances", env: Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "1", "SLURM_LOCALID": "3", "SLURM_STEP_TASKS_PER_NODE": "99999999999"}, wantErr: "more ranks on one node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := ParseSlurm(tc.env)
			got, ok, err := DetectLocalRank(tc.env, s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok || got != tc.want {
				t.Fatalf("got %+v ok=%v err=%v; want %+v ok=%v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestParseSlurmWarnsOnGarbage(t *testing.T) {
	s, warn := ParseSlurm(Env{"SLURM_JOB_ID": "9", "SLURM_GPUS_ON_NODE": "two", "SLURM_JOB_NODELIST": "n[1-", "SLURM_JOB_GPUS": "0,x"})
	if len(warn) != 3 || s.GPUsOnNode != -1 || s.JobGPUs != nil {
		t.Fatalf("got %+v, warnings %q", s, warn)
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

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"rack[1-2]-node[01-04]", "a[01-03,07],b1", "n[009-011]", "n[3-1]", "x,y z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(hosts) > maxHosts {
			t.Fatalf("%q gave %d hosts", s, len(hosts))
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[], ") {
				t.Fatalf("%q gave host %q", s, h)
			}
		}
	})
}

func FuzzCounts(f *testing.F) {
	for _, s := range []string{"2(x3),1", "72(x2),36", "4", "2(x0)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ParseCounts(s)
		if err != nil {
			return
		}
		if len(counts) == 0 || len(counts) > maxHosts {
			t.Fatalf("%q gave %d counts", s, len(counts))
		}
		for _, c := range counts {
			if c < 0 {
				t.Fatalf("%q gave negative count", s)
			}
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
