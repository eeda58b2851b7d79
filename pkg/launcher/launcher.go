package launcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// Binding is what an instance is bound to before exec; empty CPUs: no affinity.
type Binding struct {
	CPUs      cpuset.Set
	MemPolicy binding.MemPolicy
	MemNodes  cpuset.Set
}

// Instance is one copy of the app, ready to start.
type Instance struct {
	Index int
	// Rank is the instance's RANK: Index on one node, node × N + Index
	// across nodes.
	Rank    int
	Path    string   // resolved executable
	Args    []string // argv, argv[0] as the user gave it
	Env     []string
	Binding Binding
	// Stdout and Stderr are file paths; "" writes to gpulaunch's own.
	Stdout, Stderr string
	// GPUs and CPUs describe the slot in logs and the summary.
	GPUs, CPUs string
	// GPUUUIDs are the instance's GPUs, for telemetry.
	GPUUUIDs []string
}

// Policy is how instances are supervised.
type Policy struct {
	// KillOnBadExit ends the others when one fails (srun -K).
	KillOnBadExit bool
	// WaitAfterFirst ends the others this long after the first exit (srun -W); 0: off.
	WaitAfterFirst time.Duration
	// Restarts is how often a failing instance is started again.
	Restarts int
	// Timeout ends an instance that runs longer; 0: none.
	Timeout time.Duration
	// KillWait is the grace between TERM and KILL.
	KillWait time.Duration
	// MemPerTask ends an instance whose process tree's RSS exceeds it; 0: none.
	MemPerTask uint64
	// Monitor is the telemetry interval (CPU time, RSS, GPU use, launch
	// verification); 0 turns telemetry off.
	Monitor time.Duration
}

// Spec is a whole run.
type Spec struct {
	Instances []Instance
	Policy    Policy
	// Label prefixes every output line with "<instance>: ", or with
	// "<LabelHost>:<instance>: " when LabelHost is set (several nodes).
	Label          bool
	LabelHost      string
	Stdout, Stderr io.Writer
	Log            *zap.Logger
	// GPUs samples GPU use; nil: none.
	GPUs GPUUsage
	// WatchGPUs are every GPU of the allocation (UUIDs): launch
	// verification looks for instances on GPUs that are not theirs among
	// them too. Instances' own GPUs are always watched.
	WatchGPUs []string
	// Board receives the live state for the control socket; nil: Run
	// keeps one of its own.
	Board *Board
	// Queue, when set, makes the instances slots that run its tasks one
	// after another (KillOnBadExit, WaitAfterFirst and Restarts do not
	// apply; the queue has Retries and Halt).
	Queue *Queue
}

// Ended says why an instance stopped.
type Ended string

// Reasons an instance stopped other than by itself.
const (
	EndedItself    Ended = ""
	EndedBadExit   Ended = "kill-on-bad-exit"
	EndedWait      Ended = "wait"
	EndedTimeout   Ended = "timeout"
	EndedMemory    Ended = "memory cap"
	EndedSignalled Ended = "signal to gpulaunch"
	EndedHalt      Ended = "halt"
)

// Outcome is how one instance ended.
type Outcome struct {
	Index    int            `json:"instance"`
	PID      int            `json:"pid"`
	Restarts int            `json:"restarts"`
	Wall     time.Duration  `json:"wall_ns"`
	Code     int            `json:"exit_code"` // -1 when killed by a signal
	Signal   syscall.Signal `json:"signal,omitempty"`
	EndedBy  Ended          `json:"ended_by,omitempty"`
	PeakRSS  uint64         `json:"peak_rss_bytes"`
	// CPUSeconds is the CPU time of the instance's process tree.
	CPUSeconds float64 `json:"cpu_seconds"`
	// GPUUtilMean and GPUUtilPeak are its GPUs' utilisation in percent
	// over the samples taken while it ran; -1 when none was taken.
	GPUUtilMean float64 `json:"gpu_util_mean_pct"`
	GPUUtilPeak int     `json:"gpu_util_peak_pct"`
	// GPUMemPeak is the most GPU memory its processes held at once.
	GPUMemPeak uint64 `json:"gpu_mem_peak_bytes"`
	// Warnings are launch verification's findings.
	Warnings []string `json:"warnings"`
	// Tasks and TasksFailed count what a slot of a task queue ran.
	Tasks       int `json:"tasks,omitempty"`
	TasksFailed int `json:"tasks_failed,omitempty"`
}

