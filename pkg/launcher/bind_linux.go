package launcher

import (
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
)

// slotThread starts the processes of one slot already bound. CPU
// affinity and memory policy are attributes of a thread, inherited by a
// process it forks and kept across execve; so a goroutine locks an OS
// thread of its own, binds that thread to the slot, and forks the slot's
// processes from it. The app is bound from its first instruction: never
// sched_setaffinity(pid) after start, when its threads may already run
// elsewhere.
//
// The thread is never unlocked: it carries the slot's binding, and it
// must outlive the slot's processes, because the parent-death signal
// fires when the forking thread exits (golang/go#27505). It lives until
// the slot is done; then its goroutine returns and Go ends the thread.
// One thread per slot, not per process: a task queue starts thousands of
// tasks on a slot, and a thread created and bound for each cost a fifth
// of the queue's throughput.
//
// This replaces a re-exec shim (gpulaunch re-running itself to bind, then
// execve'ing the app): same guarantees, one exec per instance instead of
// two, which `make bench` measured as the launch cost that mattered.
type slotThread struct {
	reqs chan forkRequest
	err  error // binding the thread failed: nothing can start
}

type forkRequest struct {
	path   string
	argv   []string
	attr   *syscall.ProcAttr
	exited func(pid int, ws syscall.WaitStatus)
	res    chan forkResult
}

type forkResult struct {
	pid int
	err error
}

func newSlotThread(r *reaper, b Binding) *slotThread {
	t := &slotThread{reqs: make(chan forkRequest)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		t.err = bindThread(b)
		close(ready)
		if t.err != nil {
			return
		}
		for req := range t.reqs {
			pid, err := r.start(func() (int, error) { return syscall.ForkExec(req.path, req.argv, req.attr) }, req.exited)
			req.res <- forkResult{pid, err}
		}
	}()
	<-ready
	return t
}

// start forks path from the slot's thread; exited receives its status.
func (t *slotThread) start(path string, argv []string, attr *syscall.ProcAttr, exited func(pid int, ws syscall.WaitStatus)) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	res := make(chan forkResult, 1)
	t.reqs <- forkRequest{path, argv, attr, exited, res}
	out := <-res
	return out.pid, out.err
}

// close ends the thread once the slot has no process left.
func (t *slotThread) close() {
	if t.err == nil {
		close(t.reqs)
	}
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
