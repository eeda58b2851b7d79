// Command scale measures the holder of a task queue over many nodes
// (issue 26): it starts the real gpulaunch as node 0 of a queue over
// N+1 nodes (OMPI_COMM_WORLD_RANK=0, OMPI_COMM_WORLD_SIZE=N+1, a run id
// and a key directory of its own), and joins N simulated nodes to it
// through pkg/nodelink's real Worker — the real key file, TLS over
// loopback — each with 4 slots (slots), answering every task at once. So the
// work measured is the holder's: admitting nodes, handing out tasks,
// recording their ends in the joblog.
//
// It prints one JSON object (scripts/bench-holder.sh reads it):
//
//   - join_s: from the moment all N nodes call Join at once until the
//     last is welcomed;
//   - bytes_per_node: the holder's VmRSS with N nodes joined (and the
//     tasks they were sent held) less its VmRSS before the first joined,
//     over N;
//   - tasks_per_s: the tasks recorded from the moment every node had
//     joined (the nodes hold their answers until then) until the holder
//     tells the nodes the queue is over, over that time; cpu_us_per_task:
//     the holder's own CPU time (utime+stime of /proc/PID/stat) in that
//     window, per task: the rate it could reach with the CPUs to itself
//     is 1e6 / cpu_us_per_task;
//   - lost_s (with -lose): node N takes its tasks and never answers;
//     once the queue is under way its connection is closed, and lost_s
//     is the time until another node receives one of the tasks it held;
//   - joblog_records: the joblog's records at the end (every task's, or
//     the bench fails);
//   - group: the nodes per relay's group the holder chose (-group sets
//     GPULAUNCH_NODE_GROUP; 0: every node joins the holder). The relays
//     are simulated nodes too, in this process: the figures are the
//     holder's.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/nodelink"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// slots is every node's, the holder's too: Frontier's node has 8 GCDs,
// Aurora's 6 GPUs (12 tiles), El Capitan's 4 APUs. The holder's own slots
// run `sleep 0.05`, so that forks take a small share of its CPU; the
// simulated nodes answer every task at once.
const slots = 4

// result is what one measurement found.
type result struct {
	Nodes int     `json:"nodes"`
	Tasks int     `json:"tasks"`
	JoinS float64 `json:"join_s"`
	// JoinCPUus is the holder's CPU time while the nodes joined, per
	// node: N of them cost the holder alone N × this.
	JoinCPUus    float64 `json:"join_cpu_us_per_node"`
	BytesPerNode float64 `json:"bytes_per_node"`
	TasksPerS    float64 `json:"tasks_per_s"`
	CPUusPerTask float64 `json:"cpu_us_per_task"`
	LostS        float64 `json:"lost_s,omitempty"`
	// LostWhy is how the holder says it learned of the loss (its
	// warning's parenthesis): the connection's end, or 10 beats of silence.
	LostWhy string `json:"lost_why,omitempty"`
	Group   int    `json:"group"`
	// RelaysJoinS is, over a tree, the time until the relays (and node
	// N) had joined, within JoinS; the rest is the nodes behind them
	// joining the relays, which share this machine's CPUs here.
	RelaysJoinS   float64 `json:"relays_join_s,omitempty"`
	JoblogRecords int     `json:"joblog_records"`
	MaxRSSKiB     int64   `json:"max_rss_kib"`
	ExitCode      int     `json:"exit_code"`
	// EndToExitS is from the queue's end to the holder's exit: its
	// goodbye to every node.
	EndToExitS float64 `json:"end_to_exit_s"`
}

