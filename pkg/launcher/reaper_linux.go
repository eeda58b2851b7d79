package launcher

import (
	"os"
	"os/signal"
	"strconv"
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

// procEntry is one process as /proc/<pid>/stat shows it.
type procEntry struct {
	pid, ppid int
	rssPages  int64
	zombie    bool
	// ticks is the process's own CPU time (utime+stime); childTicks that
	// of its reaped children (cutime+cstime), in clock ticks.
	ticks, childTicks int64
}

// scanProcs reads every process's parent and resident set.
func scanProcs() []procEntry {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procEntry, 0, len(dir))
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// comm may hold spaces and parentheses: fields start after the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 22 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		rss, _ := strconv.ParseInt(f[21], 10, 64)
		var t [4]int64
		for k := range t {
			t[k], _ = strconv.ParseInt(f[11+k], 10, 64)
		}
		out = append(out, procEntry{pid: pid, ppid: ppid, rssPages: rss, zombie: f[0] == "Z",
			ticks: t[0] + t[1], childTicks: t[2] + t[3]})
	}
	return out
}

// descendants lists the living processes below root.
func descendants(root int) []int {
	return descendantsIn(scanProcs(), root)
}

func descendantsIn(procs []procEntry, root int) []int {
	children := map[int][]procEntry{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []int
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[pid] {
			if !c.zombie {
				out = append(out, c.pid)
			}
			stack = append(stack, c.pid)
		}
	}
	return out
}

// treeRSS sums the resident memory of a process tree (root and its
// descendants, as treeSet gives them) in bytes.
func treeRSS(procs []procEntry, tree map[int]bool) uint64 {
	var pages int64
	for _, p := range procs {
		if tree[p.pid] {
			pages += p.rssPages
		}
	}
	return uint64(pages * int64(os.Getpagesize()))
}

// treeCPU is the CPU time of root's process tree in seconds: root's own
// and its reaped children's, plus every living descendant's own.
func treeCPU(procs []procEntry, root int, tree map[int]bool) float64 {
	var ticks int64
	for _, p := range procs {
		switch {
		case p.pid == root:
			ticks += p.ticks + p.childTicks
		case tree[p.pid]:
			ticks += p.ticks
		}
	}
	return float64(ticks) / clockTicks
}

// treeSet is root and its living descendants, built once per sample and
// shared by the RSS, CPU and GPU accounting.
func treeSet(procs []procEntry, root int) map[int]bool {
	set := map[int]bool{root: true}
	for _, pid := range descendantsIn(procs, root) {
		set[pid] = true
	}
	return set
}

// clockTicks is USER_HZ, 100 on every Linux ABI gpulaunch runs on.
const clockTicks = 100

func unixSignalName(s syscall.Signal) string { return strings.TrimPrefix(unix.SignalName(s), "SIG") }
