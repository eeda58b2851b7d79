package sched

import (
	"fmt"
	"strconv"
	"strings"
)

// pbs is PBS Professional with HPE Cray PALS, whose mpiexec starts the
// ranks (ALCF's Aurora and Polaris: docs.alcf.anl.gov/aurora/running-jobs-aurora
// and docs.alcf.anl.gov/polaris/running-jobs). The job's variables are PBS's
// (PBS Professional Reference Guide, "PBS Environment Variables"):
//
//	PBS_JOBID     the job's id, e.g. 12345.aurora-pbs-0001
//	PBS_NODEFILE  a file naming the job's hosts, one line per chunk
//
// and every rank mpiexec starts (mpiexec -n 8 --ppn 4 --depth 8) has
// PALS's:
//
//	PALS_RANKID        the rank among all ranks (from 0)
//	PALS_LOCAL_RANKID  the rank on this node (from 0)
//	PALS_LOCAL_SIZE    the ranks on this node (--ppn)
//	PALS_NODEID        this node's index among the launch's nodes
//	PALS_DEPTH         the CPUs each rank was given (--depth)
//
// The launch's size is PMI_SIZE, which Cray PMI sets beside PALS's
// variables (PMI_RANK is read first, as for any PMI launcher), or
// PALS_SIZE where a site sets it. PBS says no count of
// GPUs and no node list in a variable (only the file PBS_NODEFILE, which
// gpulaunch does not read), and there is no step id: two mpiexec of one
// job look alike (docs/schedulers.md).
type pbs struct{ noRules }

func (pbs) Name() string { return "pbs" }

func (pbs) Read(env Env) (Allocation, []string, bool) {
	a := Allocation{JobID: env["PBS_JOBID"], NodeID: -1, GPUsOnNode: -1, GPUsPerNode: -1}
	if a.JobID == "" {
		return Allocation{}, nil, false
	}
	var warn []string
	count := func(name string, dst *int) {
		v, ok := env[name]
		if !ok {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			warn = append(warn, fmt.Sprintf("ignoring %s=%q: not a count", name, v))
			return
		}
		*dst = n
	}
	count("PALS_NODEID", &a.NodeID)
	count("PALS_RANKID", &a.ProcID)
	count("PALS_LOCAL_RANKID", &a.LocalID)
	return a, warn, true
}

// palsLocalRank and palsGlobalRank are PALS mpiexec's rank variables
// (DetectLocalRank, DetectGlobalRank).
var (
	palsLocalRank  = rankVars{rank: "PALS_LOCAL_RANKID", size: "PALS_LOCAL_SIZE"}
	palsGlobalRank = rankVars{rank: "PALS_RANKID", size: "PALS_SIZE"}
)

// UnsetGPUs: PBS tells a job's GPUs only through the vendor's variable
// (its cgroup hook, or the site's affinity script under mpiexec); unset,
// the rule outside a job applies: every GPU this process can open.
func (pbs) UnsetGPUs(a Allocation, _ Env, told string, n NodeGPUs) (GPUChoice, bool) {
	return GPUChoice{GPUs: n.Openable, Reason: told + " unset in PBS job " + a.JobID + " (PBS names a job's GPUs only in it): every GPU this process can open"}, true
}

func (pbs) Words(a Allocation) string {
	if a.NodeID < 0 {
		return "PBS:       job " + a.JobID + ", no mpiexec rank (batch script or interactive shell)"
	}
	return fmt.Sprintf("PBS:       job %s, node %d of the mpiexec launch, rank %d, local rank %d", a.JobID, a.NodeID, a.ProcID, a.LocalID)
}
