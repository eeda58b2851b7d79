package sched

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// fluxRunTask is the environment of task 5 of `flux run -N2 -n8 app`:
// flux-shell's job variables (flux-environment(7)), and the simple PMI
// its pmi plugin gives every task.
func fluxRunTask() Env {
	return Env{
		"FLUX_JOB_ID": "ƒ2Zqa8J7oT", "FLUX_JOB_SIZE": "8", "FLUX_JOB_NNODES": "2",
		"FLUX_TASK_RANK": "5", "FLUX_TASK_LOCAL_ID": "1",
		"FLUX_URI": "local:///var/tmp/flux-abc/local-0", "FLUX_KVS_NAMESPACE": "job-123",
		"FLUX_JOB_TMPDIR": "/var/tmp/flux-abc/jobtmp-1-ƒ2Zqa8J7oT",
		"PMI_FD":          "7", "PMI_RANK": "5", "PMI_SIZE": "8", "PMI_SPAWNED": "0",
	}
}

func TestFluxRunTask(t *testing.T) {
	env := fluxRunTask()
	a, warn := Detect(env)
	want := Allocation{Scheduler: "flux", JobID: "ƒ2Zqa8J7oT", NodeID: -1, NodeCount: 2, TasksPerNode: []int{4, 4},
		ProcID: 5, LocalID: 1, GPUsOnNode: -1, GPUsPerNode: -1, LaunchKey: "ƒ2Zqa8J7oT", QueueKey: "ƒ2Zqa8J7oT"}
	if len(warn) > 0 || !reflect.DeepEqual(a, want) {
		t.Fatalf("got %+v, warnings %q; want %+v", a, warn, want)
	}
	lr, ok, err := DetectLocalRank(env, a, maxRanks)
	if err != nil || !ok || lr != (LocalRank{Rank: 1, Size: 4, Source: "FLUX_TASK_LOCAL_ID"}) {
		t.Errorf("local rank %+v %v %v, want 1 of 4 from FLUX_TASK_LOCAL_ID", lr, ok, err)
	}
	g, ok, err := DetectGlobalRank(env, a)
	if err != nil || !ok || g.Rank != 5 || g.Size != 8 {
		t.Errorf("global rank %+v %v %v, want 5 of 8", g, ok, err)
	}
	// a `flux run` is a job of its own: its id names the launch on every
	// node, for the rendezvous port and a queue over nodes
	if a.LaunchKey != "ƒ2Zqa8J7oT" || a.InStep() {
		t.Errorf("launch key %q, step %q", a.LaunchKey, a.StepID)
	}
	if id, err := QueueRunID(env, "PMI_RANK"); err != nil || id != "flux-ƒ2Zqa8J7oT" {
		t.Errorf("queue run id %q, %v", id, err)
	}
	if w := a.Words(); w != "Flux:      job ƒ2Zqa8J7oT, 2 node(s), 4 task(s) per node, task 5, local task 1" {
		t.Errorf("info says %q", w)
	}
}

// What Flux cannot tell: no node list, no node index, no GPU count; an
// unset CUDA_VISIBLE_DEVICES (gpu-affinity=off) leaves every GPU.
func TestFluxCannotTell(t *testing.T) {
	a, _ := Detect(fluxRunTask())
	if a.Nodes != nil || a.NodeID != -1 || a.GPUsOnNode != -1 || a.NodeCount != 2 {
		t.Fatalf("got %+v", a)
	}
	open := []gpu.GPU{{UUID: "GPU-a"}, {UUID: "GPU-b"}}
	c, ok := a.UnsetGPUs(fluxRunTask(), "CUDA_VISIBLE_DEVICES", NodeGPUs{All: open, Openable: open})
	if !ok || len(c.GPUs) != 2 || !strings.Contains(c.Reason, "Flux job ƒ2Zqa8J7oT") {
		t.Fatalf("unset CUDA_VISIBLE_DEVICES: %+v %v", c, ok)
	}
	if a.ChildOfBatchShell(10, 9) || a.SameListInEveryVendorVar || a.OnePerNode(4) != nil {
		t.Error("a Slurm rule applied to a Flux job")
	}
}

func TestFluxUnevenAndMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   Env
		tasks []int
		warns int
	}{
		{"rule: tasks per node only for an even spread", Env{"FLUX_JOB_ID": "ƒx", "FLUX_JOB_SIZE": "7", "FLUX_JOB_NNODES": "2"}, nil, 0},
		{"rule: a malformed count is a warning, not a failure", Env{"FLUX_JOB_ID": "ƒx", "FLUX_JOB_SIZE": "many", "FLUX_JOB_NNODES": "2"}, nil, 1},
		{"rule: the batch script of flux batch has no task variables", Env{"FLUX_JOB_ID": "ƒx", "FLUX_URI": "local:///x"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, warn := Detect(tc.env)
			if a.Scheduler != "flux" || !reflect.DeepEqual(a.TasksPerNode, tc.tasks) || len(warn) != tc.warns {
				t.Fatalf("got %+v, warnings %q", a, warn)
			}
		})
	}
}

// Detect asks the innermost scheduler first: a `flux run` task of a Flux
// instance started under srun (`srun -N2 flux start …`) carries the Slurm
// job's and step's variables too, leaked from srun; its grant and its
// launch name are the Flux job's, else every `flux run` of the instance
// would share one rendezvous port.
func TestFluxInsideSlurmIsFlux(t *testing.T) {
	env := fluxRunTask()
	for k, v := range map[string]string{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_NODEID": "0", "SLURM_PROCID": "0",
		"SLURM_LOCALID": "0", "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_GPUS_ON_NODE": "0"} {
		env[k] = v
	}
	a, _ := Detect(env)
	if a.Scheduler != "flux" || a.JobID != "ƒ2Zqa8J7oT" || a.LaunchKey != "ƒ2Zqa8J7oT" {
		t.Fatalf("got %+v, want the Flux job's", a)
	}
}