// Status renders the outcome as srun would: "0", "7", "SIGSEGV".
func (o Outcome) Status() string {
	if o.Signal != 0 {
		return SignalName(o.Signal)
	}
	return fmt.Sprint(o.Code)
}

// ExitCode combines outcomes like srun: 128 + the highest signal if any
// instance was killed by one, else the highest exit code. Instances that
// gpulaunch itself ended because another failed (-K) or ended first (-W)
// do not count: the run's code is the failure that caused it.
func ExitCode(outs []Outcome) int {
	sig, code := 0, 0
	for _, o := range outs {
		if o.EndedBy == EndedBadExit || o.EndedBy == EndedWait {
			continue
		}
		if o.Signal != 0 {
			sig = max(sig, int(o.Signal))
		} else {
			code = max(code, o.Code)
		}
	}
	if sig > 0 {
		return 128 + sig
	}
	return code
}

// deadline is a timer's message about instance idx's process pid: it
// applies only if that process still runs.
type deadline struct{ idx, pid int }

type instState struct {
	pid      int // 0 when not running
	started  time.Time
	restarts int
	endedBy  Ended
	timer    *time.Timer
	out      Outcome
	done     bool
	pending  bool // a restart is scheduled
	// readers counts the output pipes still being drained: the output
	// ring ends when the instance is done and they are.
	readers sync.WaitGroup
	// the previous sample, for the CPU rate
	sampledAt  time.Time
	sampledCPU float64
	// the process the slot's thread follows
	proc *process
	env  []string // a task's environment
	// the task a queue slot runs, and how often it has been tried
	task    Task
	hasTask bool
	tries   int
}

