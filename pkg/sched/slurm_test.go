package sched

import (
	"strings"
	"testing"
)

// maxRanks is binding.MaxInstances, which callers pass.
const maxRanks = 8192

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
			s, _ := Detect(tc.env)
			got, ok, err := DetectLocalRank(tc.env, s, maxRanks)
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
	s, warn := parseSlurm(Env{"SLURM_JOB_ID": "9", "SLURM_GPUS_ON_NODE": "two", "SLURM_JOB_NODELIST": "n[1-", "SLURM_JOB_GPUS": "0,x"})
	if len(warn) != 3 || s.GPUsOnNode != -1 || s.JobGPUs != nil {
		t.Fatalf("got %+v, warnings %q", s, warn)
	}
}

func TestCountsString(t *testing.T) {
	for _, s := range []string{"2(x3),1", "7,1", "4(x2)", "1", "1,2(x2),1(x3)"} {
		c, err := ParseCounts(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := CountsString(c); got != s {
			t.Errorf("%q: %q", s, got)
		}
	}
}

func TestGPUsPerNodeGranted(t *testing.T) {
	for v, want := range map[string]int{"4": 4, "a100:4": 4, "gpu:a100:8": 8, "": -1, "x": -1, "gpu:": -1} {
		env := Env{}
		if v != "" {
			env["SLURM_GPUS_PER_NODE"] = v
		}
		if got := gpusPerNode(env); got != want {
			t.Errorf("SLURM_GPUS_PER_NODE=%q: %d, want %d", v, got, want)
		}
	}
}

// ChildOfBatchShell: the batch step's task (SLURM_TASK_PID) forked
// gpulaunch, rather than exec'ing it.
func TestChildOfBatchShell(t *testing.T) {
	batch := Env{"SLURM_JOB_ID": "5", "SLURM_TASK_PID": "100"}
	for _, tc := range []struct {
		name      string
		env       Env
		pid, ppid int
		want      bool
	}{
		{"rule: forked by the batch shell", batch, 200, 100, true},
		{"rule: exec'd by it (the shell's own pid)", batch, 100, 50, false},
		{"rule: inside a step the task is srun's", Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_TASK_PID": "100"}, 200, 100, false},
		{"rule: outside a job", Env{"SLURM_TASK_PID": "100"}, 200, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := Detect(tc.env)
			if got := a.ChildOfBatchShell(tc.pid, tc.ppid); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// ManyLaunchersFix is srun's words for srun's tasks, mpirun's otherwise.
func TestManyLaunchersFix(t *testing.T) {
	step, _ := Detect(Env{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_GPUS_ON_NODE": "8"})
	if fix := ManyLaunchersFix(step, LocalRank{Source: "SLURM_LOCALID"}, 4); !strings.Contains(fix, "srun --ntasks-per-node=1 gpulaunch -n 4") || !strings.Contains(fix, "--gres=gpu:8") {
		t.Errorf("srun's ranks: %q", fix)
	}
	if fix := ManyLaunchersFix(step, LocalRank{Source: "OMPI_COMM_WORLD_LOCAL_RANK"}, 4); !strings.Contains(fix, "mpirun --map-by ppr:1:node gpulaunch -n 4") {
		t.Errorf("mpirun's ranks: %q", fix)
	}
}
