package binding

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// layout builds a regular CPU list the way Linux numbers x86 CPUs: all
// first hardware threads, then all second threads.
func layout(sockets, numaPerSocket, coresPerNUMA, threads int) []gpu.CPU {
	cores := sockets * numaPerSocket * coresPerNUMA
	var out []gpu.CPU
	for th := 0; th < threads; th++ {
		for c := 0; c < cores; c++ {
			numa := c / coresPerNUMA
			out = append(out, gpu.CPU{ID: th*cores + c, Core: c, Socket: numa / numaPerSocket, NUMA: numa})
		}
	}
	return out
}

func gpusAt(buses []string, numas []int) []gpu.GPU {
	var gs []gpu.GPU
	for i := range buses {
		gs = append(gs, gpu.GPU{UUID: gpu.DeterministicUUID("plan", i), BusID: buses[i], Index: i, NUMANode: numas[i]})
	}
	return gs
}

// Topologies as their machines really are.
var (
	// DGX A100: 2 × EPYC 7742 in NPS4, GPUs 0-7 on NUMA 2,3,0,1,6,7,4,5.
	dgxA100 = fixture{topo: NewTopology(layout(2, 4, 16, 2)),
		gpus: gpusAt([]string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0", "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"},
			[]int{2, 3, 0, 1, 6, 7, 4, 5})}
	// DGX H100: 2 × Xeon 8480C, GPUs 0-3 on socket 0, 4-7 on socket 1.
	dgxH100 = fixture{topo: NewTopology(layout(2, 1, 56, 2)),
		gpus: gpusAt([]string{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"},
			[]int{0, 0, 0, 0, 1, 1, 1, 1})}
	// Perlmutter: 1 × EPYC 7763 in NPS4, GPUs numbered in reverse of NUMA order.
	perlmutter = fixture{topo: NewTopology(layout(1, 4, 16, 2)),
		gpus: gpusAt([]string{"0000:03:00.0", "0000:41:00.0", "0000:81:00.0", "0000:c1:00.0"}, []int{3, 2, 1, 0})}
	// A small 2-socket SMT node written out CPU by CPU: cores 0,1 on
	// socket 0 (threads 0/4, 1/5), cores 2,3 on socket 1 (2/6, 3/7).
	twoSocketSMT = fixture{topo: NewTopology([]gpu.CPU{
		{ID: 0, Core: 0, Socket: 0, NUMA: 0}, {ID: 4, Core: 0, Socket: 0, NUMA: 0},
		{ID: 1, Core: 1, Socket: 0, NUMA: 0}, {ID: 5, Core: 1, Socket: 0, NUMA: 0},
		{ID: 2, Core: 2, Socket: 1, NUMA: 1}, {ID: 6, Core: 2, Socket: 1, NUMA: 1},
		{ID: 3, Core: 3, Socket: 1, NUMA: 1}, {ID: 7, Core: 3, Socket: 1, NUMA: 1},
	}), gpus: gpusAt([]string{"0000:3b:00.0", "0000:d8:00.0"}, []int{0, 1})}
	// Firmware without _PXM: numa_node = -1 for every GPU.
	unknownNUMA = fixture{topo: NewTopology(layout(2, 1, 8, 1)),
		gpus: gpusAt([]string{"0000:01:00.0", "0000:02:00.0", "0000:81:00.0", "0000:82:00.0"}, []int{-1, -1, -1, -1})}
)

type fixture struct {
	topo Topology
	gpus []gpu.GPU
}

func (f fixture) alloc(allowed string) Allocation {
	cpus := f.topo.CPUs()
	if allowed != "" {
		cpus = cpuset.MustParse(allowed)
	}
	return Allocation{GPUs: f.gpus, CPUs: cpus, MemNodes: cpuset.New(f.topo.NUMANodes()...), Topology: f.topo, GPUReason: "test"}
}

// checkInvariants holds for every plan: CPUs within the allowed set and
// disjoint unless shared, GPUs distinct unless shared, memory nodes only
// those of the slot's GPUs.
func checkInvariants(t *testing.T, a Allocation, r Request, p Plan) {
	t.Helper()
	if len(p.Slots) != r.Instances {
		t.Fatalf("%d slots for %d instances", len(p.Slots), r.Instances)
	}
	var used cpuset.Set
	gpuSeen := map[string]bool{}
	for _, s := range p.Slots {
		if s.CPUs.IsEmpty() || !s.CPUs.IsSubsetOf(a.CPUs) {
			t.Fatalf("slot %d CPUs %s not a non-empty subset of %s", s.Index, s.CPUs, a.CPUs)
		}
		if !s.SharedCPUs && s.CPUs.Overlaps(used) {
			t.Fatalf("slot %d CPUs %s overlap earlier slots %s", s.Index, s.CPUs, used)
		}
		used = used.Union(s.CPUs)
		if len(s.GPUs) != r.GPUsPerInstance {
			t.Fatalf("slot %d has %d GPUs, want %d", s.Index, len(s.GPUs), r.GPUsPerInstance)
		}
		for _, g := range s.GPUs {
			if gpuSeen[g.UUID] && !r.ShareGPUs {
				t.Fatalf("GPU %s given twice", g.BusID)
			}
			gpuSeen[g.UUID] = true
			if !s.MemNodes.IsEmpty() && !s.MemNodes.IsSubsetOf(cpuset.New(gpuNUMAs(s.GPUs)...)) {
				t.Fatalf("slot %d memory nodes %s are not its GPUs' nodes", s.Index, s.MemNodes)
			}
		}
	}
}

func gpuNUMAs(gs []gpu.GPU) []int {
	var n []int
	for _, g := range gs {
		if g.NUMANode >= 0 {
			n = append(n, g.NUMANode)
		}
	}
	return n
}

func TestPlan(t *testing.T) {
	type slotWant struct{ bus, cpus, mem string }
	cases := []struct {
		name     string
		fix      fixture
		allowed  string
		req      Request
		want     map[int]slotWant // checked slots; others by invariants only
		locality float64
		warnWord string
	}{
		{name: "DGX A100: GPU 0 sits on NUMA 2, not NUMA 0", fix: dgxA100, req: Request{Instances: 8, GPUsPerInstance: 1},
			want: map[int]slotWant{
				0: {bus: "0000:07:00.0", cpus: "32-47,160-175", mem: "preferred:2"},
				2: {bus: "0000:47:00.0", cpus: "0-15,128-143", mem: "preferred:0"},
				7: {bus: "0000:bd:00.0", cpus: "80-95,208-223", mem: "preferred:5"},
			}, locality: 1},
		{name: "DGX H100: four instances per socket split it in whole cores", fix: dgxH100, req: Request{Instances: 8, GPUsPerInstance: 1},
			want: map[int]slotWant{
				0: {bus: "0000:18:00.0", cpus: "0-13,112-125", mem: "preferred:0"},
				3: {bus: "0000:5d:00.0", cpus: "42-55,154-167", mem: "preferred:0"},
				4: {bus: "0000:9a:00.0", cpus: "56-69,168-181", mem: "preferred:1"},
			}, locality: 1},
		{name: "DGX H100 -G 2: each pair on one NUMA node", fix: dgxH100, req: Request{Instances: 4, GPUsPerInstance: 2},
			want: map[int]slotWant{
				0: {bus: "0000:18:00.0,0000:2a:00.0", cpus: "0-27,112-139", mem: "preferred:0"},
				2: {bus: "0000:9a:00.0,0000:ab:00.0", cpus: "56-83,168-195", mem: "preferred:1"},
			}, locality: 1},
		{name: "DGX H100 -n 2: instances spread over both sockets", fix: dgxH100, req: Request{Instances: 2, GPUsPerInstance: 1},
			want: map[int]slotWant{
				0: {bus: "0000:18:00.0", cpus: "0-55,112-167"},
				1: {bus: "0000:9a:00.0", cpus: "56-111,168-223"},
			}, locality: 1},
		{name: "DGX H100 -G 3: groups stay within a socket while they can", fix: dgxH100, req: Request{Instances: 2, GPUsPerInstance: 3},
			want: map[int]slotWant{
				0: {bus: "0000:18:00.0,0000:2a:00.0,0000:3a:00.0"},
				1: {bus: "0000:9a:00.0,0000:ab:00.0,0000:ba:00.0"},
			}, locality: 1},
		{name: "Perlmutter: GPUs in reverse of NUMA order", fix: perlmutter, req: Request{Instances: 4, GPUsPerInstance: 1},
			want: map[int]slotWant{
				0: {bus: "0000:03:00.0", cpus: "48-63,112-127", mem: "preferred:3"},
				3: {bus: "0000:c1:00.0", cpus: "0-15,64-79", mem: "preferred:0"},
			}, locality: 1},
		{name: "2-socket SMT: whole cores before SMT siblings", fix: twoSocketSMT, req: Request{Instances: 2, GPUsPerInstance: 1, CPUsPerInstance: 2},
			want: map[int]slotWant{
				0: {bus: "0000:3b:00.0", cpus: "0,4"},
				1: {bus: "0000:d8:00.0", cpus: "2,6"},
			}, locality: 1},
		{name: "2-socket SMT: an odd share splits only the last core", fix: twoSocketSMT, req: Request{Instances: 2, GPUsPerInstance: 1, CPUsPerInstance: 3},
			want: map[int]slotWant{0: {cpus: "0-1,4"}, 1: {cpus: "2-3,6"}}, locality: 1},
		{name: "2-socket SMT -G 0: CPU-only instances share the node", fix: twoSocketSMT, req: Request{Instances: 4, GPUsPerInstance: 0},
			want: map[int]slotWant{0: {bus: "", mem: "none"}}, locality: 1},
		{name: "numa_node = -1: even shares of every CPU, no memory policy", fix: unknownNUMA, req: Request{Instances: 4, GPUsPerInstance: 1},
			want: map[int]slotWant{0: {bus: "0000:01:00.0", cpus: "0-3", mem: "none"}, 3: {cpus: "12-15", mem: "none"}}, locality: 1},
		{name: "cgroup cpuset excludes some of a GPU's local CPUs: still all local", fix: dgxH100, allowed: "28-223",
			req: Request{Instances: 8, GPUsPerInstance: 1}, want: map[int]slotWant{0: {cpus: "112-132"}, 3: {cpus: "46-55,157-167"}}, locality: 1},
		{name: "job's CPUs all on socket 0: socket-1 GPUs take the nearest, warned", fix: dgxH100, allowed: "0-55,112-167",
			req: Request{Instances: 8, GPUsPerInstance: 1}, locality: 0.5, warnWord: "not local"},
		{name: "bind policy with two NUMA nodes", fix: dgxA100, req: Request{Instances: 4, GPUsPerInstance: 2, MemPolicy: MemBind},
			want: map[int]slotWant{0: {bus: "0000:07:00.0,0000:0f:00.0", mem: "bind:2-3"}}, locality: 1},
		{name: "rule 4: 8 instances share 4 GPUs evenly, as asked: no warning", fix: perlmutter, req: Request{Instances: 8, GPUsPerInstance: 1, ShareGPUs: true},
			want: map[int]slotWant{0: {bus: "0000:03:00.0"}, 4: {bus: "0000:03:00.0"}}, locality: 1},
		{name: "rule 4: 5 instances on 4 GPUs: one GPU runs two, warned", fix: perlmutter, req: Request{Instances: 5, GPUsPerInstance: 1, ShareGPUs: true, Overcommit: true},
			want: map[int]slotWant{0: {bus: "0000:03:00.0"}, 4: {bus: "0000:03:00.0"}}, locality: 1,
			warnWord: "5 instances on 4 GPUs share them unevenly: 1 run 2 instances each, 3 run 1"},
		{name: "rule 4: 3 instances on 2 groups of 2 GPUs, warned", fix: perlmutter, req: Request{Instances: 3, GPUsPerInstance: 2, ShareGPUs: true},
			locality: 1, warnWord: "on 2 groups of 2 GPUs share them unevenly"},
		{name: "rule 9: more instances than CPUs with --overcommit: shared, warned", fix: twoSocketSMT, allowed: "0-1", req: Request{Instances: 4, GPUsPerInstance: 0, Overcommit: true},
			locality: 1, warnWord: "share CPUs"},
		{name: "rule 9: a GPU each bounds N: shared, warned", fix: perlmutter, allowed: "0-1", req: Request{Instances: 4, GPUsPerInstance: 1},
			locality: 0.25, warnWord: "share CPUs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.MemPolicy == "" {
				tc.req.MemPolicy = MemPreferred
			}
			a := tc.fix.alloc(tc.allowed)
			p, err := NewPlan(a, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, a, tc.req, p)
			for i, w := range tc.want {
				s := p.Slots[i]
				var bus []string
				for _, g := range s.GPUs {
					bus = append(bus, g.BusID)
				}
				mem := string(s.MemPolicy)
				if !s.MemNodes.IsEmpty() {
					mem += ":" + s.MemNodes.String()
				}
				got := slotWant{bus: strings.Join(bus, ","), cpus: s.CPUs.String(), mem: mem}
				if (w.bus != "" || tc.req.GPUsPerInstance == 0) && got.bus != w.bus ||
					w.cpus != "" && got.cpus != w.cpus || w.mem != "" && got.mem != w.mem {
					t.Errorf("slot %d = %+v, want %+v", i, got, w)
				}
			}
			if loc := p.Locality(); fmt.Sprintf("%.3f", loc) != fmt.Sprintf("%.3f", tc.locality) {
				t.Errorf("locality %.3f, want %.3f", loc, tc.locality)
			}
			warnings := strings.Join(p.Warnings, "\n")
			if (tc.warnWord == "") != (warnings == "") || !strings.Contains(warnings, tc.warnWord) {
				t.Errorf("warnings %q, want one containing %q", p.Warnings, tc.warnWord)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	cases := []struct {
		name    string
		fix     fixture
		req     Request
		wantErr string
	}{
		{"more instances than GPUs", perlmutter, Request{Instances: 5, GPUsPerInstance: 1}, "-n 5 -G 1 needs 5 GPU(s), the allocation has 4"},
		{"more GPUs per instance than the node has: a smaller -G, not sharing", perlmutter, Request{Instances: 1, GPUsPerInstance: 5, ShareGPUs: true}, "Give -G 4 or fewer"},
		{"rule 11: -n beyond MaxInstances, before a slot is made", perlmutter, Request{Instances: 99999999999, GPUsPerInstance: 0}, "-n 99999999999: too large: instances on one node are 1..8192"},
		{"rule 11: -n 2^31", perlmutter, Request{Instances: 1 << 31, GPUsPerInstance: 1}, "instances on one node are 1..8192"},
		{"rule 11: -G beyond MaxGPUsPerInstance (N×G would wrap)", perlmutter, Request{Instances: 2, GPUsPerInstance: 1 << 62}, "GPUs per instance are 0..1024"},
		{"rule 11: -c beyond MaxCPUsPerInstance", perlmutter, Request{Instances: 2, CPUsPerInstance: 1 << 62}, "CPUs per instance are 1..8192"},
		{"more GPUs per instance than the node has", perlmutter, Request{Instances: 4, GPUsPerInstance: 2}, "needs 8 GPU(s), the allocation has 4"},
		{"sharing still needs one group", perlmutter, Request{Instances: 2, GPUsPerInstance: 5, ShareGPUs: true}, "needs 10 GPU(s)"},
		{"zero instances", perlmutter, Request{Instances: 0, GPUsPerInstance: 1}, "at least 1"},
		{"negative GPUs", perlmutter, Request{Instances: 1, GPUsPerInstance: -1}, "cannot be negative"},
		{"negative CPUs", perlmutter, Request{Instances: 1, CPUsPerInstance: -2}, "cannot be negative"},
		{"more CPUs than allowed", twoSocketSMT, Request{Instances: 2, GPUsPerInstance: 1, CPUsPerInstance: 5}, "needs 10 CPUs, the allocation has 8"},
		{"bad memory policy", perlmutter, Request{Instances: 1, GPUsPerInstance: 1, MemPolicy: "strict"}, "preferred, bind or none"},
		{"rule 9: more instances than CPUs", twoSocketSMT, Request{Instances: 9, GPUsPerInstance: 0}, "-n 9 puts 9 instances without a GPU of their own on 8 allowed CPU(s) (0-7), less than one CPU each: ask for at most 8 instances, or give -O (--overcommit, as srun)"},
		{"rule 9: shared GPUs do not bound N either", perlmutter, Request{Instances: 200, GPUsPerInstance: 1, ShareGPUs: true}, "-n 200 puts 200 instances without a GPU of their own"},
		{"rule 9: -c with more instances than CPUs, even overcommitted", twoSocketSMT, Request{Instances: 9, GPUsPerInstance: 0, CPUsPerInstance: 1, Overcommit: true}, "needs 9 CPUs, the allocation has 8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.MemPolicy == "" {
				tc.req.MemPolicy = MemPreferred
			}
			_, err := NewPlan(tc.fix.alloc(""), tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestPlanIsDeterministic: ranks of one node compute the plan separately
// and must agree.
func TestPlanIsDeterministic(t *testing.T) {
	a := dgxA100.alloc("")
	r := Request{Instances: 8, GPUsPerInstance: 1, MemPolicy: MemPreferred}
	first, _ := NewPlan(a, r)
	for range 20 {
		again, _ := NewPlan(a, r)
		for i := range first.Slots {
			if !first.Slots[i].CPUs.Equal(again.Slots[i].CPUs) || first.Slots[i].GPUs[0].UUID != again.Slots[i].GPUs[0].UUID {
				t.Fatalf("slot %d differs between runs", i)
			}
		}
	}
}

// naivePlan is the site-wrapper baseline: instance i gets GPU i and the
// i-th contiguous block of CPUs, lowest to lowest.
func naivePlan(a Allocation, n int) Plan {
	cpus := a.CPUs.List()
	share := len(cpus) / n
	p := Plan{}
	for i := range n {
		s := Slot{Index: i, GPUs: []gpu.GPU{a.GPUs[i]}, CPUs: cpuset.New(cpus[i*share : (i+1)*share]...)}
		s.LocalCPUs = countLocal(s.CPUs, gpuLocal(s.GPUs, a.Topology))
		p.Slots = append(p.Slots, s)
	}
	return p
}

func TestNaiveBaselineIsWrongOnDGXA100(t *testing.T) {
	a := dgxA100.alloc("")
	if loc := naivePlan(a, 8).Locality(); loc > 0.2 {
		t.Fatalf("the naive plan scored %.2f on DGX A100; the fixture no longer shows the problem", loc)
	}
}

// Fixtures lists the bench topologies by name.
func Fixtures() map[string]fixture {
	return map[string]fixture{"dgx-a100": dgxA100, "dgx-h100": dgxH100, "perlmutter": perlmutter, "2-socket-smt": twoSocketSMT, "numa-unknown": unknownNUMA}
}

// TestCoreWalkSkipsOnlySpentCores: rule 7's take, walking a domain's
// cores from where the last take left off, takes what a walk over every
// core of the node takes, take after take, as the free CPUs shrink and
// cores are split for odd remainders.
func TestCoreWalkSkipsOnlySpentCores(t *testing.T) {
	topo := NewTopology(layout(2, 2, 8, 2)) // 64 CPUs, cores of 2 threads
	dom := topo.NUMANodeCPUs(1)
	walk := &coreWalk{cores: coresIn(dom, topo)}
	free := topo.CPUs()
	for i, need := range []int{3, 1, 4, 2, 5, 1, 1, 2} {
		want := takeCores(free.Intersect(dom), need, topo, &coreWalk{cores: topo.cores})
		got := takeCores(free.Intersect(dom), need, topo, walk)
		if !got.Equal(want) {
			t.Fatalf("take %d (need %d): the domain's walk took %s, a walk over every core %s", i, need, got, want)
		}
		free = free.Difference(got)
	}
	if walk.spent == 0 {
		t.Error("the walk never moved past a spent core: every take walked the domain from its start")
	}
}

// BenchmarkPlan: N GPUs on a node of 16·N CPUs, so both grow; the plan is
// O(D·C + N·C/64) (assignCPUs), near linear in N.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{8, 64, 512} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			// n GPUs over 8 NUMA nodes of a big node: 2 sockets × 4 NUMA × n cores.
			topo := NewTopology(layout(2, 4, n, 2))
			var buses []string
			var numas []int
			for i := range n {
				buses = append(buses, fmt.Sprintf("%04x:%02x:00.0", i/256, i%256))
				numas = append(numas, i%8)
			}
			f := fixture{topo: topo, gpus: gpusAt(buses, numas)}
			a := f.alloc("")
			r := Request{Instances: n, GPUsPerInstance: 1, MemPolicy: MemPreferred}
			for b.Loop() {
				if _, err := NewPlan(a, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlacementScore scores a plan of one instance per device on
// each fixture (up to 8) and on the vendors' built-in nodes (every device:
// LUMI's 8 GCDs, the MI300A's 4 APUs, Aurora's 12 tiles), against the
// naive site wrapper.
func BenchmarkPlacementScore(b *testing.B) {
	allocs := map[string]Allocation{}
	for name, f := range Fixtures() {
		allocs[name] = f.alloc("")
	}
	for _, name := range []string{"lumi-g", "mi300a", "aurora"} {
		allocs[name] = simulated(b, name, nil)
	}
	for name, a := range allocs {
		n := len(a.GPUs)
		if _, builtin := Fixtures()[name]; builtin {
			n = min(n, 8)
		}
		p, err := NewPlan(a, Request{Instances: n, GPUsPerInstance: 1, MemPolicy: MemPreferred})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(100*p.Locality(), "gpulaunch-local%")
			b.ReportMetric(100*naivePlan(a, n).Locality(), "naive-local%")
		})
	}
}

// CheckCounts' rules, each by its number: what a command line's -n, -G
// and -c may be, given or not.
func TestCheckCountsRules(t *testing.T) {
	all := Given{Instances: true, GPUs: true, CPUs: true}
	for _, tc := range []struct {
		rule  string
		r     Request
		given Given
		want  string // "" accepted
	}{
		{"1: -n 0 given", Request{Instances: 0, GPUsPerInstance: 1}, all, "-n 0: the number of instances must be at least 1"},
		{"1: N not given yet (run decides it)", Request{Instances: 0, GPUsPerInstance: 1}, Given{}, ""},
		{"1: -n beyond MaxInstances", Request{Instances: MaxInstances + 1}, all, "too large: instances on one node are 1..8192"},
		{"2: -G negative", Request{Instances: 1, GPUsPerInstance: -1}, Given{}, "-G -1: GPUs per instance cannot be negative (-G 0: no GPU)"},
		{"2: -G beyond MaxGPUsPerInstance", Request{Instances: 1, GPUsPerInstance: MaxGPUsPerInstance + 1}, Given{}, "too large: GPUs per instance are 0..1024"},
		{"2: -G 0", Request{Instances: 1, GPUsPerInstance: 0}, Given{Instances: true, GPUs: true}, ""},
		{"3: -c negative", Request{Instances: 1, CPUsPerInstance: -2}, Given{}, "-c -2: CPUs per instance cannot be negative"},
		{"3: -c beyond MaxCPUsPerInstance", Request{Instances: 1, CPUsPerInstance: MaxCPUsPerInstance + 1}, Given{}, "too large: CPUs per instance are 1..8192"},
		{"4: --share-gpus with -G 0 given", Request{Instances: 2, ShareGPUs: true}, all, "--share-gpus with -G 0: slots without a GPU have none to share"},
		{"4: --share-gpus, -G not given", Request{Instances: 2, ShareGPUs: true}, Given{Instances: true}, ""},
		{"5: -c 0 given", Request{Instances: 1, GPUsPerInstance: 1}, all, "-c 0: a slot needs at least 1 CPU"},
		{"5: -c not given: an even share", Request{Instances: 1, GPUsPerInstance: 1}, Given{Instances: true, GPUs: true}, ""},
	} {
		err := tc.r.CheckCounts(tc.given)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("rule %s: %v, want it accepted", tc.rule, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("rule %s: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
