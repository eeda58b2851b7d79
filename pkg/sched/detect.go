package sched

// schedulers are the batch systems gpulaunch reads, in the order Detect
// asks them: the innermost first. A Flux instance started inside a Slurm
// allocation (`flux start` under srun, as LLNL runs Flux on Slurm
// clusters) runs its jobs with the Slurm job's variables leaked into
// them: there the live grant is the Flux job's (FLUX_JOB_ID is set only
// inside one), and taking the outer Slurm job's would give every `flux
// run` of the instance the same launch name, and so the same rendezvous
// port. Nothing starts Slurm or Flux jobs inside a PBS job's mpiexec, so
// PBS comes before Slurm too. Adding a scheduler is its file and a line
// here.
var schedulers = []Scheduler{
	flux{},
	pbs{},
	slurm{},
}

// Detect reads the allocation of the first scheduler whose job env is;
// outside any job, None. Malformed optional variables are warnings, since
// a job must not fail over a variable that gpulaunch only cross-checks.
func Detect(env Env) (Allocation, []string) {
	for _, s := range schedulers {
		if a, warn, ok := s.Read(env); ok {
			a.Scheduler = s.Name()
			return a, warn
		}
	}
	return None(), nil
}

// none is no scheduler: a workstation, a container, a login node.
type none struct{ noRules }

func (none) Name() string                          { return "" }
func (none) Read(Env) (Allocation, []string, bool) { return None(), nil, true }

// Words keeps the line `info` has always printed outside a job.
func (none) Words(Allocation) string { return "Slurm:     not in a Slurm job" }
