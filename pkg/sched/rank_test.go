package sched

import (
	"strconv"
	"strings"
	"testing"
)

func TestDetectGlobalRank(t *testing.T) {
	step := Allocation{JobID: "7", StepID: "0", ProcID: 3, Scheduler: "slurm"}
	for _, tc := range []struct {
		name  string
		env   Env
		slurm Allocation
		want  string // "rank/size source", "" for none, "error"
	}{
		{"openmpi beats leaked slurm", Env{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "SLURM_PROCID": "0"}, Allocation{JobID: "7", Scheduler: "slurm"}, "5/8 OMPI_COMM_WORLD_RANK"},
		{"hydra pmi", Env{"PMI_RANK": "2", "PMI_SIZE": "4", "SLURM_PROCID": "0", "SLURM_STEP_ID": "0"}, step, "2/4 PMI_RANK"},
		{"srun step", Env{"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "8"}, step, "3/8 SLURM_PROCID"},
		{"batch script leak", Env{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, Allocation{JobID: "7", Scheduler: "slurm"}, ""},
		{"rank without size", Env{"PMI_RANK": "2"}, Allocation{}, ""},
		{"rank past size", Env{"PMI_RANK": "4", "PMI_SIZE": "4"}, Allocation{}, "error"},
		{"garbage", Env{"OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "2"}, Allocation{}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ok, err := DetectGlobalRank(tc.env, tc.slurm)
			got := ""
			switch {
			case err != nil:
				got = "error"
			case ok:
				got = strings.Join([]string{itoa(g.Rank) + "/" + itoa(g.Size), g.Source}, " ")
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q (err %v)", got, tc.want, err)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A rank above 0 whose launcher gives no size (PALS_RANKID without
// PALS_SIZE or PMI_SIZE) on a node the scheduler says is not the
// launch's first (PALS_NODEID=1) is refused: taken for a launch of this
// node alone, every node would number its ranks from 0 (--ddp's worlds
// apart, %n 0 everywhere) and say nothing. Rank 0 without a size, and a
// size from another launcher, are not refused.
func TestGlobalRankWithoutSizeIsRefused(t *testing.T) {
	pbs := Env{"PBS_JOBID": "9876.aurora-pbs", "PALS_RANKID": "3", "PALS_LOCAL_RANKID": "1", "PALS_NODEID": "1", "PALS_LOCAL_SIZE": "2"}
	a, _ := Detect(pbs)
	if _, _, err := DetectGlobalRank(pbs, a); err == nil || !strings.Contains(err.Error(), "PALS_RANKID=3 is set but not PALS_SIZE") {
		t.Errorf("PALS_RANKID=3 without a size: %v, want a refusal naming it", err)
	}
	pbs["PALS_RANKID"] = "0"
	if _, ok, err := DetectGlobalRank(pbs, a); err != nil || ok {
		t.Errorf("rank 0 without a size: ok %v, %v; want no rank and no error", ok, err)
	}
	pbs["PALS_RANKID"], pbs["PMI_RANK"], pbs["PMI_SIZE"] = "3", "3", "4"
	if g, ok, err := DetectGlobalRank(pbs, a); err != nil || !ok || g.Rank != 3 || g.Size != 4 {
		t.Errorf("PMI's size beside PALS: %+v %v %v, want 3 of 4", g, ok, err)
	}
}

// The fix for one gpulaunch in every rank is said in the words of the
// launcher that started them.
func TestManyLaunchersFixByLauncher(t *testing.T) {
	for src, want := range map[string]string{
		"PALS_LOCAL_RANKID":          "mpiexec --ppn 1 gpulaunch -n 4",
		"FLUX_TASK_LOCAL_ID":         "flux run -N NODES --tasks-per-node=1 gpulaunch -n 4",
		"OMPI_COMM_WORLD_LOCAL_RANK": "mpirun --map-by ppr:1:node gpulaunch -n 4",
	} {
		if got := ManyLaunchersFix(None(), LocalRank{Rank: 1, Size: 4, Source: src}, 4); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q in it", src, got, want)
		}
	}
}
