package launcher

import (
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
)

// slotThread starts the processes of one slot already bound, and waits
// for them. CPU affinity and memory policy are attributes of a thread,
// inherited by a process it forks and kept across execve; so a goroutine
// locks an OS thread of its own, binds that thread to the slot, and forks
// the slot's processes from it. The app is bound from its first
// instruction: never sched_setaffinity(pid) after start, when its threads
// may already run elsewhere.
//
// The same thread waits for the process it forked, and hands its exit to
// the run there and then; when the run answers by starting the slot's
// next task, that fork happens on this thread too. An exit and the next
// start thus cost one wake-up of one thread, as in a C launcher's
// wait-and-spawn loop: each hand-off between threads on that path (a
// reaper, the supervisor, back to the slot) cost a task queue a third of
// its throughput (`make bench`).
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
	reqs chan startRequest
	err  error // binding the thread failed: nothing can start
	r    *reaper
	// exited is told, on the slot's thread, that its process ended. It
	// may start the slot's next process with fork, on this thread, and
	// returns that process's pid, or 0 when the slot is idle now.
	exited func(pid int, ws syscall.WaitStatus, fork forkFunc) int
}

// launch is one process to start: what syscall.ForkExec takes.
type launch struct {
	path string
	argv []string
	attr *syscall.ProcAttr
}

// forkFunc starts a launch; only a slot's own thread has one.
type forkFunc func(l launch) (int, error)

// startRequest asks an idle slot thread to start its next process: do
// forks it and returns its pid, or 0 when it started none.
type startRequest struct {
	do   func(fork forkFunc) int
	done chan struct{}
}

func newSlotThread(r *reaper, b Binding, exited func(pid int, ws syscall.WaitStatus, fork forkFunc) int) *slotThread {
	t := &slotThread{reqs: make(chan startRequest), r: r, exited: exited}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		t.err = bindThread(b)
		close(ready)
		if t.err != nil {
			return
		}
		for req := range t.reqs {
			pid := req.do(t.fork)
			close(req.done)
			for pid > 0 {
				pid = t.exited(pid, t.r.wait(pid), t.fork)
			}
		}
	}()
	<-ready
	return t
}

// fork starts l; only the slot's own goroutine calls it.
func (t *slotThread) fork(l launch) (int, error) {
	return t.r.fork(func() (int, error) { return syscall.ForkExec(l.path, l.argv, l.attr) })
}

// start runs do on the slot's thread, which must be idle (the slot has no
// process), and returns once do has; the process do starts is then
// waited for there, and its exit goes to exited.
func (t *slotThread) start(do func(fork forkFunc) int) error {
	if t.err != nil {
		return t.err
	}
	req := startRequest{do, make(chan struct{})}
	t.reqs <- req
	<-req.done
	return nil
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
