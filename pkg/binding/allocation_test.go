package binding

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/cgroup"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// fourGPUNode: GPUs at 07, 0f (NUMA 0) and 47, 4e (NUMA 1) on 2 sockets ×
// 4 cores, one NUMA node per socket.
func fourGPUNode(hidden ...int) gpu.Node {
	buses := []string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0"}
	var gpus []gpu.GPU
	for i, b := range buses {
		gpus = append(gpus, gpu.GPU{UUID: gpu.DeterministicUUID("four", i), BusID: b, Index: i, Minor: i, NUMANode: i / 2})
	}
	for _, h := range hidden {
		gpus[h].Hidden = true
	}
	return gpu.Node{Backend: "test", GPUs: gpus}
}

var eightCPUs = NewTopology([]gpu.CPU{
	{ID: 0, Core: 0, Socket: 0, NUMA: 0}, {ID: 1, Core: 1, Socket: 0, NUMA: 0},
	{ID: 2, Core: 2, Socket: 0, NUMA: 0}, {ID: 3, Core: 3, Socket: 0, NUMA: 0},
	{ID: 4, Core: 4, Socket: 1, NUMA: 1}, {ID: 5, Core: 5, Socket: 1, NUMA: 1},
	{ID: 6, Core: 6, Socket: 1, NUMA: 1}, {ID: 7, Core: 7, Socket: 1, NUMA: 1},
})

