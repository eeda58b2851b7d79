package binding

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// simulated is the allocation of a built-in node with env; hide marks
// GPUs (by position) a device cgroup denies.
func simulated(t testing.TB, name string, env sched.Env, hide ...int) Allocation {
	t.Helper()
	top, err := gpu.BuiltinTopology(name)
	if err != nil {
		t.Fatal(err)
	}
	node := top.Node("simulated " + name)
	for _, i := range hide {
		node.GPUs[i].Hide()
	}
	w, err := ReadWorld(nil, node, env, "h")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Reconcile(w)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A node file's reserved_cpus apply on this machine too: the system's
// CPUs leave the affinity, unless they are all the process has.
func TestNodeFileReservedCPUsOnThisMachine(t *testing.T) {
	root := fstest.MapFS{
		"sys/devices/system/cpu/online":         {Data: []byte("0-3\n")},
		"sys/devices/system/node/node0/cpulist": {Data: []byte("0-3\n")},
		"proc/self/status":                      {Data: []byte("Cpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n")},
	}
	for reserved, want := range map[string]string{"": "0-3", "0,2": "1,3", "0-3": "0-3"} {
		node := gpu.Node{ReservedCPUs: cpuset.MustParse(reserved)}
		w, err := ReadWorld(root, node, nil, "h")
		if err != nil {
			t.Fatal(err)
		}
		if w.Affinity.String() != want {
			t.Errorf("reserved %q: affinity %s, want %s", reserved, w.Affinity, want)
		}
	}
}

// buses lists devices by PCI address, tiles with their number.
func buses(gpus []gpu.GPU) string {
	var out []string
	for _, g := range gpus {
		b := strings.TrimPrefix(g.BusID, "0000:")
		if g.Parent != "" {
			b += "." + string(rune('0'+g.Tile))
		}
		out = append(out, b)
	}
	return strings.Join(out, " ")
}

func TestReconcileAMD(t *testing.T) {
	lumi := simulated(t, "lumi-g", nil)
	uuid2 := lumi.GPUs[2].UUID
	job := sched.Env{"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1", "SLURM_GPUS_ON_NODE": "8"}
	cases := []struct {
		name  string
		env   sched.Env
		hide  []int
		want  string
		words string // in the reason or a warning
	}{
		{"every GCD outside a job", nil, nil, "c1:00.0 c6:00.0 c9:00.0 ce:00.0 d1:00.0 d6:00.0 d9:00.0 de:00.0", "ROCR_VISIBLE_DEVICES unset"},
		{"ROCR indices", sched.Env{"ROCR_VISIBLE_DEVICES": "2,3"}, nil, "c9:00.0 ce:00.0", "ROCR_VISIBLE_DEVICES=2,3"},
		{"ROCR by UUID", sched.Env{"ROCR_VISIBLE_DEVICES": uuid2}, nil, "c9:00.0", ""},
		{"HIP selects inside ROCR, from 0", sched.Env{"ROCR_VISIBLE_DEVICES": "4,5,6", "HIP_VISIBLE_DEVICES": "1"}, nil, "d6:00.0", "HIP_VISIBLE_DEVICES=1 among those"},
		{"CUDA_VISIBLE_DEVICES as HIP reads it", sched.Env{"ROCR_VISIBLE_DEVICES": "4,5,6", "CUDA_VISIBLE_DEVICES": "0,2"}, nil, "d1:00.0 d9:00.0", ""},
		{"HIP beats CUDA", sched.Env{"HIP_VISIBLE_DEVICES": "7", "CUDA_VISIBLE_DEVICES": "0"}, nil, "de:00.0", ""},
		{"HIP beyond ROCR's GPUs", sched.Env{"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "2"}, nil, "", "beyond the 2 GPU(s)"},
		{"Slurm's one list in both: one selection", envWith(job, "ROCR_VISIBLE_DEVICES", "2,3", "CUDA_VISIBLE_DEVICES", "2,3"), nil, "c9:00.0 ce:00.0", "taken as one selection"},
		{"a device cgroup renumbers from 0", sched.Env{"ROCR_VISIBLE_DEVICES": "0,1"}, []int{0, 1, 2, 3}, "d1:00.0 d6:00.0", "renumbered from 0 over the 4 GPU(s)"},
		{"unset in a job without GPUs: none", sched.Env{"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1"}, nil, "", "ROCR_VISIBLE_DEVICES unset, SLURM_GPUS_ON_NODE unset"},
		{"a GPU named twice: none", sched.Env{"ROCR_VISIBLE_DEVICES": "1,1"}, nil, "", "names 1 twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := simulated(t, "lumi-g", tc.env, tc.hide...)
			if got := buses(a.GPUs); got != tc.want || a.Vendor != gpu.AMD {
				t.Errorf("GPUs %q, want %q (%s)", got, tc.want, a.GPUReason)
			}
			if all := a.GPUReason + " " + strings.Join(a.Warnings, " "); !strings.Contains(all, tc.words) {
				t.Errorf("reason and warnings %q lack %q", all, tc.words)
			}
		})
	}
}

func TestReconcileIntel(t *testing.T) {
	cases := []struct {
		name  string
		env   sched.Env
		hide  []int
		want  string
		words string
	}{
		{"every tile", nil, nil, "18:00.0.0 18:00.0.1 42:00.0.0 42:00.0.1 6c:00.0.0 6c:00.0.1 0001:18:00.0.0 0001:18:00.0.1 0001:42:00.0.0 0001:42:00.0.1 0001:6c:00.0.0 0001:6c:00.0.1", ""},
		{"FLAT ordinals are tiles", sched.Env{"ZE_AFFINITY_MASK": "0,3"}, nil, "18:00.0.0 42:00.0.1", ""},
		{"order of the entries does not count", sched.Env{"ZE_AFFINITY_MASK": "3,0"}, nil, "18:00.0.0 42:00.0.1", ""},
		{"COMPOSITE: a card is both its tiles", sched.Env{"ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE", "ZE_AFFINITY_MASK": "1"}, nil, "42:00.0.0 42:00.0.1", ""},
		{"COMPOSITE: card.tile", sched.Env{"ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE", "ZE_AFFINITY_MASK": "2.1,5.0"}, nil, "6c:00.0.1 0001:6c:00.0.0", ""},
		{"COMBINED numbers as FLAT", sched.Env{"ZE_FLAT_DEVICE_HIERARCHY": "COMBINED", "ZE_AFFINITY_MASK": "11"}, nil, "0001:6c:00.0.1", ""},
		{"FLAT skips card.tile entries", sched.Env{"ZE_AFFINITY_MASK": "0.1,2"}, nil, "42:00.0.0", "skipped"},
		{"beyond the devices: skipped", sched.Env{"ZE_AFFINITY_MASK": "1,12"}, nil, "18:00.0.1", "beyond the 12 tile(s)"},
		{"empty masks nothing", sched.Env{"ZE_AFFINITY_MASK": ""}, []int{1, 2, 3, 4, 5}, "18:00.0.0 18:00.0.1", ""},
		{"a device cgroup renumbers from 0", sched.Env{"ZE_AFFINITY_MASK": "0,1"}, []int{0, 1, 2}, "0001:18:00.0.0 0001:18:00.0.1", "renumbered from 0"},
		{"an unknown hierarchy is read as FLAT", sched.Env{"ZE_FLAT_DEVICE_HIERARCHY": "TREE", "ZE_AFFINITY_MASK": "1"}, nil, "18:00.0.1", "not FLAT, COMPOSITE or COMBINED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := simulated(t, "aurora", tc.env, tc.hide...)
			if got := buses(a.GPUs); got != tc.want || a.Vendor != gpu.Intel {
				t.Errorf("devices %q, want %q (%s)", got, tc.want, a.GPUReason)
			}
			if all := a.GPUReason + " " + strings.Join(a.Warnings, " "); !strings.Contains(all, tc.words) {
				t.Errorf("reason and warnings %q lack %q", all, tc.words)
			}
		})
	}
}

// Slurm numbers an Intel node's GPUs by card (gres.conf lists render
// nodes); ZE_AFFINITY_MASK by tile. A card and both its tiles agree.
func TestIntelSlurmCardsAreTheirTiles(t *testing.T) {
	job := sched.Env{"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1", "SLURM_GPUS_ON_NODE": "1", "SLURM_JOB_GPUS": "1"}
	for mask, mismatch := range map[string]bool{"2,3": false, "3": false, "4,5": true} {
		a := simulated(t, "aurora", envWith(job, "ZE_AFFINITY_MASK", mask))
		if warned := strings.Contains(strings.Join(a.Warnings, " "), "gres.conf may number"); warned != mismatch {
			t.Errorf("ZE_AFFINITY_MASK=%s with SLURM_JOB_GPUS=1: warned %v, want %v (%q)", mask, warned, mismatch, a.Warnings)
		}
	}
}

// The acceptance of the vendor nodes: the plan reproduces the sites'
// hand-written maps.
func TestPlanOnVendorNodes(t *testing.T) {
	plan := func(name string, r Request) (Allocation, Plan) {
		a := simulated(t, name, nil)
		r.MemPolicy = MemPreferred
		p, err := NewPlan(a, r)
		if err != nil {
			t.Fatal(err)
		}
		return a, p
	}
	// LUMI's user guide: GCD g's CPUs are the usable cores of one CCD
	// (--cpu-bind=map_cpu:49,57,17,25,1,9,33,41), with their SMT siblings.
	_, lumi := plan("lumi-g", Request{Instances: 8, GPUsPerInstance: 1})
	for g, want := range []string{"49-55,113-119", "57-63,121-127", "17-23,81-87", "25-31,89-95", "1-7,65-71", "9-15,73-79", "33-39,97-103", "41-47,105-111"} {
		s := lumi.Slots[g]
		if s.CPUs.String() != want || s.MemNodes.String() != cpuset.New(s.GPUs[0].NUMANode).String() {
			t.Errorf("lumi-g GCD %d: CPUs %s memory %s, want %s on NUMA %d", g, s.CPUs, s.MemNodes, want, s.GPUs[0].NUMANode)
		}
	}
	// -G 2 pairs the two GCDs of one MI250X
	_, pairs := plan("lumi-g", Request{Instances: 4, GPUsPerInstance: 2})
	for i, want := range []string{"c1:00.0 c6:00.0", "c9:00.0 ce:00.0", "d1:00.0 d6:00.0", "d9:00.0 de:00.0"} {
		if got := buses(pairs.Slots[i].GPUs); got != want {
			t.Errorf("lumi-g -G 2 slot %d: %s, want %s", i, got, want)
		}
	}
	// MI300A: APU i on NUMA node i, its 24 cores and their siblings
	_, apu := plan("mi300a", Request{Instances: 4, GPUsPerInstance: 1})
	for i, s := range apu.Slots {
		want := cpuset.Range(24*i, 24*i+23).Union(cpuset.Range(96+24*i, 96+24*i+23))
		if s.GPUs[0].NUMANode != i || !s.CPUs.Equal(want) || s.MemNodes.String() != cpuset.New(i).String() {
			t.Errorf("mi300a slot %d: GPU on NUMA %d, CPUs %s memory %s", i, s.GPUs[0].NUMANode, s.CPUs, s.MemNodes)
		}
	}
	// Aurora: a slot per tile, two per GPU, on the GPU's socket, never on
	// the reserved cores 0 and 52 (and their siblings)
	aurora, tiles := plan("aurora", Request{Instances: 12, GPUsPerInstance: 1})
	perCard := map[string]int{}
	reserved := cpuset.MustParse("0,52,104,156")
	for i, s := range tiles.Slots {
		g := s.GPUs[0]
		perCard[g.Parent]++
		socket := aurora.Topology.CPUs()
		if info, ok := aurora.Topology.Info(s.CPUs.Min()); ok {
			socket = aurora.Topology.SocketCPUs(info.Socket)
		}
		if g.Parent == "" || !s.CPUs.IsSubsetOf(g.LocalCPUs) || !s.CPUs.IsSubsetOf(socket) || s.CPUs.Overlaps(reserved) || s.CPUs.Size() != 16 {
			t.Errorf("aurora slot %d: tile %s, CPUs %s", i, g.UUID, s.CPUs)
		}
	}
	if len(perCard) != 6 {
		t.Errorf("aurora: tiles per GPU %v, want 2 on each of 6", perCard)
	}
	for card, n := range perCard {
		if n != 2 {
			t.Errorf("aurora GPU %s has %d slots", card, n)
		}
	}
}
