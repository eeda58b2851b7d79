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