func TestReconcileGPUs(t *testing.T) {
	node := fourGPUNode()
	uuid := func(i int) string { return node.GPUs[i].UUID }
	mig := fourGPUNode()
	mig.GPUs[3].MIG = []gpu.GPU{
		{UUID: "MIG-11111111-0000-0000-0000-000000000000", BusID: "0000:4e:00.0", NUMANode: 1, Parent: uuid(3)},
		{UUID: "MIG-22222222-0000-0000-0000-000000000000", BusID: "0000:4e:00.0", NUMANode: 1, Parent: uuid(3)},
	}
	batch := sched.Env{"SLURM_JOB_ID": "30", "SLURMD_NODENAME": "vm", "SLURM_GPUS_ON_NODE": "2"}
	cases := []struct {
		name        string
		node        gpu.Node
		env         sched.Env
		wantBus     string // comma-separated bus ids, or MIG UUIDs
		constrained bool
		warnWord    string
		reasonWord  string
	}{
		{name: "no Slurm, no CUDA_VISIBLE_DEVICES: every openable GPU", node: node, env: sched.Env{},
			wantBus: "0000:07:00.0,0000:0f:00.0,0000:47:00.0,0000:4e:00.0"},
		{name: "ConstrainDevices: job holds GPUs 2,3, renumbered 0,1", node: fourGPUNode(0, 1),
			env:     envWith(batch, "CUDA_VISIBLE_DEVICES", "0,1", "SLURM_JOB_GPUS", "2,3"),
			wantBus: "0000:47:00.0,0000:4e:00.0", constrained: true, reasonWord: "renumbered"},
		{name: "no ConstrainDevices: global indices 2,3", node: node,
			env:     envWith(batch, "CUDA_VISIBLE_DEVICES", "2,3", "SLURM_JOB_GPUS", "2,3"),
			wantBus: "0000:47:00.0,0000:4e:00.0"},
		{name: "gres.conf order differs from PCI order: warned", node: node,
			env:     envWith(batch, "CUDA_VISIBLE_DEVICES", "2,3", "SLURM_JOB_GPUS", "0,1"),
			wantBus: "0000:47:00.0,0000:4e:00.0", warnWord: "gres.conf"},
		{name: "UUIDs, in list order", node: node, env: sched.Env{"CUDA_VISIBLE_DEVICES": uuid(3) + "," + uuid(0)},
			wantBus: "0000:4e:00.0,0000:07:00.0"},
		{name: "unique UUID prefix", node: node, env: sched.Env{"CUDA_VISIBLE_DEVICES": uuid(2)[:12]},
			wantBus: "0000:47:00.0"},
		{name: "MIG UUID picks the MIG device", node: mig, env: sched.Env{"CUDA_VISIBLE_DEVICES": "MIG-2222"},
			wantBus: "MIG-22222222-0000-0000-0000-000000000000"},
		{name: "MIG mode on, no CUDA_VISIBLE_DEVICES: its MIG devices", node: mig, env: sched.Env{},
			wantBus: "0000:07:00.0,0000:0f:00.0,0000:47:00.0,MIG-11111111-0000-0000-0000-000000000000,MIG-22222222-0000-0000-0000-000000000000"},
		{name: "invalid entry mid-list ends it, warned", node: node, env: sched.Env{"CUDA_VISIBLE_DEVICES": "1,0,bogus,3"},
			wantBus: "0000:0f:00.0,0000:07:00.0", warnWord: "ends early"},
		{name: "empty CUDA_VISIBLE_DEVICES: no GPU", node: node, env: sched.Env{"CUDA_VISIBLE_DEVICES": ""},
			wantBus: "", reasonWord: "empty"},
		{name: "salloc shell on the submit host: no GPU, explained", node: node,
			env:     sched.Env{"SLURM_JOB_ID": "33", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "vm"},
			wantBus: "", warnWord: "salloc shell"},
		{name: "batch step leaks SLURM_LOCALID=0: still the whole job's GPUs", node: node,
			env: envWith(batch, "CUDA_VISIBLE_DEVICES", "0,1,2,3", "SLURM_GPUS_ON_NODE", "4", "SLURM_JOB_GPUS", "0,1,2,3",
				"SLURM_LOCALID", "0", "SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_TASKS_PER_NODE", "4"),
			wantBus: "0000:07:00.0,0000:0f:00.0,0000:47:00.0,0000:4e:00.0"},
		{name: "job without GPUs on this node: none, says how to ask", node: node,
			env:     sched.Env{"SLURM_JOB_ID": "8", "SLURMD_NODENAME": "vm"},
			wantBus: "", reasonWord: "--gres=gpu:N"},
		{name: "evidence: no GPU in the job names the variables seen", node: node,
			env:     sched.Env{"SLURM_JOB_ID": "8", "SLURMD_NODENAME": "vm"},
			wantBus: "", reasonWord: "(CUDA_VISIBLE_DEVICES unset, SLURM_GPUS_ON_NODE unset)"},
		{name: "evidence: SLURM_JOB_ID without SLURMD_NODENAME names both", node: node,
			env:     sched.Env{"SLURM_JOB_ID": "33"},
			wantBus: "", warnWord: "SLURM_JOB_ID=33, SLURMD_NODENAME unset", reasonWord: "SLURM_JOB_ID=33, SLURMD_NODENAME unset: an salloc shell"},
		{name: "evidence: junk SLURM_JOB_GPUS is named, with the fix", node: node,
			env:     envWith(batch, "SLURM_JOB_GPUS", "junk"),
			wantBus: "", warnWord: "not a list of GPU ids",
			reasonWord: "SLURM_GPUS_ON_NODE=2, CUDA_VISIBLE_DEVICES unset, SLURM_STEP_GPUS unset, SLURM_JOB_GPUS=junk (not a list of GPU ids)): no GPU; set CUDA_VISIBLE_DEVICES"},
		{name: "evidence: SLURM_JOB_GPUS beyond the node's GPUs", node: node,
			env:     envWith(batch, "SLURM_JOB_GPUS", "6,7"),
			wantBus: "", warnWord: "without saying which", reasonWord: "SLURM_JOB_GPUS=6,7 (not among the 4 GPU(s) of this node)"},
		{name: "evidence: junk SLURM_GPUS_ON_NODE is not read as no GPU", node: node,
			env:     sched.Env{"SLURM_JOB_ID": "8", "SLURMD_NODENAME": "vm", "SLURM_GPUS_ON_NODE": "x"},
			wantBus: "", warnWord: "not a count", reasonWord: "does not say which GPUs it has on this node (CUDA_VISIBLE_DEVICES unset, SLURM_GPUS_ON_NODE=x, not a count)"},
		{name: "--gpu-bind=none: SLURM_STEP_GPUS as global indices", node: node,
			env:     sched.Env{"SLURM_JOB_ID": "8", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "vm", "SLURM_GPUS_ON_NODE": "2", "SLURM_STEP_GPUS": "1,3"},
			wantBus: "0000:0f:00.0,0000:4e:00.0"},
		{name: "--gpu-bind=none under ConstrainDevices: the openable GPUs", node: fourGPUNode(0, 2),
			env:     sched.Env{"SLURM_JOB_ID": "8", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "vm", "SLURM_GPUS_ON_NODE": "2"},
			wantBus: "0000:0f:00.0,0000:4e:00.0", constrained: true},
		{name: "per-task bound step: SLURM_STEP_GPUS is not cross-checked", node: fourGPUNode(0, 1, 2),
			env: sched.Env{"SLURM_JOB_ID": "8", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "vm", "SLURM_LOCALID": "1",
				"SLURM_STEP_TASKS_PER_NODE": "2", "CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "2"},
			wantBus: "0000:4e:00.0", constrained: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Reconcile(World{Node: tc.node, Topology: eightCPUs, Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range a.GPUs {
				if g.Parent != "" {
					got = append(got, g.UUID)
				} else {
					got = append(got, g.BusID)
				}
			}
			if strings.Join(got, ",") != tc.wantBus {
				t.Fatalf("GPUs %v, want %s (reason %q, warnings %q)", got, tc.wantBus, a.GPUReason, a.Warnings)
			}
			if a.DevicesConstrained != tc.constrained {
				t.Fatalf("DevicesConstrained = %v", a.DevicesConstrained)
			}
			warnings := strings.Join(a.Warnings, "\n")
			if (tc.warnWord == "") != (warnings == "") || !strings.Contains(warnings, tc.warnWord) {
				t.Fatalf("warnings %q, want one containing %q", a.Warnings, tc.warnWord)
			}
			if !strings.Contains(a.GPUReason, tc.reasonWord) {
				t.Fatalf("reason %q, want %q in it", a.GPUReason, tc.reasonWord)
			}
			if a.LocalRank != nil && tc.env["SLURM_STEP_ID"] == "" {
				t.Fatalf("a local rank %+v was read outside a step", a.LocalRank)
			}
		})
	}
}

func TestReconcileCPUsAndMemory(t *testing.T) {
	cases := []struct {
		name               string
		affinity, cg, mems string
		env                sched.Env
		wantCPUs, wantMems string
		warnWord           string
	}{
		{name: "no cgroup: the affinity", affinity: "0-7", wantCPUs: "0-7", wantMems: "0-1"},
		{name: "cgroup cpuset narrows", affinity: "0-7", cg: "2-5", wantCPUs: "2-5", wantMems: "0-1"},
		{name: "affinity outside the cgroup: intersection, warned", affinity: "0-7", cg: "4-7", mems: "1", wantCPUs: "4-7", wantMems: "1",
			warnWord: "reaches outside the cgroup"},
		{name: "task bound narrower than its step's cgroup: warned", affinity: "0", cg: "0-3",
			env: sched.Env{"SLURM_CPU_BIND_TYPE": "mask_cpu:", "SLURM_CPU_BIND": "quiet,mask_cpu:0x1"}, wantCPUs: "0", wantMems: "0-1", warnWord: "--cpu-bind=none"},
		// a GH200's cgroup may list its GPU memory nodes (CPU-less): they are
		// dropped, and the cgroup's CPU node kept, not widened to every node
		{name: "cgroup mems with a CPU-less node: its CPU node only", affinity: "0-7", mems: "1,4", wantCPUs: "0-7", wantMems: "1"},
		{name: "cgroup mems of CPU-less nodes only: the layout's nodes", affinity: "0-7", mems: "4-5", wantCPUs: "0-7", wantMems: "0-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = sched.Env{}
			}
			w := World{Node: fourGPUNode(), Topology: eightCPUs, Env: env, Affinity: cpuset.MustParse(tc.affinity),
				Cgroup: cgroup.Cgroup{CPUs: cpuset.MustParse(tc.cg), Mems: cpuset.MustParse(tc.mems)}}
			a, err := Reconcile(w)
			if err != nil {
				t.Fatal(err)
			}
			if a.CPUs.String() != tc.wantCPUs || a.MemNodes.String() != tc.wantMems {
				t.Fatalf("CPUs %s mems %s, want %s %s", a.CPUs, a.MemNodes, tc.wantCPUs, tc.wantMems)
			}
			if !strings.Contains(strings.Join(a.Warnings, "\n"), tc.warnWord) {
				t.Fatalf("warnings %q, want %q", a.Warnings, tc.warnWord)
			}
		})
	}
}