func main() {
	gl := flag.String("gpulaunch", "bin/gpulaunch", "the gpulaunch binary to measure as the holder")
	nodes := flag.Int("nodes", 1000, "simulated nodes to join")
	tasks := flag.Int("tasks", 200000, "tasks in the queue")
	lose := flag.Bool("lose", false, "lose node 1 while the queue runs and time the hand-back")
	joinLimit := flag.Duration("join-limit", 2*time.Minute, "how long all the nodes may take to join")
	group := flag.String("group", "", "GPULAUNCH_NODE_GROUP for the holder: nodes per relay's group, 0 for none (default: the holder's choice)")
	child := flag.Bool("child", false, "be a child that simulates nodes behind relays (members.go)")
	run := flag.String("run", "", "the child's run")
	keys := flag.String("keys", "", "the child's key directory")
	part := flag.Int("part", 0, "the child's part of the nodes")
	skip := flag.Int("skip", 0, "a node the child leaves out")
	joinBy := flag.Int64("join-by", 0, "when the child's nodes must have joined (Unix ns)")
	flag.Parse()
	if *child {
		if err := runChild(*run, *keys, *part, *skip, time.Unix(0, *joinBy)); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		return
	}
	r, err := measure(*gl, *nodes, *tasks, *lose, *joinLimit, *group)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale: "+err.Error())
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

// sim is the simulated nodes' shared state.
type sim struct {
	gate     chan struct{} // closed once every node joined: answers flow
	victim   atomic.Pointer[nodelink.Worker]
	held     sync.Map // tasks node 1 (the victim) was sent, by Seq
	lostAt   atomic.Int64
	redoneAt atomic.Int64
	endedAt  atomic.Int64
	answered atomic.Int64
}

// holderRun is the holder's process and its files.
type holderRun struct {
	cmd    *exec.Cmd
	pid    int
	stderr bytes.Buffer
	exited chan error // its Wait's answer
	dir    string     // removed at the end
	keys   string     // the key directory
	joblog string
	run    string // GPULAUNCH_RUN_ID
}

// startHolder starts gl as node 0 of a queue of tasks over n+1 nodes and
// waits until it listens (its key file is there).
func startHolder(gl string, n, tasks int, group string) (*holderRun, error) {
	dir, err := os.MkdirTemp("", "gl-scale-")
	if err != nil {
		return nil, err
	}
	h := &holderRun{dir: dir, keys: filepath.Join(dir, "keys"), joblog: filepath.Join(dir, "joblog"), run: fmt.Sprintf("scale-%d-%d", os.Getpid(), n)}
	input := filepath.Join(dir, "tasks")
	if err := os.Mkdir(h.keys, 0o700); err != nil {
		return h, err
	}
	// the holder's own slots run `sleep 0.05 0`
	if err := os.WriteFile(input, bytes.Repeat([]byte("0\n"), tasks), 0o644); err != nil {
		return h, err
	}
	args := []string{"-n", strconv.Itoa(slots), "-O", "-G", "0", "--each-line", input, "--joblog", h.joblog, "--", "sleep", "0.05", "{}"}
	if knowsQuiet(gl) { // a binary before -q (make bench's BENCH_AGAINST) writes its summary to the buffer instead
		args = append([]string{"-q"}, args...)
	}
	h.cmd = exec.Command(gl, args...)
	h.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GPULAUNCH_RUN_ID=" + h.run, "GPULAUNCH_KEY_DIR=" + h.keys,
		"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=" + strconv.Itoa(n+1)}
	if group != "" {
		h.cmd.Env = append(h.cmd.Env, "GPULAUNCH_NODE_GROUP="+group)
	}
	h.cmd.Stderr = &h.stderr
	if err := h.cmd.Start(); err != nil {
		return h, err
	}
	h.pid = h.cmd.Process.Pid
	h.exited = make(chan error, 1)
	go func() { h.exited <- h.cmd.Wait() }()
	key := nodelink.KeyPath(h.keys, h.run)
	for {
		if _, err := os.Stat(key); err == nil {
			return h, nil
		}
		select {
		case err := <-h.exited:
			return h, fmt.Errorf("the holder ended before it listened (%v): %s", err, h.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// knowsQuiet says whether gl takes -q: it runs one instance of true with it.
func knowsQuiet(gl string) bool {
	return exec.Command(gl, "-q", "-n", "1", "-O", "-G", "0", "--", "true").Run() == nil
}

// joinAll joins n simulated nodes to h, all at once, within limit; it
// returns them by index, and how long the last took.
func joinAll(h *holderRun, n int, limit time.Duration) ([]*nodelink.Worker, *members, [2]time.Duration, error) {
	k, err := nodelink.ReadKey(nodelink.KeyPath(h.keys, h.run))
	if err != nil {
		return nil, nil, [2]time.Duration{}, err
	}
	tree := nodelink.Groups{Nodes: k.Nodes, Size: k.Group}
	// The simulated nodes share this machine's CPUs, where real ones
	// would each have their own: their side of the handshakes is made a
	// few at a time (dialling), so that they do not all starve each
	// other past their handshake deadline; all N start at once. A node of
	// a group takes its turn once its relay has joined (relayed), so that
	// turns are not held by nodes waiting for relays that wait for turns.
	dialling := make(chan struct{}, 32)
	workers := make([]*nodelink.Worker, n+1)
	errs := make(chan error, n)
	relayed := make([]chan struct{}, n+1)
	for i := range relayed {
		relayed[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	begin := time.Now()
	joinBy := begin.Add(limit)
	for i := 1; i <= n; i++ {
		if tree.On() && !tree.IsRelay(i) && i != n {
			continue // a child's (members.go)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(relayed[i])
			if relay := tree.RelayOf(i); relay != 0 && relay != i {
				<-relayed[relay]
			}
			dialling <- struct{}{}
			defer func() { <-dialling }()
			wait := time.Until(joinBy)
			if wait <= 0 {
				errs <- fmt.Errorf("node %d: not joined within %s", i, limit)
				return
			}
			w, err := nodelink.Join(nodelink.WorkerConfig{Run: h.run, Node: i, Host: "sim" + strconv.Itoa(i), Slots: slots, KeyDir: h.keys, Wait: wait})
			if err != nil {
				errs <- fmt.Errorf("node %d: %w", i, err)
				return
			}
			workers[i] = w
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return workers, nil, [2]time.Duration{}, err
	}
	first := time.Since(begin)
	var m *members
	if tree.On() {
		m, err = startMembers(h, n, joinBy)
	}
	return workers, m, [2]time.Duration{time.Since(begin), first}, err
}

func measure(gl string, n, tasks int, lose bool, joinLimit time.Duration, group string) (result, error) {
	h, err := startHolder(gl, n, tasks, group)
	if h != nil {
		defer os.RemoveAll(h.dir)
	}
	if err != nil {
		return result{}, err
	}
	rss0, cpuJoin0, err := usage(h.pid)
	if err != nil {
		return result{}, err
	}
	workers, m, joined, err := joinAll(h, n, joinLimit)
	defer m.stop()
	if err != nil {
		h.cmd.Process.Kill()
		<-h.exited
		return result{}, err
	}
	rss1, cpuJoin1, err := usage(h.pid)
	if err != nil {
		return result{}, err
	}
	r := result{Nodes: n, Tasks: tasks, JoinS: joined[0].Seconds(), BytesPerNode: float64(rss1-rss0) / float64(n),
		JoinCPUus: float64((cpuJoin1 - cpuJoin0).Microseconds()) / float64(n)}
	if k, err := nodelink.ReadKey(nodelink.KeyPath(h.keys, h.run)); err == nil && k.Group > 0 {
		r.Group, r.RelaysJoinS = k.Group, joined[1].Seconds()
	}
	if err := runQueue(h, workers, m, lose, &r); err != nil {
		return r, err
	}
	if os.Getenv("SCALE_STDERR") != "" {
		os.Stderr.Write(h.stderr.Bytes())
	}
	if r.JoblogRecords != tasks {
		return r, fmt.Errorf("the joblog has %d records of %d tasks", r.JoblogRecords, tasks)
	}
	return r, nil
}

// runQueue lets the joined nodes answer, and measures the queue's run
// until its end into r: the rate, the holder's CPU per task, the lost
// node's hand-back (lose), the joblog, the holder's exit.
func runQueue(h *holderRun, workers []*nodelink.Worker, m *members, lose bool, r *result) error {
	s := &sim{gate: make(chan struct{})}
	if lose { // the last node: a relay's Close would wait for its group
		s.victim.Store(workers[len(workers)-1])
	}
	here := 0 // the nodes this process answers for: all, or the relays and node N
	for i := 1; i < len(workers); i++ {
		if workers[i] != nil {
			go s.answer(i, workers[i])
			here++
		}
	}
	before, err := records(h.joblog)
	if err != nil {
		return err
	}
	cpu0, err := cpuTime(h.pid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	close(s.gate)
	if m != nil {
		m.open()
	}
	if lose { // a quarter through: this process's share of a quarter answered
		go s.loseVictim(int64((r.Tasks-before)/4*here/(len(workers)-1)), h.joblog)
	}
	// the end: the first MsgEnd any node gets (the holder sends it once
	// every task is recorded)
	cpu1, exitAt, werr, ended := waitEnd(h, s)
	if !ended {
		return fmt.Errorf("the holder ended before the queue was over (%v): %s", werr, h.stderr.String())
	}
	window := time.Duration(s.endedAt.Load() - t0.UnixNano())
	r.EndToExitS = time.Duration(exitAt.UnixNano() - s.endedAt.Load()).Seconds()
	r.TasksPerS = float64(r.Tasks-before) / window.Seconds()
	if cpu1 > cpu0 {
		r.CPUusPerTask = float64((cpu1 - cpu0).Microseconds()) / float64(r.Tasks-before)
	}
	if lose {
		if s.redoneAt.Load() == 0 {
			return fmt.Errorf("no task of the lost node was handed out again")
		}
		r.LostS = time.Duration(s.redoneAt.Load() - s.lostAt.Load()).Seconds()
	}
	if r.JoblogRecords, err = records(h.joblog); err != nil {
		return err
	}
	if ru, ok := h.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKiB = ru.Maxrss
	}
	r.ExitCode = h.cmd.ProcessState.ExitCode()
	if lose {
		r.LostWhy = lostWhy(h.stderr.String(), r.Nodes)
	}
	if werr != nil && !(lose && r.ExitCode == 255) {
		return fmt.Errorf("the holder failed (%v): %s", werr, h.stderr.String())
	}
	return nil
}

// lostWhy is the reason in the holder's warning that node is lost:
// "node N (host) is lost (WHY): …".
func lostWhy(stderr string, node int) string {
	for _, line := range strings.Split(stderr, "\n") {
		_, rest, ok := strings.Cut(line, fmt.Sprintf("node %d (", node))
		if _, why, lost := strings.Cut(rest, ") is lost ("); ok && lost {
			if end := strings.Index(why, "):"); end >= 0 {
				return why[:end]
			}
		}
	}
	return ""
}

// waitEnd waits for the queue's end (the first MsgEnd a node gets) and
// the holder's exit, in either order: over a tree the holder may be gone
// before its end has crossed a relay. It returns the holder's CPU time
// last read before it exited, when it exited and how; ended is false when
// no end came within 10 s of its exit.
func waitEnd(h *holderRun, s *sim) (cpu time.Duration, exitAt time.Time, werr error, ended bool) {
	for s.endedAt.Load() == 0 || exitAt.IsZero() {
		if c, err := cpuTime(h.pid); err == nil && exitAt.IsZero() {
			cpu = c
		}
		select {
		case werr = <-h.exited:
			exitAt = time.Now()
		case <-time.After(time.Millisecond):
		}
		if !exitAt.IsZero() && s.endedAt.Load() == 0 && time.Since(exitAt) > 10*time.Second {
			return cpu, exitAt, werr, false
		}
	}
	return cpu, exitAt, werr, true
}

// usage is a process's resident memory and CPU time.
func usage(pid int) (int64, time.Duration, error) {
	rss, err := vmRSS(pid)
	if err != nil {
		return 0, 0, err
	}
	cpu, err := cpuTime(pid)
	return rss, cpu, err
}

// answer is simulated node i: every task it is sent ends at once,
// successfully, once the gate is open; the victim (node N under -lose)
// keeps its tasks and answers none.
func (s *sim) answer(i int, w *nodelink.Worker) {
	victim := s.victim.Load() == w
	for m := range w.Messages() {
		switch {
		case victim:
			if m.Kind == taskqueue.MsgTask {
				s.held.Store(m.Task.Seq, true)
			}
		case m.Kind == taskqueue.MsgTask:
			seq := m.Task.Seq
			if s.lostAt.Load() != 0 && s.redoneAt.Load() == 0 {
				if _, ok := s.held.Load(seq); ok {
					s.redoneAt.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
			<-s.gate
			now := time.Now()
			w.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Record: &job.Record{Seq: seq, Start: now, Command: m.Task.Command}})
			s.answered.Add(1)
		case m.Kind == taskqueue.MsgEnd:
			s.endedAt.CompareAndSwap(0, time.Now().UnixNano())
			w.Close()
			return
		case m.Kind == taskqueue.MsgLost || m.Kind == taskqueue.MsgStopNow:
			w.Close()
			return
		}
	}
}

// loseVictim closes node N's connection once after tasks were answered
// (the queue is under way), holding what it was sent; then it follows the
// joblog until one of those tasks is recorded: over a tree the node that
// ran it again may be a child's (members.go), whose answers this process
// does not see.
func (s *sim) loseVictim(after int64, joblog string) {
	for s.answered.Load() < after {
		time.Sleep(time.Millisecond)
	}
	w := s.victim.Load()
	f, err := os.Open(joblog)
	if err == nil {
		defer f.Close()
		f.Seek(0, io.SeekEnd)
	}
	s.lostAt.Store(time.Now().UnixNano())
	w.Close()
	if err != nil {
		return
	}
	r := bufio.NewReader(f)
	var part string
	for s.redoneAt.Load() == 0 && s.endedAt.Load() == 0 {
		line, err := r.ReadString('\n')
		if err != nil { // the end for now: a line may be half written
			part += line
			time.Sleep(time.Millisecond)
			continue
		}
		line, part = part+line, ""
		seq, _ := strconv.Atoi(line[:max(strings.IndexByte(line, '\t'), 0)])
		if _, held := s.held.Load(seq); held {
			s.redoneAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
}

// vmRSS is a process's resident memory in bytes.
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			return kib << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// cpuTime is a process's utime + stime.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: no utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// records counts a joblog's records (its lines after the header).
func records(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := -1
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		n++
	}
	if n < 0 {
		n = 0
	}
	return n, sc.Err()
}
