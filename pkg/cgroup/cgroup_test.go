package cgroup

import (
	"testing"
	"testing/fstest"
)

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
	cg, err := Read(root, self, mountinfoV1)
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
	cg, err := Read(root, "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n", mi)
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
	cg, err := Read(root, "0::/docker/abc\n", mi)
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
	if _, err := Read(nil, "garbage", ""); err == nil {
		t.Error("a malformed /proc/self/cgroup was accepted")
	}
}
