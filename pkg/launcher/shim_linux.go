package launcher

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// shimArg marks a gpulaunch process started as an instance's shim:
//
//	gpulaunch __gpulaunch_shim CPUS POLICY NODES PARENT PATH ARGV0 ARGS…
//
// CPUS and NODES are lists ("-" for none), POLICY a binding.MemPolicy,
// PARENT the supervisor's pid.
const shimArg = "__gpulaunch_shim"

// MaybeShim runs the shim and never returns when this process was started
// as one. main (and TestMain) call it first, before anything else runs.
func MaybeShim() {
	if len(os.Args) > 1 && os.Args[1] == shimArg {
		os.Exit(shimMain(os.Args[2:]))
	}
}

func shimArgs(self string, b Binding, parent int, path string, argv []string) []string {
	dash := func(s cpuset.Set) string {
		if s.IsEmpty() {
			return "-"
		}
		return s.String()
	}
	policy := b.MemPolicy
	if policy == "" {
		policy = binding.MemNone
	}
	return append([]string{self, shimArg, dash(b.CPUs), string(policy), dash(b.MemNodes), strconv.Itoa(parent), path}, argv...)
}

// shimMain binds its own thread and execve's the app. CPU affinity and
// memory policy are per-thread and survive execve, so the app starts
// bound from its first instruction: no window in which its threads run
// elsewhere, as there is with sched_setaffinity(pid) after start.
func shimMain(args []string) int {
	runtime.LockOSThread() // the attributes below belong to this thread, which execs
	if len(args) < 6 {
		fmt.Fprintln(os.Stderr, "gpulaunch: error: the shim was started without its arguments")
		return 1
	}
	cpuList, policy, nodeList, parentS, path, argv := args[0], args[1], args[2], args[3], args[4], args[5:]
	// The parent-death signal was set before exec; if the supervisor died
	// before that, nothing will ever signal this process, so stop now.
	if parent, err := strconv.Atoi(parentS); err != nil || os.Getppid() != parent {
		return 1
	}
	if cpuList != "-" {
		cpus, err := cpuset.Parse(cpuList)
		if err != nil {
			return shimFail("CPU list %q: %v", cpuList, err)
		}
		mask := unix.NewCPUSet(cpus.List()[cpus.Size()-1] + 1)
		for _, c := range cpus.List() {
			mask.Set(c)
		}
		if err := unix.SchedSetaffinityDynamic(0, mask); err != nil {
			return shimFail("binding to CPUs %s: %v", cpus, err)
		}
	}
	if nodeList != "-" && binding.MemPolicy(policy) != binding.MemNone {
		nodes, err := cpuset.Parse(nodeList)
		if err != nil {
			return shimFail("memory node list %q: %v", nodeList, err)
		}
		mode := unix.MPOL_PREFERRED
		if binding.MemPolicy(policy) == binding.MemBind {
			mode = unix.MPOL_BIND
		}
		mask := unix.NewCPUSet(max(nodes.List()[nodes.Size()-1]+1, 64))
		for _, n := range nodes.List() {
			mask.Set(n)
		}
		if err := unix.SetMemPolicyDynamic(mode, mask); err != nil {
			return shimFail("memory policy %s on NUMA node(s) %s: %v", policy, nodes, err)
		}
	}
	err := syscall.Exec(path, argv, os.Environ())
	code := 126
	if os.IsNotExist(err) {
		code = 127
	}
	fmt.Fprintf(os.Stderr, "gpulaunch: error: cannot execute %s: %v\n", path, err)
	return code
}

func shimFail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "gpulaunch: error: "+format+"\n", args...)
	return 1
}
