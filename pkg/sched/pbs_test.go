package sched

import (
	"reflect"
	"strings"
	"testing"
)

// palsRank is the environment of rank 5 of `mpiexec -n 8 --ppn 4 --depth 8
// app` in a PBS job on two nodes (Aurora): PBS's job variables, PALS's
// rank variables, and the PMI ones Cray PMI reads beside them.
func palsRank() Env {
	return Env{
		"PBS_JOBID": "12345.aurora-pbs-0001", "PBS_NODEFILE": "/var/spool/pbs/aux/12345.aurora-pbs-0001",
		"PBS_O_WORKDIR": "/home/u/run", "PBS_ENVIRONMENT": "PBS_BATCH",
		"PALS_RANKID": "5", "PALS_LOCAL_RANKID": "1", "PALS_LOCAL_SIZE": "4", "PALS_NODEID": "1", "PALS_DEPTH": "8",
		"PMI_RANK": "5", "PMI_SIZE": "8", "PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "4",
	}
}

func TestPBSMpiexecRank(t *testing.T) {
	env := palsRank()
	a, warn := Detect(env)
	want := Allocation{Scheduler: "pbs", JobID: "12345.aurora-pbs-0001", NodeID: 1, ProcID: 5, LocalID: 1, GPUsOnNode: -1, GPUsPerNode: -1}
	if len(warn) > 0 || !reflect.DeepEqual(a, want) {
		t.Fatalf("got %+v, warnings %q; want %+v", a, warn, want)
	}
	lr, ok, err := DetectLocalRank(env, a, maxRanks)
	if err != nil || !ok || lr != (LocalRank{Rank: 1, Size: 4, Source: "PALS_LOCAL_RANKID"}) {
		t.Errorf("local rank %+v %v %v, want 1 of 4 from PALS_LOCAL_RANKID", lr, ok, err)
	}
	g, ok, err := DetectGlobalRank(env, a)
	if err != nil || !ok || g.Rank != 5 || g.Size != 8 {
		t.Errorf("global rank %+v %v %v, want 5 of 8", g, ok, err)
	}
	if w := a.Words(); w != "PBS:       job 12345.aurora-pbs-0001, node 1 of the mpiexec launch, rank 5, local rank 1" {
		t.Errorf("info says %q", w)
	}
}

// What PBS cannot tell: no step (two mpiexec of a job look alike, so no
// launch key: the rendezvous port is not derived, a queue over nodes needs
// GPULAUNCH_RUN_ID), no node list in a variable, no GPU count.
func TestPBSCannotTell(t *testing.T) {
	env := palsRank()
	a, _ := Detect(env)
	if a.LaunchKey != "" || a.Nodes != nil || a.NodeCount != 0 || a.GPUsOnNode != -1 {
		t.Fatalf("got %+v, launch key %q", a, a.LaunchKey)
	}
	if _, err := QueueRunID(env, "PMI_RANK"); err == nil || !strings.Contains(err.Error(), "GPULAUNCH_RUN_ID") {
		t.Errorf("a queue over nodes under PBS: %v, want the GPULAUNCH_RUN_ID fix", err)
	}
	c, ok := a.UnsetGPUs(env, "ZE_AFFINITY_MASK", NodeGPUs{})
	if !ok || !strings.Contains(c.Reason, "PBS job 12345") {
		t.Errorf("unset ZE_AFFINITY_MASK: %+v", c)
	}
}

func TestPBSBatchScript(t *testing.T) {
	a, _ := Detect(Env{"PBS_JOBID": "77.pbs", "PBS_NODEFILE": "/var/spool/pbs/aux/77.pbs"})
	if a.Scheduler != "pbs" || a.NodeID != -1 || a.Words() != "PBS:       job 77.pbs, no mpiexec rank (batch script or interactive shell)" {
		t.Fatalf("got %+v: %q", a, a.Words())
	}
	if _, ok, _ := DetectLocalRank(Env{"PBS_JOBID": "77.pbs"}, a, maxRanks); ok {
		t.Error("a local rank outside mpiexec")
	}
}
