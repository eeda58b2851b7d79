package launcher

import (
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
)

// startBound starts the app already bound. CPU affinity and memory policy
// are attributes of a thread, inherited by a process it forks and kept
// across execve; so a goroutine locks an OS thread of its own, binds that
// thread to the instance's slot, and forks the app from it. The app is
// bound from its first instruction: never sched_setaffinity(pid) after
// start, when its threads may already run elsewhere.
//
// The thread is never unlocked: it carries the instance's binding, and it
// must outlive the instance, because the parent-death signal fires when
// the forking thread exits (golang/go#27505). It waits for the instance's
// exit status; then its goroutine returns and Go ends the thread.
//
// This replaces a re-exec shim (gpulaunch re-running itself to bind, then
// execve'ing the app): same guarantees, one exec per instance instead of
// two, which `make bench` measured as the launch cost that mattered.
func startBound(r *reaper, b Binding, path string, argv []string, attr *syscall.ProcAttr) (int, <-chan syscall.WaitStatus, error) {
	type started struct {
		pid    int
		status <-chan syscall.WaitStatus
		err    error
	}
	res := make(chan started, 1)
	out := make(chan syscall.WaitStatus, 1)
	go func() {
		runtime.LockOSThread()
		if err := bindThread(b); err != nil {
			res <- started{err: err}
			return
		}
		pid, status, err := r.start(func() (int, error) { return syscall.ForkExec(path, argv, attr) })
		res <- started{pid: pid, status: status, err: err}
		if err == nil {
			out <- <-status
		}
	}()
	s := <-res
	return s.pid, out, s.err
}

// bindThread applies a slot's CPU affinity and memory policy to the
// calling thread.
func bindThread(b Binding) error {
	if !b.CPUs.IsEmpty() {
		ids := b.CPUs.List()
		mask := unix.NewCPUSet(ids[len(ids)-1] + 1)
		for _, c := range ids {
			mask.Set(c)
		}
		if err := unix.SchedSetaffinityDynamic(0, mask); err != nil {
			return fmt.Errorf("binding to CPUs %s: %w", b.CPUs, err)
		}
	}
	if b.MemNodes.IsEmpty() || b.MemPolicy == binding.MemNone || b.MemPolicy == "" {
		return nil
	}
	mode := unix.MPOL_PREFERRED
	if b.MemPolicy == binding.MemBind {
		mode = unix.MPOL_BIND
	}
	nodes := b.MemNodes.List()
	mask := unix.NewCPUSet(max(nodes[len(nodes)-1]+1, 64))
	for _, n := range nodes {
		mask.Set(n)
	}
	if err := unix.SetMemPolicyDynamic(mode, mask); err != nil {
		return fmt.Errorf("memory policy %s on NUMA node(s) %s: %w", b.MemPolicy, b.MemNodes, err)
	}
	return nil
}
