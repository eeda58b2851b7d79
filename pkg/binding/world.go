package binding

import (
	"io/fs"

	"github.com/gpulaunch/gpulaunch/pkg/cgroup"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// ReadWorld gathers a World from a machine's filesystem root (os.DirFS("/")
// in production): the CPU layout from sysfs, the affinity and allowed memory
// nodes from /proc/self/status (which mirror sched_getaffinity and the
// cpuset's mems for this process), and the cgroup limits.
//
// A node that describes its own CPUs (simulated or from a topology file) is
// another machine: this machine's layout, affinity and cgroup do not apply
// to it, and only the environment is carried over, so that a user can ask
// "what would my plan be there with these Slurm variables".
func ReadWorld(root fs.FS, node gpu.Node, env sched.Env, hostname string) (World, error) {
	w := World{Node: node, Env: env, Hostname: hostname}
	if node.CPUs != nil {
		// the CPUs a job there may run on: all but the system's own
		w.Topology = NewTopology(node.CPUs)
		w.Affinity = w.Topology.CPUs().Difference(node.ReservedCPUs)
		return w, nil
	}
	topo, err := ReadTopology(root)
	if err != nil {
		return World{}, err
	}
	w.Topology = topo
	if status, err := fs.ReadFile(root, "proc/self/status"); err == nil {
		w.Affinity, w.MemsAllowed, err = cgroup.ParseProcStatus(string(status))
		if err != nil {
			return World{}, err
		}
	}
	w.Affinity = withoutReserved(w.Affinity, w.Topology, node.ReservedCPUs)
	self, err1 := fs.ReadFile(root, "proc/self/cgroup")
	mounts, err2 := fs.ReadFile(root, "proc/self/mountinfo")
	if err1 == nil && err2 == nil {
		if w.Cgroup, err = cgroup.Read(root, string(self), string(mounts)); err != nil {
			return World{}, err
		}
	}
	return w, nil
}

// withoutReserved takes the CPUs a node file says the system keeps
// (reserved_cpus) out of this machine's affinity, unless nothing would be
// left: the file describes the node, the affinity is what this process
// got, and a process bound to reserved CPUs only still has to run.
func withoutReserved(affinity cpuset.Set, topo Topology, reserved cpuset.Set) cpuset.Set {
	if reserved.IsEmpty() {
		return affinity
	}
	if affinity.IsEmpty() {
		affinity = topo.CPUs()
	}
	if rest := affinity.Difference(reserved); !rest.IsEmpty() {
		return rest
	}
	return affinity
}

// Bindable reports whether this process may run on every CPU the plan
// uses (its /proc status read under root): then a simulated or described
// node's binding can really be applied.
func Bindable(root fs.FS, plan Plan) bool {
	status, err := fs.ReadFile(root, "proc/self/status")
	if err != nil {
		return false
	}
	mine, _, err := cgroup.ParseProcStatus(string(status))
	if err != nil {
		return false
	}
	for _, s := range plan.Slots {
		if !s.CPUs.IsSubsetOf(mine) {
			return false
		}
	}
	return true
}
