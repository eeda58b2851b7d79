package process

import (
	"os"
	"syscall"
)

// procEntry is one process as /proc/<pid>/stat shows it.
type procEntry struct {
	pid, ppid int
	rssPages  int64
	zombie    bool
	// ticks is the process's own CPU time (utime+stime); childTicks that
	// of its Reaped children (cutime+cstime), in clock ticks.
	ticks, childTicks int64
}

// ProcTable is one scan of /proc, indexed so that each instance's process
// tree is walked in time proportional to its size: the sampler reads the
// whole node once per tick, then 64 instances cost 64 small walks, not
// 64 passes over every process of the node.
type ProcTable struct {
	procs    []procEntry
	children map[int][]int32 // ppid → indices into procs
}

// ScanProcs reads every process's parent, state, CPU time and resident
// set. It reads each stat file with one read into a reused buffer and
// parses it in place: on a node with a few thousand processes this runs
// every sample, and allocations are what it would otherwise spend.
func ScanProcs() ProcTable {
	t := ProcTable{children: map[int][]int32{}}
	d, err := os.Open("/proc")
	if err != nil {
		return t
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	t.procs = make([]procEntry, 0, len(names))
	var buf [1024]byte
	for _, name := range names {
		pid, ok := atoi(name)
		if !ok {
			continue
		}
		n := readSmall("/proc/"+name+"/stat", buf[:])
		if n <= 0 {
			continue
		}
		if e, ok := parseStat(buf[:n]); ok {
			e.pid = pid
			t.children[e.ppid] = append(t.children[e.ppid], int32(len(t.procs)))
			t.procs = append(t.procs, e)
		}
	}
	return t
}

// readSmall reads a small file whole in one read, without the stat and
// the File that os.ReadFile costs; -1 when it cannot.
func readSmall(path string, buf []byte) int {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil {
		return -1
	}
	return n
}

// parseStat reads the fields of /proc/<pid>/stat the sampler needs. comm
// may hold spaces and parentheses: fields start after the last ')'.
func parseStat(b []byte) (procEntry, bool) {
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return procEntry{}, false
	}
	// field numbers after comm, from 0: state 0, ppid 1, utime 11, stime
	// 12, cutime 13, cstime 14, rss 21
	var e procEntry
	field, start := 0, -1
	for j := i + 1; j <= len(b) && field <= 21; j++ {
		if j < len(b) && b[j] != ' ' && b[j] != '\n' {
			if start < 0 {
				start = j
			}
			continue
		}
		if start < 0 {
			continue
		}
		f := b[start:j]
		start = -1
		v, _ := atoi64(f)
		switch field {
		case 0:
			e.zombie = len(f) == 1 && f[0] == 'Z'
		case 1:
			e.ppid = int(v)
		case 11, 12:
			e.ticks += v
		case 13, 14:
			e.childTicks += v
		case 21:
			e.rssPages = v
			return e, true
		}
		field++
	}
	return procEntry{}, false
}

func atoi(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func atoi64(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ProcTree is root and its descendants in one scan.
type ProcTree struct {
	root    int
	members []int32      // indices into the table: root (when alive) and every descendant
	PIDs    map[int]bool // living members, for matching GPU processes
}

// tree walks root's descendants; zombies count for CPU time (a zombie's
// ticks are final until it is Reaped) but are not living members.
func (t *ProcTable) Tree(root int) ProcTree {
	tr := ProcTree{root: root, PIDs: map[int]bool{root: true}}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, idx := range t.children[pid] {
			c := t.procs[idx]
			tr.members = append(tr.members, idx)
			if !c.zombie {
				tr.PIDs[c.pid] = true
			}
			stack = append(stack, c.pid)
		}
	}
	for _, idx := range t.byPID(root) {
		tr.members = append(tr.members, idx)
	}
	return tr
}

// byPID is the entry of pid, if the scan saw it.
func (t *ProcTable) byPID(pid int) []int32 {
	// The root is a child of gpulaunch: look among gpulaunch's children
	// rather than keeping a pid index for every process of the node.
	for _, idx := range t.children[os.Getpid()] {
		if t.procs[idx].pid == pid {
			return []int32{idx}
		}
	}
	return nil
}

// descendants are the living processes below the root.
func (tr ProcTree) Descendants(t *ProcTable) []int {
	var out []int
	for _, idx := range tr.members {
		if p := t.procs[idx]; p.pid != tr.root && !p.zombie {
			out = append(out, p.pid)
		}
	}
	return out
}

// rss is the tree's resident memory in bytes.
func (tr ProcTree) RSS(t *ProcTable) uint64 {
	var pages int64
	for _, idx := range tr.members {
		pages += t.procs[idx].rssPages
	}
	return uint64(pages * int64(os.Getpagesize()))
}

// cpu is the tree's CPU time in seconds: the root's own and its Reaped
// children's, plus every descendant's own.
func (tr ProcTree) CPU(t *ProcTable) float64 {
	var ticks int64
	for _, idx := range tr.members {
		p := t.procs[idx]
		ticks += p.ticks
		if p.pid == tr.root {
			ticks += p.childTicks
		}
	}
	return float64(ticks) / clockTicks
}
