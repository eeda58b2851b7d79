package sched

// schedulers are the batch systems gpulaunch reads, in the order Detect
// asks them. Slurm is asked first: a Flux instance or a PBS job started
// inside a Slurm allocation (flux start under srun) is still that Slurm
// job's, and Slurm's variables leak into it. Adding a scheduler is its
// file and a line here.
var schedulers = []Scheduler{
	slurm{},
	flux{},
	pbs{},
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
