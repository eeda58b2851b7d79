package launcher

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reaper owns every wait4 of this process. gpulaunch is a child
// subreaper, so orphaned grandchildren (an instance's daemon) become its
// children; a blind wait4(-1) would then race any other waiter and steal
// exit statuses. Here the registry maps each started pid to the function
// that takes its status, and start holds the lock across fork and
// registration, so even a child that exits at once is not missed.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]func(pid int, ws syscall.WaitStatus)
	forked  chan struct{} // a child exists now: waiting for one can block
	done    chan struct{}
}

func newReaper() *reaper {
	r := &reaper{waiting: map[int]func(int, syscall.WaitStatus){}, forked: make(chan struct{}, 1), done: make(chan struct{})}
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	go r.loop()
	return r
}

// loop waits for children in a blocking waitid, woken by the kernel the
// moment one exits: a task queue starts the next task that much sooner
// than through SIGCHLD, Go's signal goroutine and a channel. WNOWAIT
// leaves the child for reap, which takes the lock, so that an exit is
// never collected between a fork and its registration.
func (r *reaper) loop() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		select {
		case <-r.done:
			// The run is over and its processes reaped; what is left is
			// not this reaper's to collect.
			return
		default:
		}
		switch err {
		case nil:
			r.reap()
		case unix.ECHILD:
			select {
			case <-r.forked:
			case <-r.done:
				return
			}
		case unix.EINTR:
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// reap collects every exited child and hands each registered one's
// status to its function, outside the lock: that function may block, and
// must not hold up the next fork.
func (r *reaper) reap() {
	type exit struct {
		pid    int
		ws     syscall.WaitStatus
		exited func(int, syscall.WaitStatus)
	}
	var exits []exit
	r.mu.Lock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			break
		}
		// an unregistered pid is an orphan the subreaper inherited
		if exited, ok := r.waiting[pid]; ok {
			exits = append(exits, exit{pid, ws, exited})
			delete(r.waiting, pid)
		}
	}
	r.mu.Unlock()
	for _, e := range exits {
		e.exited(e.pid, e.ws)
	}
}

// start forks through fork and registers the pid before any reap can
// run; exited receives its status.
func (r *reaper) start(fork func() (int, error), exited func(pid int, ws syscall.WaitStatus)) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, err
	}
	r.waiting[pid] = exited
	select {
	case r.forked <- struct{}{}:
	default:
	}
	return pid, nil
}

func (r *reaper) stop() { close(r.done) }

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
