package launcher

import (
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reaper owns every wait4 of this process. gpulaunch is a child
// subreaper, so orphaned grandchildren (an instance's daemon) become its
// children; a blind wait4(-1) would then race any other waiter and steal
// exit statuses. Here the registry maps each started pid to the channel
// that receives its status, and start holds the lock across fork and
// registration, so even a child that exits at once is not missed.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan syscall.WaitStatus
	orphans int // reaped processes that were not instances
	sigchld chan os.Signal
	done    chan struct{}
}

func newReaper() *reaper {
	r := &reaper{waiting: map[int]chan syscall.WaitStatus{}, sigchld: make(chan os.Signal, 1), done: make(chan struct{})}
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	signal.Notify(r.sigchld, syscall.SIGCHLD)
	go r.loop()
	return r
}

func (r *reaper) loop() {
	// The tick catches a SIGCHLD lost to coalescing between two reaps.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-r.sigchld:
		case <-tick.C:
		}
		r.reap()
	}
}

func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		if ch, ok := r.waiting[pid]; ok {
			ch <- ws
			delete(r.waiting, pid)
		} else {
			r.orphans++
		}
	}
}

// start forks through fork and registers the pid before any reap can run.
func (r *reaper) start(fork func() (int, error)) (int, <-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.waiting[pid] = ch
	return pid, ch, nil
}

func (r *reaper) stop() {
	signal.Stop(r.sigchld)
	close(r.done)
}

// endDescendants ends whatever is left below this process once every
// instance has exited — daemons, double-forked and setsid'd grandchildren
// that the subreaper inherited: TERM, up to grace, then KILL, then reap.
// It returns how many it found.
func (r *reaper) endDescendants(grace time.Duration) int {
	left := descendants(os.Getpid())
	if len(left) == 0 {
		return 0
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && len(descendants(os.Getpid())) > 0 {
		r.reap()
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
		r.reap()
		time.Sleep(10 * time.Millisecond)
	}
	r.reap()
	return len(left)
}

// descendants lists the living processes below root.
func descendants(root int) []int {
	t := scanProcs()
	return t.tree(root).descendants(&t)
}

// clockTicks is USER_HZ, 100 on every Linux ABI gpulaunch runs on.
const clockTicks = 100

func unixSignalName(s syscall.Signal) string { return strings.TrimPrefix(unix.SignalName(s), "SIG") }
