package process

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper keeps the children of gpulaunch apart. gpulaunch is a child
// subreaper, so orphaned grandchildren (an instance's daemon) become its
// children too; a blind wait4(-1) would then race the waiters of its own
// processes and steal their statuses.
//
// Each instance or task is followed and Reaped by the slot thread that
// forked it (Thread), by its pid: the kernel wakes that thread the
// moment the child exits, and the thread starts the slot's next task at
// once, as the simplest C launcher does. A reaper goroutine woken by
// every exit, handing it on to the slot, cost a third of a task queue's
// throughput (`make bench`). Orphans are left to sweep, which reaps only
// pids that no slot owns; fork registers a pid before any sweep can look,
// so even a child that exits at once is never taken from its slot.
type Reaper struct {
	// sweeping is held for reading across each fork and its
	// registration, so that slots fork at the same time, and for writing
	// by a sweep.
	sweeping sync.RWMutex
	mu       sync.Mutex // guards owned
	owned    map[int]bool
	// subreaper: the kernel made this process a child subreaper, so every
	// living descendant is a child of it or below one.
	subreaper bool
}

// sweepEvery is how often orphans' zombies are collected while a run goes
// on: they hold nothing but a pid.
const sweepEvery = time.Second

// NewReaper makes gpulaunch a child subreaper: orphans below it become
// its children instead of init's, so that it can end them at the end.
func NewReaper() *Reaper {
	err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	return &Reaper{owned: map[int]bool{}, subreaper: err == nil}
}

// sweepUntil reaps orphans every sweepEvery until ctx ends.
func (r *Reaper) SweepUntil(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.sweep()
		case <-ctx.Done():
			return
		}
	}
}

// fork runs fork and registers the pid before any sweep can see it; the
// caller then waits for it with wait.
func (r *Reaper) fork(fork func() (int, error)) (int, error) {
	r.sweeping.RLock()
	defer r.sweeping.RUnlock()
	pid, err := fork()
	if err == nil {
		r.mu.Lock()
		r.owned[pid] = true
		r.mu.Unlock()
	}
	return pid, err
}

// wait blocks until the child pid, from fork, exits, and reaps it.
func (r *Reaper) wait(pid int) Reaped {
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err := syscall.Wait4(pid, &ws, 0, &ru)
		if err != syscall.EINTR {
			break
		}
	}
	// only now: until it is Reaped, a sweep must still see it as owned
	r.mu.Lock()
	delete(r.owned, pid)
	r.mu.Unlock()
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	// ru_maxrss is in KiB on Linux (getrusage(2))
	return Reaped{Status: ws, CPU: seconds(ru.Utime) + seconds(ru.Stime), MaxRSS: uint64(ru.Maxrss) << 10}
}

// sweep reaps the zombies of orphans. It looks at the first zombie child
// without reaping it (WNOWAIT) and reaps it only when no slot owns it;
// one that a slot owns is about to be Reaped by that slot, and the next
// sweep looks past it.
func (r *Reaper) sweep() {
	r.sweeping.Lock()
	defer r.sweeping.Unlock()
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
			return
		}
		pid := siginfoPID(&info)
		r.mu.Lock()
		owned := r.owned[pid]
		r.mu.Unlock()
		if pid <= 0 || owned {
			return
		}
		var ws syscall.WaitStatus
		if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got != pid {
			return
		}
	}
}

// siginfoPID is si_pid of a SIGCHLD siginfo: after si_signo, si_errno,
// si_code and the padding that aligns the union, on every Linux ABI.
func siginfoPID(info *unix.Siginfo) int {
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), 16)))
}

// reapAll collects every exited child, owned or not: for the end of a
// run, when no slot waits any more.
func (r *Reaper) reapAll() {
	r.sweeping.Lock()
	defer r.sweeping.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// endDescendants ends whatever is left below this process once every
// instance has exited — daemons, double-forked and setsid'd grandchildren
// that the subreaper inherited: TERM, up to grace, then KILL, then reap.
// It returns how many it found. spare are processes gpulaunch runs for the
// run and ends itself afterwards (its MPS daemons): they and what they
// started are left alone.
func (r *Reaper) EndDescendants(grace time.Duration, spare ...int) int {
	r.reapAll()
	if r.subreaper && noChildren() {
		// An orphan below a subreaper becomes its child as its parent
		// exits, before that parent can be reaped: with no child left,
		// nothing is left below. This skips a scan of every process of
		// the node (/proc/*/stat) at the end of every run; in a Slurm job
		// it came after the last instance's exit, and cost more the more
		// processes the node runs.
		return 0
	}
	descendants := func(root int) []int { return descendantsSparing(root, spare) }
	left := descendants(os.Getpid())
	if len(left) == 0 {
		return 0
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && len(descendants(os.Getpid())) > 0 {
		r.reapAll()
		time.Sleep(20 * time.Millisecond)
	}
	for {
		rest := descendants(os.Getpid())
		if len(rest) == 0 {
			break
		}
		for _, pid := range rest {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		r.reapAll()
		time.Sleep(10 * time.Millisecond)
	}
	r.reapAll()
	return len(left)
}

// noChildren: this process has no child, living or exited.
func noChildren() bool {
	var info unix.Siginfo
	return unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) == unix.ECHILD
}

// descendantsSparing lists the living processes below root, less spare
// and their own descendants.
func descendantsSparing(root int, spare []int) []int {
	t := ScanProcs()
	all := t.Tree(root).Descendants(&t)
	if len(spare) == 0 {
		return all
	}
	skip := map[int]bool{}
	for _, pid := range spare {
		skip[pid] = true
		for _, d := range t.Tree(pid).Descendants(&t) {
			skip[d] = true
		}
	}
	var left []int
	for _, pid := range all {
		if !skip[pid] {
			left = append(left, pid)
		}
	}
	return left
}

// clockTicks is USER_HZ, 100 on every Linux ABI gpulaunch runs on.
const clockTicks = 100

// Reaped is a child's end as wait4 reports it: its status, and the
// kernel's own account of its resources — its CPU time and peak resident
// memory, its Reaped children's included. They are exact where samples
// are not: a process that ends between two samples was never sampled.
type Reaped struct {
	Status syscall.WaitStatus
	CPU    float64 // user + system CPU time, seconds
	MaxRSS uint64  // peak resident set, bytes
}