// Run starts every instance and supervises them until each has exited
// and everything they left behind is reaped. It returns the outcomes in
// instance order.
func Run(spec Spec) ([]Outcome, error) {
	log := spec.Log
	if log == nil {
		log = zap.NewNop()
	}
	p := spec.Policy
	if p.KillWait <= 0 {
		p.KillWait = 10 * time.Second
	}
	// Each slot thread spends its life in a blocking poll, holding one
	// of Go's Ps (the right to run Go code) while it waits. When no P is
	// idle, Go's monitor takes them back as often as every 20 µs, and
	// every exit must find one again; spare Ps leave them be. On a 2-CPU
	// node that was a tenth of a task queue's rate (`make bench`). A run
	// of instances exits once per instance and does not need them (the
	// resize costs a start about a millisecond). A GOMAXPROCS the user set
	// stands.
	if spec.Queue != nil && os.Getenv("GOMAXPROCS") == "" {
		if want := min(len(spec.Instances)+2, 4*runtime.NumCPU()); want > runtime.GOMAXPROCS(0) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(want))
		}
	}
	r := newReaper()
	defer r.stop()
	sigCh := make(chan os.Signal, 16)
	signal.Notify(sigCh, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigCh)

	n := len(spec.Instances)
	st := make([]instState, n)
	board := spec.Board
	if board == nil {
		board = NewBoard(RunInfo{}, spec.Instances)
	}
	defer board.finish()
	restartCh := make(chan int, n)
	timeoutCh := make(chan deadline, n)
	killCh := make(chan deadline, n)
	var outputs sync.WaitGroup
	stdoutMux := &lineMux{w: spec.Stdout}
	stderrMux := &lineMux{w: spec.Stderr}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()

	q := spec.Queue
	started := time.Now()
	// per-task messages are built only when someone reads them: a queue
	// of tiny tasks would spend its time formatting them
	debug := log.Core().Enabled(zap.DebugLevel)
	// mu guards the run's state: the supervisor loop below and the slot
	// threads, which handle their processes' exits themselves, take it.
	var mu sync.Mutex
	threads := make([]*slotThread, n)
	defer func() {
		for _, t := range threads {
			if t != nil {
				t.close()
			}
		}
	}()
	// ended wakes the supervisor loop when the last instance has ended.
	ended := make(chan struct{}, 1)
	var running, pending int
	var exited func(i, pid int, ws syscall.WaitStatus, fork forkFunc) *process
	var stopping bool
	var stopWhy Ended
	var terminate func(i int, why Ended)
	var start func(i int, fork forkFunc) error
	// startSlot is how the supervisor starts slot i: on the slot's own
	// thread, made on first use, which then waits for the process. The
	// caller holds mu and counts the slot as running already.
	startSlot := func(i int) error {
		if threads[i] == nil {
			threads[i] = newSlotThread(r, spec.Instances[i].Binding, func(pid int, ws syscall.WaitStatus, fork forkFunc) *process {
				return exited(i, pid, ws, fork)
			})
		}
		var err error
		mu.Unlock()
		bindErr := threads[i].start(func(fork forkFunc) *process {
			mu.Lock()
			defer mu.Unlock()
			if err = start(i, fork); err != nil {
				return nil
			}
			return st[i].proc
		})
		mu.Lock()
		if bindErr != nil {
			return fmt.Errorf("instance %d: %w", i, bindErr)
		}
		return err
	}
	// start starts slot i's instance, or its current task, through fork.
	// The caller holds mu, and counts the slot as running already: start
	// lets go of mu while it makes the pipes and forks, so that the slots
	// start at the same time (a slot thread that finds mu taken sleeps,
	// and waking it costs more than the work), and the run must not look
	// finished meanwhile. A stop that came in meanwhile ends the new
	// process at once.
	start = func(i int, fork forkFunc) error {
		inst := spec.Instances[i]
		label, again := inst.Index, st[i].restarts > 0
		if st[i].hasTask {
			t := st[i].task
			inst.Path, inst.Args, inst.Stdout, inst.Stderr = t.Path, t.Args, t.Stdout, t.Stderr
			// the slot's own copy, reused task after task: ForkExec is
			// done with it when it returns
			st[i].env = append(append(st[i].env[:0], inst.Env...), "GPULAUNCH_TASK="+strconv.Itoa(t.Seq))
			inst.Env = st[i].env
			label, again = t.Seq, st[i].tries > 0
		}
		mu.Unlock()
		proc, err := func() (*process, error) {
			streams, err := openStreams(inst, label, spec, stdoutMux, stderrMux, board.Output(i), again)
			if err != nil {
				return nil, fmt.Errorf("instance %d: %w", i, err)
			}
			attr := &syscall.ProcAttr{
				Env:   inst.Env,
				Files: []uintptr{devnull.Fd(), uintptr(streams[0].child), uintptr(streams[1].child)},
				// Own process group: signals go to the whole instance.
				// Parent-death signal: instances die with gpulaunch, even
				// when it is SIGKILLed.
				Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
			}
			for _, s := range streams {
				// counted before the fork: a stream may end on its own
				// goroutine at once
				outputs.Add(1)
				st[i].readers.Add(1)
				release := s.ended
				s.ended = func() {
					release()
					st[i].readers.Done()
					outputs.Done()
				}
			}
			proc, err := fork(launch{inst.Path, inst.Args, attr, streams[:]})
			if err != nil {
				closeStreams(streams[:])
				return nil, fmt.Errorf("instance %d: starting %s: %w", i, inst.Path, err)
			}
			for _, s := range streams {
				_ = syscall.Close(s.child)
			}
			return proc, nil
		}()
		mu.Lock()
		if err != nil {
			return err
		}
		pid := proc.pid
		st[i].proc = proc
		st[i].pid, st[i].started, st[i].out.PID = pid, time.Now(), pid
		st[i].sampledAt, st[i].sampledCPU = time.Time{}, 0
		board.update(i, func(row *InstanceStatus) {
			row.State, row.PID, row.Started, row.Restarts = StateRunning, pid, st[i].started, st[i].restarts
			row.CPUPercent, row.RSS = 0, 0
			if st[i].hasTask {
				row.Task, row.Command, row.Restarts = st[i].task.Seq, st[i].task.Command, st[i].tries
			}
		})
		if p.Timeout > 0 {
			st[i].timer = time.AfterFunc(p.Timeout, func() { timeoutCh <- deadline{idx: i, pid: pid} })
		}
		if stopping {
			terminate(i, stopWhy)
		}
		b := inst.Binding
		mem := string(b.MemPolicy)
		if !b.MemNodes.IsEmpty() {
			mem += " on NUMA " + b.MemNodes.String()
		}
		cpus := b.CPUs.String()
		if cpus == "" {
			cpus = "not bound"
		}
		if st[i].hasTask {
			if debug {
				log.Debug(fmt.Sprintf("task %d started in slot %d: pid %d", st[i].task.Seq, i, pid), zap.Int("task", st[i].task.Seq), zap.Int("slot", i), zap.Int("pid", pid))
			}
			return nil
		}
		log.Info(fmt.Sprintf("instance %d started: pid %d, GPU %s, CPUs %s, memory %s", i, pid, orDash(inst.GPUs), cpus, orDash(mem)),
			zap.Int("instance", i), zap.Int("pid", pid), zap.String("gpus", inst.GPUs), zap.String("cpus", b.CPUs.String()),
			zap.String("mem_policy", string(b.MemPolicy)), zap.String("mem_nodes", b.MemNodes.String()), zap.Int("restart", st[i].restarts))
		return nil
	}

	signalGroup := func(i int, sig syscall.Signal) {
		if st[i].pid > 0 {
			_ = syscall.Kill(-st[i].pid, sig)
		}
	}
	// The first KILL deadline stands: KILL comes the kill wait after
	// the first TERM that gpulaunch itself sent.
	killAll := make(chan struct{}, 1)
	var killTimer *time.Timer
	armKill := func() {
		if killTimer == nil {
			killTimer = time.AfterFunc(p.KillWait, func() { killAll <- struct{}{} })
		}
	}
	waitC := make(chan struct{}, 1)
	var waitTimer *time.Timer
	terminate = func(i int, why Ended) {
		if st[i].pid == 0 {
			return
		}
		if st[i].endedBy == EndedItself {
			st[i].endedBy = why
		}
		board.update(i, func(row *InstanceStatus) { row.State, row.EndedBy = StateStopping, st[i].endedBy })
		signalGroup(i, syscall.SIGTERM)
		pid := st[i].pid
		time.AfterFunc(p.KillWait, func() { killCh <- deadline{idx: i, pid: pid} })
	}
	// final: instance i will not run again; its output ends once drained.
	final := func(i int) {
		if st[i].done {
			return
		}
		st[i].done = true
		board.update(i, func(row *InstanceStatus) { row.State = StateExited })
		ring := board.Output(i)
		go func() { st[i].readers.Wait(); ring.Close() }()
	}
	stopAll := func(why Ended) {
		if !stopping {
			stopping, stopWhy = true, why
		}
		if q != nil {
			q.stop(string(why))
		}
		for i := range st {
			terminate(i, why)
			if st[i].pending && !st[i].done {
				st[i].pending = false
				final(i)
			}
		}
	}

	var taskCounts func()
	if q != nil {
		taskCounts = func() {
			qs := q.Counts(running, time.Since(started))
			board.setQueue(qs)
			if q.Progress != nil {
				q.Progress(qs)
			}
		}
	}

	// handleTaskExit: slot i's task has exited. It is tried again, or
	// recorded (joblog, counts, --halt); then the slot takes the next
	// task, started through fork on the slot's own thread, or is done. A
	// task that gpulaunch itself ended (--halt now, a TERM to gpulaunch)
	// is not recorded: it did not finish, and a --resume runs it again.
	handleTaskExit := func(i int, ws syscall.WaitStatus, fork forkFunc) error {
		s := &st[i]
		t := s.task
		rec := q.record(t, s.started, s.out.Wall, ws)
		retry := false
		switch {
		case s.endedBy == EndedHalt || s.endedBy == EndedSignalled:
			log.Info(fmt.Sprintf("task %d was ended by gpulaunch (%s): not in the joblog, so --resume runs it again", t.Seq, s.endedBy))
		case rec.Failed() && !stopping && s.tries < q.Retries:
			retry = true
			s.tries++
			log.Info(fmt.Sprintf("task %d failed (%s): retry %d of %d", t.Seq, s.out.Status(), s.tries, q.Retries))
		default:
			when, err := q.finished(rec)
			if err != nil {
				log.Error("--joblog: " + err.Error())
			}
			s.out.Tasks++
			if rec.Failed() {
				s.out.TasksFailed++
				log.Warn(fmt.Sprintf("task %d failed: %s after %d tr%s: %s", t.Seq, s.out.Status(), s.tries+1, map[bool]string{true: "y", false: "ies"}[s.tries == 0], t.Command))
			}
			switch when {
			case "now":
				log.Info(q.halted + ": ending the running tasks")
				stopAll(EndedHalt)
				armKill()
			case "soon":
				log.Info(q.halted + ": no new task starts; the running ones finish")
			}
		}
		s.endedBy = EndedItself
		if !retry {
			s.tries = 0
			if stopping {
				final(i)
				return nil
			}
			next, ok := q.take(i)
			if !ok {
				final(i)
				return nil
			}
			s.task = next
		}
		running++
		if err := start(i, fork); err != nil {
			running--
			final(i)
			return err
		}
		return nil
	}

	// exited handles the end of slot i's process, on the slot's thread;
	// it returns the slot's next process when it started one.
	exited = func(i, pid int, ws syscall.WaitStatus, fork forkFunc) *process {
		mu.Lock()
		defer mu.Unlock()
		defer func() {
			if running == 0 && pending == 0 {
				select {
				case ended <- struct{}{}:
				default:
				}
			}
		}()
		s := &st[i]
		running--
		if s.timer != nil {
			s.timer.Stop()
		}
		s.pid, s.proc = 0, nil
		s.out.Index, s.out.Restarts, s.out.Wall = i, s.restarts, time.Since(s.started)
		s.out.Code, s.out.Signal = ws.ExitStatus(), 0
		if ws.Signaled() {
			s.out.Code, s.out.Signal = -1, ws.Signal()
		}
		s.out.EndedBy = s.endedBy
		failed := s.out.Code != 0
		board.update(i, func(row *InstanceStatus) {
			row.State, row.Wall, row.Exit, row.EndedBy = StateRestarting, s.out.Wall, s.out.Status(), s.endedBy
		})
		if q != nil {
			if debug {
				log.Debug(fmt.Sprintf("task %d exited: %s after %s", s.task.Seq, s.out.Status(), s.out.Wall.Round(time.Millisecond)),
					zap.Int("task", s.task.Seq), zap.Int("slot", i), zap.Int("pid", pid), zap.Int("exit_code", s.out.Code),
					zap.String("signal", SignalName(s.out.Signal)), zap.Duration("wall", s.out.Wall))
			}
			if err := handleTaskExit(i, ws, fork); err != nil {
				log.Error(err.Error())
			}
			taskCounts()
			return s.proc
		}
		log.Info(fmt.Sprintf("instance %d exited: %s after %s", i, s.out.Status(), s.out.Wall.Round(time.Millisecond)),
			zap.Int("instance", i), zap.Int("pid", pid), zap.Int("exit_code", s.out.Code),
			zap.String("signal", SignalName(s.out.Signal)), zap.Duration("wall", s.out.Wall), zap.String("ended_by", string(s.endedBy)))
		switch {
		case failed && !stopping && s.endedBy == EndedItself && s.restarts < p.Restarts:
			s.restarts++
			s.pending = true
			pending++
			backoff := min(250*time.Millisecond<<(s.restarts-1), 10*time.Second)
			log.Info(fmt.Sprintf("instance %d restarts in %s (restart %d of %d)", i, backoff, s.restarts, p.Restarts))
			time.AfterFunc(backoff, func() { restartCh <- i })
		default:
			final(i)
			if failed && p.KillOnBadExit && !stopping {
				log.Info(fmt.Sprintf("instance %d failed: ending the others (--kill-on-bad-exit)", i))
				stopAll(EndedBadExit)
				armKill()
			}
			if p.WaitAfterFirst > 0 && waitTimer == nil && !stopping {
				waitTimer = time.AfterFunc(p.WaitAfterFirst, func() { waitC <- struct{}{} })
			}
		}
		return nil
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, t := range []*time.Timer{killTimer, waitTimer} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	// idle: no instance runs or is about to restart.
	idle := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return running == 0 && pending == 0
	}

	mu.Lock()
	for i := range spec.Instances {
		if q != nil {
			t, ok := q.take(i)
			if !ok {
				st[i].out.Index = i
				final(i)
				continue
			}
			st[i].task, st[i].hasTask = t, true
		}
		running++
		if err := startSlot(i); err != nil {
			running--
			stopAll(EndedSignalled)
			for j := range st[:i] {
				signalGroup(j, syscall.SIGKILL)
			}
			mu.Unlock()
			for !idle() {
				<-ended
			}
			r.endDescendants(p.KillWait)
			outputs.Wait()
			return nil, err
		}
	}
	if q != nil {
		taskCounts()
	}
	mu.Unlock()

	var sampleC <-chan time.Time
	if every := p.Monitor; every > 0 || p.MemPerTask > 0 {
		if p.MemPerTask > 0 && (every == 0 || every > 500*time.Millisecond) {
			every = 500 * time.Millisecond
		}
		sampler := time.NewTicker(every)
		defer sampler.Stop()
		sampleC = sampler.C
	}
	watches := make([]*gpuWatch, n)
	owner := map[string]int{}
	var allGPUs []string
	for i, inst := range spec.Instances {
		watches[i] = newGPUWatch(inst.GPUUUIDs)
		for _, u := range inst.GPUUUIDs {
			if _, dup := owner[u]; !dup {
				owner[u] = i
				allGPUs = append(allGPUs, u)
			}
		}
	}
	for _, u := range spec.WatchGPUs {
		if _, ok := owner[u]; !ok && !slices.Contains(allGPUs, u) {
			allGPUs = append(allGPUs, u)
		}
	}
	gpus := spec.GPUs
	if p.Monitor == 0 || len(allGPUs) == 0 {
		gpus = nil
	}
	intCount := 0
	forwardSignal := func(s syscall.Signal) {
		if q != nil && s == syscall.SIGHUP {
			// parallel's convention: finish what runs, start nothing new
			if q.halted == "" {
				log.Info("SIGHUP: the running tasks finish, no new task starts (TERM or Ctrl-C ends them)")
			}
			q.stop("SIGHUP")
			taskCounts()
			return
		}
		for i := range st {
			signalGroup(i, s)
		}
		switch s {
		case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
			if s == syscall.SIGINT {
				intCount++
			}
			if q != nil {
				q.stop(SignalName(s))
			}
			if !stopping {
				// A scheduled restart sees stopping when its timer fires.
				log.Info(fmt.Sprintf("%s: passed to every instance; KILL in %s", SignalName(s), p.KillWait))
				stopping, stopWhy = true, EndedSignalled
				for i := range st {
					if st[i].pid > 0 && st[i].endedBy == EndedItself {
						st[i].endedBy = EndedSignalled
					}
				}
				armKill()
			} else if intCount >= 2 {
				// A second Ctrl-C means now. A second TERM does not:
				// Slurm sends TERM twice at a time limit.
				for i := range st {
					signalGroup(i, syscall.SIGKILL)
				}
			}
		}
	}
	// Each event is handled under mu, as the slot threads handle exits.
	for !idle() {
		select {
		case <-ended:
		case i := <-restartCh:
			mu.Lock()
			pending--
			st[i].pending = false
			if stopping || st[i].done {
				final(i)
			} else {
				running++
				if err := startSlot(i); err != nil {
					running--
					log.Error(err.Error())
					final(i)
				}
			}
			mu.Unlock()
		case req := <-board.signals:
			mu.Lock()
			var sent []Signalled
			for i := range st {
				if (req.instance == i || req.instance == AllInstances) && st[i].pid > 0 {
					signalGroup(i, req.sig)
					sent = append(sent, Signalled{Instance: i, PID: st[i].pid})
				}
			}
			var err error
			if len(sent) == 0 {
				err = fmt.Errorf("instance %d is not running (state %s)", req.instance, board.state(max(req.instance, 0)))
				if req.instance == AllInstances {
					err = errors.New("no instance is running")
				}
			} else {
				log.Info(fmt.Sprintf("%s from `gpulaunch signal`: sent to %s", SignalName(req.sig), describeSent(sent)))
			}
			mu.Unlock()
			req.reply <- signalReply{sent, err}
		case sig := <-sigCh:
			mu.Lock()
			forwardSignal(sig.(syscall.Signal))
			mu.Unlock()
		case <-killAll:
			mu.Lock()
			for i := range st {
				signalGroup(i, syscall.SIGKILL)
			}
			mu.Unlock()
		case <-waitC:
			mu.Lock()
			log.Info(fmt.Sprintf("--wait %s after the first exit: ending the others", p.WaitAfterFirst))
			stopAll(EndedWait)
			armKill()
			mu.Unlock()
		case ev := <-timeoutCh:
			mu.Lock()
			if st[ev.idx].pid == ev.pid {
				log.Info(fmt.Sprintf("instance %d ran past --timeout %s: ending it", ev.idx, p.Timeout))
				terminate(ev.idx, EndedTimeout)
			}
			mu.Unlock()
		case ev := <-killCh:
			mu.Lock()
			if st[ev.idx].pid == ev.pid {
				_ = syscall.Kill(-ev.pid, syscall.SIGKILL)
			}
			mu.Unlock()
		case now := <-sampleC:
			// the scan and the GPU query run outside the lock: the slots
			// go on exiting and starting meanwhile
			procs := scanProcs()
			var usage []nvml.Usage
			if gpus != nil {
				var err error
				if usage, err = gpus.Usage(allGPUs); err != nil {
					log.Debug("GPU telemetry off: " + err.Error())
					gpus, usage = nil, nil
				}
			}
			mu.Lock()
			for i := range st {
				if st[i].pid == 0 {
					continue
				}
				tree := procs.tree(st[i].pid)
				st[i].out.CPUSeconds = max(st[i].out.CPUSeconds, tree.cpu(&procs))
				if gpus != nil {
					for _, w := range watches[i].observe(i, usage, tree.pids, owner) {
						log.Warn(w)
						watches[i].warnings = append(watches[i].warnings, w)
					}
				}
				rss := tree.rss(&procs)
				st[i].out.PeakRSS = max(st[i].out.PeakRSS, rss)
				cpuRate := 0.0
				if dt := now.Sub(st[i].sampledAt).Seconds(); !st[i].sampledAt.IsZero() && dt > 0 {
					cpuRate = 100 * max(0, st[i].out.CPUSeconds-st[i].sampledCPU) / dt
				}
				st[i].sampledAt, st[i].sampledCPU = now, st[i].out.CPUSeconds
				w := watches[i]
				board.update(i, func(row *InstanceStatus) {
					row.CPUPercent, row.CPUSeconds, row.RSS, row.PeakRSS = cpuRate, st[i].out.CPUSeconds, rss, st[i].out.PeakRSS
					row.GPUUtil, row.GPUMem, row.GPUUtilMean = w.lastUtil, w.lastMem, w.meanUtil()
					row.Warnings = append(row.Warnings[:0], w.warnings...)
				})
				if p.MemPerTask > 0 && rss > p.MemPerTask && st[i].endedBy == EndedItself {
					log.Warn(fmt.Sprintf("instance %d uses %s, over --mem-per-task %s: ending it", i, sizeString(rss), sizeString(p.MemPerTask)))
					terminate(i, EndedMemory)
				}
			}
			mu.Unlock()
		}
	}
	if left := r.endDescendants(p.KillWait); left > 0 {
		log.Info(fmt.Sprintf("ended %d process(es) the instances left behind", left))
	}
	outputs.Wait()
	board.finish()
	outs := make([]Outcome, n)
	for i := range st {
		outs[i] = st[i].out
		w := watches[i]
		if spec.GPUs != nil && p.Monitor > 0 {
			// an instance that ended before verifyAfter samples is judged
			// on the samples it had
			for _, msg := range w.verify(i) {
				log.Warn(msg)
				w.warnings = append(w.warnings, msg)
			}
		}
		outs[i].GPUUtilMean, outs[i].GPUUtilPeak, outs[i].GPUMemPeak = w.meanUtil(), w.utilPeak, w.memPeak
		outs[i].Warnings = append([]string{}, w.warnings...)
	}
	return outs, nil
}

