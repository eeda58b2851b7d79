package binding

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Ranks agree without talking: every rank's slot, computed alone, is the
// slot the whole-node plan gives it, even when the launcher bound each
// rank's affinity differently.
func TestRankSlotAgreesAcrossRanks(t *testing.T) {
	a := dgxA100.alloc("")
	a.StepCPUs = a.CPUs
	whole, err := NewPlan(a, Request{Instances: 8, GPUsPerInstance: 1, MemPolicy: MemPreferred})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for r := range 8 {
		mine := a
		mine.LocalRank = &sched.LocalRank{Rank: r, Size: 8, Source: "OMPI_COMM_WORLD_LOCAL_RANK"}
		// OpenMPI --bind-to core: each rank's affinity is one core
		mine.CPUs = cpuset.New(r)
		s, _, err := RankSlot(mine, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false)
		if err != nil {
			t.Fatal(err)
		}
		want := whole.Slots[r]
		if s.Index != r || s.GPUs[0].UUID != want.GPUs[0].UUID || s.CPUs.String() != want.CPUs.String() {
			t.Errorf("rank %d: GPU %s CPUs %s, whole-node plan says %s %s", r, s.GPUs[0].BusID, s.CPUs, want.GPUs[0].BusID, want.CPUs)
		}
		if seen[s.GPUs[0].UUID] {
			t.Errorf("rank %d: GPU %s given twice", r, s.GPUs[0].BusID)
		}
		seen[s.GPUs[0].UUID] = true
		if c, _ := a.Topology.Info(s.CPUs.Min()); c.NUMA != s.GPUs[0].NUMANode {
			t.Errorf("rank %d: GPU on NUMA %d, CPUs %s elsewhere", r, s.GPUs[0].NUMANode, s.CPUs)
		}
	}
}

