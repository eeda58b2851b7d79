package process

import (
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// Thread starts the processes of one slot already bound, and follows
// them to their end. CPU affinity and memory policy are attributes of a
// thread, inherited by a process it forks and kept across execve; so a
// goroutine locks an OS thread of its own, binds that thread to the slot,
// and forks the slot's processes from it. The app is bound from its first
// instruction: never sched_setaffinity(pid) after start, when its threads
// may already run elsewhere.
//
// The same thread then watches the process it forked: it blocks in one
// poll on the process's pidfd and its output pipes, copies output as it
// comes, and hands the exit to the run there and then; when the run
// answers by starting the slot's next task, that fork happens on this
// thread too. An exit and the next start thus cost one wake-up of one
// thread, as in a C launcher's wait-and-spawn loop. Each hand-off between
// threads on that path cost a task queue dearly (`make bench`): a reaper
// woken by the exit passing it to the slot, a third of the throughput;
// two reader goroutines per task, parked on Go's poller, another
// quarter.
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
type Thread struct {
	reqs  chan startRequest
	ready chan struct{} // closed once the thread is bound, or failed to be
	err   error         // binding the thread failed: nothing can start (read after ready)
	r     *Reaper
	// leftovers copies the output streams that outlive their process,
	// in the run's group, so that the run ends only when they have.
	leftovers *errgroup.Group
	// exited is told, on the slot's thread, that its process ended. It
	// may start the slot's next process with fork, on this thread, and
	// returns it, or nil when the slot is idle now.
	exited func(pid int, end Reaped, fork SpawnFunc) *Process
	poll   []unix.PollFd
}

// Spawn is one process to start: what syscall.ForkExec takes, and the
// output streams it writes to.
type Spawn struct {
	Path    string
	Argv    []string
	Attr    *syscall.ProcAttr
	Streams []*Stream
}

// Process is a started Spawn, as its slot thread follows it.
type Process struct {
	PID     int
	pidfd   int // -1: none; the streams have goroutines of their own
	streams []*Stream
}

// SpawnFunc starts a Spawn; only a slot's own thread has one.
type SpawnFunc func(l Spawn) (*Process, error)

// startRequest asks an idle slot thread to start its next process: do
// forks it and returns it, or nil when it started none.
type startRequest struct {
	do   func(fork SpawnFunc) *Process
	done chan struct{}
}

// NewThread makes a slot's thread and binds it, without waiting for
// either (Bound waits): a run makes all its slots' threads at once.
func NewThread(r *Reaper, b Binding, leftovers *errgroup.Group, exited func(pid int, end Reaped, fork SpawnFunc) *Process) *Thread {
	t := &Thread{reqs: make(chan startRequest), ready: make(chan struct{}), r: r, leftovers: leftovers, exited: exited}
	go func() {
		runtime.LockOSThread()
		t.err = bindThread(b)
		close(t.ready)
		if t.err != nil {
			return
		}
		for req := range t.reqs {
			p := req.do(t.fork)
			close(req.done)
			for p != nil {
				p = t.exited(p.PID, t.follow(p), t.fork)
			}
		}
	}()
	return t
}

// Bound waits until the thread is made and bound, and says whether
// binding it failed.
func (t *Thread) Bound() error {
	<-t.ready
	return t.err
}

// fork starts l; only the slot's own goroutine calls it. Without a
// pidfd (Linux before 5.3), each output stream gets a goroutine and the
// thread waits for the exit alone.
func (t *Thread) fork(l Spawn) (*Process, error) {
	pidfd := -1
	if pidfdWorks() {
		l.Attr.Sys.PidFD = &pidfd
	}
	pid, err := t.r.fork(func() (int, error) { return syscall.ForkExec(l.Path, l.Argv, l.Attr) })
	if err != nil {
		return nil, err
	}
	if pidfd < 0 {
		for _, s := range l.Streams {
			t.leftovers.Go(s.copyRest)
		}
		return &Process{PID: pid, pidfd: -1}, nil
	}
	return &Process{PID: pid, pidfd: pidfd, streams: l.Streams}, nil
}

// watch follows p until it exits, copying its output meanwhile, and
// reaps it.
func (t *Thread) follow(p *Process) Reaped {
	if p.pidfd < 0 {
		return t.r.wait(p.PID)
	}
	open := p.streams
	for {
		t.poll = append(t.poll[:0], unix.PollFd{Fd: int32(p.pidfd), Events: unix.POLLIN})
		for _, s := range open {
			t.poll = append(t.poll, unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN})
		}
		if _, err := unix.Poll(t.poll, holdTimeout(open)); err == unix.EINTR {
			continue
		} else if err != nil {
			break // cannot happen with these arguments; the wait below still reaps
		}
		var left []*Stream
		for k, s := range open {
			switch ev := t.poll[k+1].Revents; {
			case ev == 0:
				s.copier.letGoIfPaused(time.Now())
				left = append(left, s)
			case ev&unix.POLLIN == 0 && ev&(unix.POLLHUP|unix.POLLERR) != 0:
				s.end() // empty, and no writer left: its end, without a read
			case s.readMore():
				left = append(left, s)
			}
		}
		open = left
		if t.poll[0].Revents != 0 {
			break
		}
	}
	// Everything the process wrote is in its pipes now. A pipe that
	// does not reach its end is still held by a process it left behind:
	// that stream goes on in a goroutine, and the slot does not wait.
	for _, s := range open {
		if !s.drain() {
			s.copier.detach()
			t.leftovers.Go(s.copyRest)
		}
	}
	_ = unix.Close(p.pidfd)
	return t.r.wait(p.PID)
}

// holdTimeout is poll's timeout for a process's open streams: none, or
// holdPause while one holds a long line, so that the line is let go
// (letGoIfPaused) even if nothing else wakes the thread.
func holdTimeout(open []*Stream) int {
	for _, s := range open {
		if s.copier.holding {
			return int(holdPause / time.Millisecond)
		}
	}
	return -1
}

// Start runs do on the slot's thread, which must be idle (the slot has no
// process), and returns once do has; the process do starts is then
// followed there, and its exit goes to exited.
func (t *Thread) Start(do func(fork SpawnFunc) *Process) error {
	done, err := t.Begin(do)
	if err != nil {
		return err
	}
	<-done
	return nil
}

// Begin is Start without the wait: it hands do to the bound, idle thread
// and returns a channel closed once do has returned, so that a run starts
// all its slots at once. Each fork blocks its own thread until the child
// has exec'd (CLONE_VFORK); one slot after the other, a run of 16
// instances paid 16 thread creations and 16 execs in a row.
func (t *Thread) Begin(do func(fork SpawnFunc) *Process) (<-chan struct{}, error) {
	if err := t.Bound(); err != nil {
		return nil, err
	}
	req := startRequest{do, make(chan struct{})}
	t.reqs <- req
	return req.done, nil
}

// close ends the thread once the slot has no process left.
func (t *Thread) Close() {
	if t.Bound() == nil {
		close(t.reqs)
	}
}

// pidfdWorks says whether this kernel hands out pidfds (Linux 5.3).
func pidfdWorks() bool { return !NoPidfd && KernelPidfd() }

// KernelPidfd says whether the kernel hands out pidfds, asked once.
var KernelPidfd = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
})

// NoPidfd makes gpulaunch take the path of kernels without pidfds, for
// the tests of that path on a kernel with them (pkg/launcher's
// TestSlotCopiesOutputWithAndWithoutPidfd). Set it only while no slot
// thread forks.
var NoPidfd bool