// openStreams opens stdout and stderr for one start of inst, copied to
// ring too. A restart appends to the instance's files instead of
// truncating them. Stdout and stderr given the same file share one
// writer, so neither overwrites the other.
func openStreams(inst Instance, label int, spec Spec, stdoutMux, stderrMux *lineMux, ring *Ring, restart bool) (out [2]*stream, err error) {
	var file *lineMux
	var refs atomic.Int32
	var fileRelease func()
	paths := [2]string{inst.Stdout, inst.Stderr}
	for k, path := range paths {
		release := func() {}
		sink := []*lineMux{stdoutMux, stderrMux}[k]
		prefix := ""
		if spec.Label && spec.LabelHost != "" {
			prefix = fmt.Sprintf("%s:%d: ", spec.LabelHost, label)
		} else if spec.Label {
			prefix = fmt.Sprintf("%d: ", label)
		}
		if path != "" {
			prefix = ""
			if k == 1 && path == paths[0] {
				sink = file
			} else {
				flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
				if restart {
					flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
				}
				f, err := os.OpenFile(path, flags, 0o644)
				if err != nil {
					closeStreams(out[:k])
					return out, err
				}
				file = &lineMux{w: f}
				sink = file
				refs.Store(0)
				fileRelease = func() {
					if refs.Add(-1) == 0 {
						f.Close()
					}
				}
			}
			refs.Add(1)
			release = fileRelease
		}
		fd, child, err := outputPipe()
		if err != nil {
			release()
			closeStreams(out[:k])
			return out, err
		}
		out[k] = &stream{child: child, fd: fd, copier: sink.copier(prefix, ring), ended: release}
	}
	return out, nil
}

