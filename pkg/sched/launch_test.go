package sched

import (
	"strings"
	"testing"
)

func TestQueueRunID(t *testing.T) {
	srun := Env{"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "3", "SLURM_SRUN_COMM_HOST": "10.0.0.1", "SLURM_SRUN_COMM_PORT": "4567"}
	with := func(e Env, kv ...string) Env {
		out := Env{}
		for k, v := range e {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name, source string
		env          Env
		want         string // "error" for none
	}{
		{"rule 1: GPULAUNCH_RUN_ID first", "SLURM_PROCID", with(srun, "GPULAUNCH_RUN_ID", "mine"), "mine"},
		{"rule 2: mpirun's PMIx namespace beats the step it runs in", "OMPI_COMM_WORLD_RANK", with(srun, "PMIX_NAMESPACE", "prterun-x-1"), "pmix-prterun-x-1"},
		{"rule 3: an srun step by job, step and srun's address", "SLURM_PROCID", with(srun, "PMIX_NAMESPACE", "slurm.pmix.42.3"), "slurm-42.3-10.0.0.1-4567"},
		{"rule 3: a Flux job by its id", "FLUX_TASK_RANK", Env{"FLUX_JOB_ID": "ƒabc"}, "flux-ƒabc"},
		{"rule 4: another PMIx launcher", "PMI_RANK", Env{"PMIX_NAMESPACE": "ns"}, "pmix-ns"},
		{"a batch script names no launch", "PMI_RANK", Env{"SLURM_JOB_ID": "42"}, "error"},
		{"PBS names no launch", "PMI_RANK", Env{"PBS_JOBID": "1.pbs"}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QueueRunID(tc.env, tc.source)
			if err != nil {
				if tc.want != "error" || !strings.Contains(err.Error(), "GPULAUNCH_RUN_ID") {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Detect asks the innermost scheduler first: the jobs of a Flux
// instance started under srun carry the Slurm job's leaked variables, and
// are the Flux job's.
func TestDetectOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  Env
		want string
	}{
		{"nothing: no scheduler", Env{}, ""},
		{"flux start under srun: the Flux job's", Env{"SLURM_JOB_ID": "9", "FLUX_JOB_ID": "ƒa"}, "flux"},
		{"a Slurm job: Slurm's", Env{"SLURM_JOB_ID": "9"}, "slurm"},
		{"flux", Env{"FLUX_JOB_ID": "ƒa"}, "flux"},
		{"pbs", Env{"PBS_JOBID": "1.pbs"}, "pbs"},
		{"PALS variables without a PBS job: ranks only", Env{"PALS_RANKID": "0", "PALS_LOCAL_RANKID": "0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a, _ := Detect(tc.env); a.Scheduler != tc.want {
				t.Fatalf("got %q, want %q", a.Scheduler, tc.want)
			}
		})
	}
}