func TestReconcileRejectsBadLocalRank(t *testing.T) {
	_, err := Reconcile(World{Node: fourGPUNode(), Topology: eightCPUs, Env: sched.Env{"OMPI_COMM_WORLD_LOCAL_RANK": "-1"}})
	if err == nil || !strings.Contains(err.Error(), "OMPI_COMM_WORLD_LOCAL_RANK") {
		t.Fatalf("err = %v", err)
	}
}

// envWith is base with the pairs kv set, base left as it was.
func envWith(base sched.Env, kv ...string) sched.Env {
	e := sched.Env{}
	for k, v := range base {
		e[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		e[kv[i]] = kv[i+1]
	}
	return e
}

// A plan that wants GPUs the allocation lacks gives the advice that fits
// why: --node-file only where a driver shows none, never where a
// description is already in use or Slurm is the reason.
func TestNoGPUAdvice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		node      gpu.Node
		env       sched.Env
		want, not string
	}{
		{"a driver that shows no GPU: describe them in a node file", gpu.Node{Backend: "sysfs"}, sched.Env{},
			"the sysfs backend sees no GPU on this node", ""},
		{"a description that lists no GPU: says so, and not --node-file", gpu.Node{Backend: "node file n.json", Described: true}, sched.Env{},
			`the node file n.json lists no GPU (its "gpus" list is empty). Use -G 0 for instances without a GPU; describe the GPUs in its "gpus" list`, "--node-file"},
		{"Slurm gave none: its fix, not --node-file", gpu.Node{Backend: "node file n.json", Described: true, GPUs: fourGPUNode().GPUs},
			sched.Env{"SLURM_JOB_ID": "8", "SLURMD_NODENAME": "vm"}, "--gres=gpu:N", "--node-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Reconcile(World{Node: tc.node, Topology: eightCPUs, Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewPlan(a, Request{Instances: 1, GPUsPerInstance: 1, MemPolicy: MemPreferred})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.not != "" && strings.Contains(err.Error(), tc.not)) {
				t.Fatalf("err = %v, want %q in it and not %q", err, tc.want, tc.not)
			}
		})
	}
}