// closeStreams gives up streams that no process will write.
func closeStreams(ss []*stream) {
	for _, s := range ss {
		s.close()
		s.ended()
	}
}

func describeSent(sent []Signalled) string {
	parts := make([]string, len(sent))
	for i, s := range sent {
		parts[i] = fmt.Sprintf("instance %d (pid %d)", s.Instance, s.PID)
	}
	return strings.Join(parts, ", ")
}

// SignalName is a signal as users write it: "SIGUSR1"; "" for none.
func SignalName(s syscall.Signal) string {
	if s == 0 {
		return ""
	}
	return "SIG" + unixSignalName(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sizeString(b uint64) string {
	switch {
	case b == 0:
		return "-" // never sampled: the instance ran shorter than a sample interval
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

// WriteSummary prints the end-of-run table.
func WriteSummary(w io.Writer, insts []Instance, outs []Outcome) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Across nodes an instance's RANK is not its number on this node.
	ranks := false
	for _, inst := range insts {
		ranks = ranks || inst.Rank != inst.Index
	}
	rank := func(i int) string {
		if ranks {
			return strconv.Itoa(insts[i].Rank) + "\t"
		}
		return ""
	}
	fmt.Fprintln(tw, "INSTANCE\t"+map[bool]string{true: "RANK\t"}[ranks]+"PID\tGPU\tCPUS\tWALL\tEXIT\tRESTARTS\tGPU% MEAN/PEAK\tGPU MEM\tPEAK RSS\tCPU\tENDED BY")
	var warnings []string
	for i, o := range outs {
		cpus := insts[i].CPUs
		util := "-"
		if o.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			util = fmt.Sprintf("%.0f/%d", o.GPUUtilMean, o.GPUUtilPeak)
		}
		fmt.Fprintf(tw, "%d\t%s%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%.1fs\t%s\n", o.Index, rank(i), o.PID, orDash(insts[i].GPUs), orDash(cpus),
			o.Wall.Round(time.Millisecond), o.Status(), o.Restarts, util, sizeString(o.GPUMemPeak), sizeString(o.PeakRSS), o.CPUSeconds, orDash(string(o.EndedBy)))
		warnings = append(warnings, o.Warnings...)
	}
	tw.Flush()
	for _, msg := range warnings {
		fmt.Fprintf(w, "warning: %s\n", msg)
	}
}