func TestRankSlotCases(t *testing.T) {
	inStep := sched.Allocation{JobID: "7", StepID: "0", GPUsOnNode: 4, Scheduler: "slurm"}
	for _, tc := range []struct {
		name      string
		alloc     func() Allocation
		req       Request
		gpusGiven bool
		want      string // "GPU-bus-list CPUs" or an error fragment
	}{
		{"two GPUs each by default", func() Allocation {
			a := dgxH100.alloc("")
			a.LocalRank = &sched.LocalRank{Rank: 1, Size: 4}
			return a
		}, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false, "0000:3a:00.0,0000:5d:00.0 28-55,140-167"},
		{"per-task bound GPU kept, own CPUs", func() Allocation {
			a := perlmutter.alloc("16-31,80-95")
			a.GPUs = a.GPUs[1:2] // srun --gpus-per-task=1: this rank sees GPU 1 only
			a.Sched = inStep
			a.LocalRank = &sched.LocalRank{Rank: 1, Size: 4, Source: "SLURM_LOCALID"}
			return a
		}, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false, "0000:41:00.0 16-31,80-95"},
		{"more ranks than GPUs", func() Allocation {
			a := perlmutter.alloc("")
			a.LocalRank = &sched.LocalRank{Rank: 5, Size: 8}
			return a
		}, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false, "-G 1 for each of the 8 rank(s) on this node needs 8 GPU(s), the allocation has 4"},
		{"rule 5: too many GPUs per rank, in a rank's words", func() Allocation {
			a := perlmutter.alloc("")
			a.LocalRank = nil
			return a
		}, Request{GPUsPerInstance: 5, MemPolicy: MemPreferred}, true, "-G 5 for each of the 1 rank(s) on this node needs 5 GPU(s), the allocation has 4"},
		{"rule 5: too many CPUs per rank, in a rank's words", func() Allocation {
			a := twoSocketSMT.alloc("")
			a.LocalRank = &sched.LocalRank{Rank: 1, Size: 2}
			return a
		}, Request{CPUsPerInstance: 5, MemPolicy: MemNone}, true, "-c 5 for each of the 2 rank(s) on this node needs 10 CPUs, the allocation has 8"},
		{"no GPU needs -G 0", func() Allocation {
			a := perlmutter.alloc("")
			a.GPUs = nil
			a.LocalRank = &sched.LocalRank{Rank: 0, Size: 2}
			return a
		}, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false, "give -G 0"},
		{"-G 0 binds CPUs only", func() Allocation {
			a := twoSocketSMT.alloc("")
			a.LocalRank = &sched.LocalRank{Rank: 1, Size: 2}
			return a
		}, Request{MemPolicy: MemNone}, true, " 2-3,6-7"},
		{"a later rank without its peers' count: refused", func() Allocation {
			a := dgxH100.alloc("")
			a.LocalRank = &sched.LocalRank{Rank: 2, Source: "MPI_LOCALRANKID"}
			return a
		}, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false, "MPI_LOCALRANKID=2, but the launcher does not say how many ranks share this node"},
		{"the only rank takes the node", func() Allocation {
			a := dgxH100.alloc("")
			a.LocalRank = &sched.LocalRank{Rank: 0, Source: "MPI_LOCALRANKID"}
			return a
		}, Request{GPUsPerInstance: 1, MemPolicy: MemPreferred}, false, "0000:18:00.0,0000:2a:00.0,0000:3a:00.0,0000:5d:00.0,0000:9a:00.0,0000:ab:00.0,0000:ba:00.0,0000:db:00.0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := RankSlot(tc.alloc(), tc.req, tc.gpusGiven)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				var bus []string
				for _, g := range s.GPUs {
					bus = append(bus, g.BusID)
				}
				got = strings.Join(bus, ",") + " " + s.CPUs.String()
			}
			if err != nil && (strings.Contains(got, "-n ") || strings.Contains(got, "instances")) {
				t.Errorf("rank mode has no -n and no instances: %q", got)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// OneRankOfSeveral's rules, and RanksHere's count of the ranks here.
func TestOneRankOfSeveral(t *testing.T) {
	step := sched.Allocation{JobID: "8", StepID: "0", GPUsOnNode: 8}
	ranks := func(size int) *sched.LocalRank { return &sched.LocalRank{Rank: 1, Size: size, Source: "SLURM_LOCALID"} }
	shared := Allocation{GPUs: make([]gpu.GPU, 8), Sched: step, LocalRank: ranks(4)}
	own := Allocation{GPUs: make([]gpu.GPU, 2), Sched: step, LocalRank: ranks(4)}
	for _, tc := range []struct {
		name     string
		a        Allocation
		r        Request
		auto     bool
		wantRank bool
		wantErr  string
	}{
		{"1: no launcher: a run", Allocation{GPUs: make([]gpu.GPU, 8)}, Request{Instances: 4, GPUsPerInstance: 1}, false, false, ""},
		{"1: the only rank here: a run", Allocation{GPUs: make([]gpu.GPU, 8), Sched: step, LocalRank: ranks(1)}, Request{}, true, false, ""},
		{"2: without -n: a rank", shared, Request{}, true, true, ""},
		{"3: -n over GPUs of its own: a run", own, Request{Instances: 2, GPUsPerInstance: 1}, false, false, ""},
		{"4: -n beyond its own GPUs: refused", own, Request{Instances: 4, GPUsPerInstance: 1}, false, false, "-n 4 in each of the 4 ranks this launcher started on this node (SLURM_LOCALID) would start 16 instances"},
		{"4: -n on GPUs every rank sees: refused", shared, Request{Instances: 2, GPUsPerInstance: 1}, false, false, "drop -n so that each rank binds itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rank, err := OneRankOfSeveral(tc.a, tc.r, tc.auto)
			if rank != tc.wantRank || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("rank %v, error %v; want rank %v, error with %q", rank, err, tc.wantRank, tc.wantErr)
			}
		})
	}
	if size, source := shared.RanksHere(); size != 4 || source != "SLURM_LOCALID" {
		t.Errorf("RanksHere = %d %s, want 4 SLURM_LOCALID", size, source)
	}
	if size, source := (Allocation{}).RanksHere(); size != 1 || source != "no launcher" {
		t.Errorf("RanksHere without a launcher = %d %s, want 1, no launcher", size, source)
	}
}
