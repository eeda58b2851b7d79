//go:build linux

package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/table"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// supervisor runs one Spec: it starts every slot, follows the exits,
// applies its mode's rules to them, and publishes each slot's state.
//
// Its goroutines and threads, all in one errgroup (Run):
//   - the loop (run): waits for an event and hands it to one method —
//     a signal to gpulaunch, a request from `gpulaunch signal`, a restart
//     whose backoff ran out, a wake of the waiting slots, a deadline
//     (--timeout, the kill wait, -W), a message from another node;
//   - the sampler (pkg/telemetry, folded in by sample.go): measures the
//     slots every tick;
//   - the reaper's sweep (pkg/process): reaps orphans once a second;
//   - output streams that outlive their process (pkg/process);
//   - and, outside the group, one locked thread per slot
//     (process.Thread), which forks the slot's processes, copies their
//     output, and hands each exit to handleExit there and then. Exits are
//     not events of the loop: a hand-off between threads on that path
//     cost a task queue a third of its throughput (`make bench`).
//
// Lock order (docs/architecture.md, "Lock order"): mu, then the board's
// lock (then a ring's), the joblog's or the progress line's. A
// process.LineMux's lock is taken by output copiers and the reaper's by
// forks and sweeps, never with mu held.
type supervisor struct {
	// What it runs, fixed when it starts.
	spec    Spec
	policy  Policy // spec.Policy, defaults filled in
	mode    runMode
	traits  modeTraits // the mode's, read as policy
	log     *zap.Logger
	board   *Board
	stdout  *process.LineMux     // the console's stdout, shared by every slot
	stderr  *process.LineMux     // and its stderr
	files   *process.OutputFiles // the jobs' output files
	devnull *os.File             // every process's stdin
	reaper  *process.Reaper      // gpulaunch as subreaper: forks registered, orphans swept
	begun   time.Time            // when the run started
	// fateOf is each slot's place in spec.Fates, -1: none; nil without
	// GPUs shared under MPS; clients follows their daemons' clients.
	fateOf  []int
	clients *mps.Clients

	// ctx ends when the loop does; timers deliver their events only
	// until then.
	ctx context.Context
	// leftovers runs the output streams that outlive their process.
	leftovers *errgroup.Group

	// mu guards everything below. The loop takes it for each event, the
	// sampler for each fold, and each slot thread to hand over an exit.
	mu       sync.Mutex
	slots    []slot
	running  int       // slots whose process runs or is being started
	pending  int       // restarts waiting out their backoff
	stopping bool      // nothing new starts: a signal, -K, -W or a halt
	stopWhy  job.Ended // the first reason to stop
	// stopped is closed when stopping begins (beginStop), for an exit
	// that waits to learn whether a stop came with it (stopGrace).
	stopped    chan struct{}
	interrupts int            // SIGINTs received: the second KILLs at once
	stopSignal syscall.Signal // the signal that stopped the run; 0: none
	// killTimer KILLs everything the kill wait after the first stop
	// (the first deadline stands); waitTimer is -W's clock.
	killTimer, waitTimer *time.Timer

	// Events for the loop. Buffered to the number of slots, so a timer
	// never blocks on a busy loop.
	idleC     chan struct{}  // the last running slot went idle
	restartC  chan int       // slot i's backoff ran out
	timeoutC  chan deadline  // a process ran past --timeout
	killC     chan deadline  // a process outlived the kill wait after its TERM
	killAllC  chan struct{}  // the kill wait after the first stop ran out
	waitOverC chan struct{}  // -W ran out
	wakeC     chan struct{}  // a verdict's WakeIn ran out: waiting slots are asked again
	endC      chan ending    // a verdict's EndIn ran out: a process still running is ended
	signalC   chan os.Signal // signals to gpulaunch
	// link carries a queue's messages to and from other nodes; nodeC
	// is its incoming side, nil (never ready) without one.
	link  taskqueue.NodeLink
	nodeC <-chan taskqueue.NodeMessage
}

// deadline is a timer's message about slot's process pid: it applies only
// if that process still runs.
type deadline struct{ slot, pid int }

// ending is a verdict's EndIn come: the process ends for why.
type ending struct {
	deadline
	why job.Ended
}

// Run starts every instance and supervises them until each has exited
// and everything they left behind is process.Reaped, and says how they ended.
func Run(spec Spec) (Result, error) {
	s, err := newSupervisor(spec)
	if err != nil {
		if spec.Board != nil {
			spec.Board.finish() // its readers must not wait for a run that never started
		}
		return Result{}, err
	}
	defer s.devnull.Close()
	defer s.board.finish()
	if s.traits.manyStarts && os.Getenv("GOMAXPROCS") == "" {
		// Each slot thread spends its life in a blocking poll, holding
		// one of Go's Ps (the right to run Go code) while it waits. When
		// no P is idle, Go's monitor takes them back as often as every
		// 20 µs, and every exit must find one again; spare Ps leave them
		// be. On a 2-CPU node that was a tenth of a task queue's rate
		// (`make bench`). A run of instances exits once per instance and
		// does not need them (the resize costs a start about a
		// millisecond). A GOMAXPROCS the user set stands.
		if want := min(len(spec.Instances)+2, 4*runtime.NumCPU()); want > runtime.GOMAXPROCS(0) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(want))
		}
	}
	signal.Notify(s.signalC, forwarded...)
	defer signal.Stop(s.signalC)
	// From the run's end, a signal is caught and dropped for good: the
	// run is over and its status stands, and gpulaunch still writes the
	// summary and the report. (It had its default action: gpulaunch died
	// of it half-way through the report.) Deferred after Stop, so it
	// runs first and leaves no gap.
	defer signal.Notify(afterRun, forwarded...)

	group, ctx := errgroup.WithContext(context.Background())
	ctx, endLoop := context.WithCancel(ctx)
	s.ctx, s.leftovers = ctx, group
	defer s.closeThreads()
	// The reaper's sweep joins the group before the slots start: a
	// process that ends during the starts and leaves a stream behind
	// (a daemon still holding its pipe) hands it to leftovers from its
	// slot's thread, and a group counting nothing yet would have that
	// Go race with Wait (the race detector caught it once in make test:
	// TestQueueCrashThenResumeRunsEachTaskOnce). Forks and sweeps share
	// the reaper's lock, so sweeping during the starts is safe.
	group.Go(func() error { s.reaper.SweepUntil(ctx); return nil })
	if s.clients != nil {
		group.Go(func() error { s.followClients(ctx); return nil })
	}
	startErr := s.startAll()
	sm := s.newSampler(spec, s.policy.sampleEvery())
	// One sample now, thrown away, to learn whether the backend measures
	// GPU use at all: a run shorter than the interval must still say so.
	// After the starts, so that it does not delay them.
	sm.GPUUsage()
	group.Go(func() error { defer endLoop(); return s.run(ctx) })
	group.Go(func() error {
		return sm.Run(ctx, func(now time.Time, procs *process.ProcTable, usage []gpu.Usage) { s.fold(now, procs, usage, sm) })
	})
	err = group.Wait()
	s.stopTimers()
	if err = errors.Join(startErr, err); err != nil {
		return Result{}, err
	}
	s.board.finish()
	res := Result{Outcomes: s.outcomes(spec.GPUs != nil && s.policy.Monitor > 0), Signal: s.stopSignal}
	if f := s.traits.failure(); f != nil {
		rc := *f
		rc.readErrorFile()
		if rc.MPS != nil {
			m := *rc.MPS
			m.Said = lastLine(s.board.Output(rc.Instance))
			rc.MPS = &m
		}
		res.RootCause = &rc
	}
	return res, nil
}

func newSupervisor(spec Spec) (*supervisor, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	n := len(spec.Instances)
	s := &supervisor{
		spec: spec, policy: spec.Policy, log: spec.Log, board: spec.Board, devnull: devnull, reaper: process.NewReaper(), begun: time.Now(),
		slots: make([]slot, n),
		idleC: make(chan struct{}, 1), restartC: make(chan int, n), timeoutC: make(chan deadline, n), killC: make(chan deadline, n),
		killAllC: make(chan struct{}, 1), waitOverC: make(chan struct{}, 1), wakeC: make(chan struct{}, 1), endC: make(chan ending, n), signalC: make(chan os.Signal, 16),
		stopped: make(chan struct{}),
	}
	if spec.Signals != nil {
		s.signalC = spec.Signals
	}
	s.policy.KillWait = s.policy.killWait()
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if spec.Link != nil {
		s.link, s.nodeC = spec.Link, spec.Link.Messages()
	}
	s.stdout = process.NewLineMux(spec.Stdout, func(err error) { s.outputLost("stdout", err) })
	s.stderr = process.NewLineMux(spec.Stderr, func(err error) { s.outputLost("stderr", err) })
	s.files = process.NewOutputFiles(spec.OpenMode, func(path string, err error) { s.outputLost(path, err) })
	if s.board == nil {
		s.board = NewBoard(RunInfo{}, spec.Instances)
	}
	s.mode, s.traits = modeOf(spec, s.policy)
	if s.traits.fate != nil { // a mode that keeps the GPUs' fates (modeOf)
		s.fateOf = make([]int, n)
		for i := range s.fateOf {
			s.fateOf[i] = -1
		}
		for g, f := range spec.Fates {
			for _, k := range f.Slots {
				if k >= 0 && k < n {
					s.fateOf[k] = g
				}
			}
		}
		s.clients = mps.NewClients(spec.Fates)
	}
	for i, inst := range spec.Instances {
		s.slots[i].inst, s.slots[i].gpus = inst, telemetry.NewGPUWatch(inst.GPUUUIDs, inst.Env)
		s.slots[i].tl.Begun = s.begun
	}
	return s, nil
}

// run is the loop: until no slot runs or waits to restart, it waits for
// an event and hands it to the method that handles it. Then it ends what
// the processes left behind.
func (s *supervisor) run(ctx context.Context) error {
	for !s.idle() {
		select {
		case <-s.idleC:
		case sig := <-s.signalC:
			s.handleSignal(sig.(syscall.Signal))
		case req := <-s.board.signals:
			req.reply <- s.signalFromClient(req)
		case i := <-s.restartC:
			s.restart(i)
		case d := <-s.timeoutC:
			s.timedOut(d)
		case d := <-s.killC:
			s.killLate(d)
		case e := <-s.endC:
			s.endLate(e)
		case <-s.killAllC:
			s.killAll()
		case <-s.waitOverC:
			s.waitOver()
		case <-s.wakeC:
			s.wake()
		case m := <-s.nodeC:
			s.fromNode(m)
		}
	}
	if left := s.reaper.EndDescendants(s.policy.KillWait, s.spec.Spare...); left > 0 {
		s.log.Info(fmt.Sprintf("ended %d process(es) the instances left behind", left))
	}
	return nil
}

// idle: no slot runs, is about to restart or waits for a task, and no
// other node holds a task whose end this run must hear of.
func (s *supervisor) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running == 0 && s.pending == 0 && !s.traits.awaitsNodes()
}

// startAll starts every slot's first job, all at once: every slot's
// thread is made and bound, and then every slot forks, each on its own
// thread. When a slot's thread cannot be bound, nothing starts, and Run
// returns the error. (A job that cannot start is another matter: see
// apply.)
//
// Each start waits for its thread to be made and bound and for its
// child's exec (the fork is CLONE_VFORK); one slot after the other, N
// starts cost N of those whatever the node's CPUs. At once, they overlap
// as far as the CPUs allow. On this project's 2-CPU machine both ways
// measured the same (perf stat -r 15 of -n 16 -G 0 -O -- true: 0.20-0.23
// s each, loaded), so the gain is for nodes with many cores, where a
// rank's start is an exec of Python or an MPI app, not of true.
func (s *supervisor) startAll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var starting []int
	var threads []*process.Thread // starting's, read outside mu
	for i := range s.slots {
		if j, then := s.mode.first(i); s.settle(i, then, j, 0) {
			starting = append(starting, i)
			threads = append(threads, s.threadOf(i))
		}
	}
	// Every slot counts as running from now: an early exit must not find
	// the run idle while the others are still starting.
	s.running += len(starting)
	s.mu.Unlock()
	err := bindAll(starting, threads)
	if err == nil {
		dones := make([]<-chan struct{}, 0, len(starting))
		for k, i := range starting {
			done, _ := threads[k].Begin(s.firstStart(i)) // bound: no error
			dones = append(dones, done)
		}
		for _, done := range dones {
			<-done
		}
	}
	s.mu.Lock()
	if err != nil {
		s.running -= len(starting)
		s.stopAll(job.EndedSignalled)
		return err
	}
	s.publishCounts()
	s.flushNodes()
	return nil
}

// bindAll waits for the threads of slots to be bound; the first that
// could not be is the error.
func bindAll(slots []int, threads []*process.Thread) error {
	var first error
	for k, i := range slots {
		if err := threads[k].Bound(); err != nil && first == nil {
			first = fmt.Errorf("instance %d: %w", i, err)
		}
	}
	return first
}

// threadOf is slot i's thread, made (and bound, in the background) on
// first use; it then follows the slot's processes. The caller holds mu.
func (s *supervisor) threadOf(i int) *process.Thread {
	sl := &s.slots[i]
	if sl.thread == nil {
		sl.thread = process.NewThread(s.reaper, sl.inst.Binding, s.leftovers, func(pid int, end process.Reaped, fork process.SpawnFunc) *process.Process {
			return s.handleExit(i, pid, end, fork)
		})
	}
	return sl.thread
}

// firstStart is what slot i's thread runs to start the slot's job, which
// the caller counted as running already.
func (s *supervisor) firstStart(i int) func(fork process.SpawnFunc) *process.Process {
	return func(fork process.SpawnFunc) *process.Process {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running-- // apply counts it again as it starts the job
		s.apply(i, job.Verdict{Then: job.Now, Job: s.slots[i].job}, fork)
		return s.slots[i].proc
	}
}

// startSlot starts slot i's job on the slot's own thread. The caller holds
// mu and counts the slot as running already.
func (s *supervisor) startSlot(i int) error {
	t := s.threadOf(i)
	s.mu.Unlock()
	bindErr := t.Start(s.firstStart(i))
	s.mu.Lock()
	if bindErr != nil {
		return fmt.Errorf("instance %d: %w", i, bindErr)
	}
	return nil
}

// startOn starts slot i's job through fork, on the slot's thread. The
// caller holds mu, and counts the slot as running already: startOn lets
// go of mu while it makes the pipes and forks, so that the slots start at
// the same time (a slot thread that finds mu taken sleeps, and waking it
// costs more than the work), and the run must not look finished
// meanwhile. A stop that came in meanwhile ends the new process at once.
func (s *supervisor) startOn(i int, fork process.SpawnFunc) error {
	sl := &s.slots[i]
	j := sl.job
	env := sl.environ(j)
	s.mu.Unlock()
	proc, err := s.forkJob(i, j, env, fork)
	s.mu.Lock()
	if err != nil {
		return err
	}
	sl.began(proc, time.Now())
	if s.policy.Timeout > 0 {
		d := deadline{i, proc.PID}
		sl.timer = time.AfterFunc(s.policy.Timeout, func() { deliver(s.ctx, s.timeoutC, d) })
	}
	switch {
	case s.stopping:
		s.terminate(i, s.stopWhy)
	case s.traits.endingNow(i) != job.EndedItself:
		s.terminate(i, s.traits.endingNow(i))
	}
	s.publish(i)
	s.noteStart(i)
	return nil
}

// handleExit is the end of slot i's process pid, on the slot's thread:
// the mode decides what follows, and the slot's next process, when it
// starts one at once, is forked here too and returned.
func (s *supervisor) handleExit(i, pid int, end process.Reaped, fork process.SpawnFunc) *process.Process {
	reaped := time.Now() // the exit's time: not the waits' below
	s.awaitStop(i, end)
	fault := s.awaitFault(i, end)
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := &s.slots[i]
	s.running--
	e := s.runFacts(sl.ended(end, reaped))
	e.Fault = fault
	s.noteExit(i, pid, e)
	s.apply(i, s.mode.afterExit(i, sl.job, e), fork)
	s.publish(i)
	s.publishCounts()
	s.flushNodes()
	if s.running == 0 && s.pending == 0 {
		s.signalIdle()
	}
	return sl.proc
}

// runFacts completes the facts of an exit with the run's: whether it
// stops, whether -W's clock runs, how many slots still run.
func (s *supervisor) runFacts(e job.Exit) job.Exit {
	e.Stopping, e.WaitStarted, e.Running = s.stopping, s.waitTimer != nil, s.running
	return e
}

// beginStop: nothing new starts from now on, for why. The caller holds mu.
func (s *supervisor) beginStop(why job.Ended) {
	s.stopping, s.stopWhy = true, why
	close(s.stopped)
}

// stopGrace is how long the end of a queue's task by a signal a scheduler
// sends waits for a stop of gpulaunch's own. scancel and the time limit
// signal every process of a Slurm step at once: the task's TERM can be
// process.Reaped before gpulaunch's own TERM is handled, and the task would be
// recorded as failed instead of left for --resume. The wait costs only
// tasks that die of such a signal while gpulaunch does not.
const stopGrace = 2 * time.Second

// awaitStop waits, on slot i's thread and without mu, for a stop that
// may come with a queue task's death by TERM, INT or HUP that gpulaunch
// did not send; handleSignal then marks the task ended by gpulaunch.
func (s *supervisor) awaitStop(i int, end process.Reaped) {
	ws := end.Status
	if !s.traits.records || !ws.Signaled() {
		return
	}
	switch ws.Signal() {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP:
	default:
		return
	}
	s.mu.Lock()
	ours := s.slots[i].endedBy != job.EndedItself
	s.mu.Unlock()
	if ours {
		return
	}
	select {
	case <-s.stopped:
	case <-time.After(stopGrace):
	}
}

// apply carries out a mode's verdict on slot i. A job it starts that
// cannot start (its output file cannot be opened, the fork fails) ends as
// a process would, with status 126 as a shell's for a command it cannot
// execute, and the mode's verdict on that is carried out in turn: a queue
// records the task as failed and takes the next one.
func (s *supervisor) apply(i int, v job.Verdict, fork process.SpawnFunc) {
	sl := &s.slots[i]
	for {
		s.effects(i, v)
		if !s.settle(i, v.Then, v.Job, v.Delay) {
			return
		}
		s.running++
		err := s.startOn(i, fork)
		if err == nil {
			return
		}
		s.running--
		v = s.mode.afterExit(i, sl.job, s.notStarted(i, err))
	}
}

// settle carries out what then says of slot i's next job j, short of
// starting it: the slot is done, starts j after delay (from the loop), or
// waits. It reports whether j starts now (job.Now), which the caller does
// on the slot's thread (startOn) or hands to it (startCounted); the
// slot's job is j from then. The one place that decides between a start
// and a slot's end: its first job, a verdict, a wake.
func (s *supervisor) settle(i int, then job.Then, j job.Job, delay time.Duration) (startNow bool) {
	sl := &s.slots[i]
	switch then {
	case job.Done:
		s.final(i)
		return false
	case job.Later:
		sl.job, sl.pending = j, true
		s.pending++
		time.AfterFunc(delay, func() { deliver(s.ctx, s.restartC, i) })
		return false
	case job.Wait:
		s.wait(i)
		return false
	}
	sl.job = j
	return true
}

// startCounted starts slot i's job, from the loop or a timer, on the
// slot's thread; the caller counts it as running already. A thread that
// cannot be bound leaves the slot done.
func (s *supervisor) startCounted(i int) {
	if err := s.startSlot(i); err != nil {
		s.running--
		s.log.Error(err.Error())
		s.final(i)
	}
}

// effects carries out what a verdict asks of the run: its notes, its
// record (of slot i's task; i < 0: of another node's), a stop, -W's
// clock, the end of the other slots' processes, a wake of the waiting
// slots.
func (s *supervisor) effects(i int, v job.Verdict) {
	for _, n := range v.Notes {
		s.log.Log(n.Level, n.Msg)
	}
	if v.Record != nil {
		s.recordTask(i, *v.Record)
	}
	if v.StopAll != "" {
		s.stopAll(v.StopAll)
		s.armKill()
	}
	if v.StartWait {
		s.waitTimer = time.AfterFunc(s.policy.WaitAfterFirst, func() { deliver(s.ctx, s.waitOverC, struct{}{}) })
	}
	if v.EndOthers != "" {
		for k := range s.slots {
			switch {
			case v.Among != nil && !slices.Contains(v.Among, k):
			case v.EndIn > 0:
				d, why := deadline{k, s.slots[k].pid}, v.EndOthers
				time.AfterFunc(v.EndIn, func() { deliver(s.ctx, s.endC, ending{d, why}) })
			default:
				s.terminate(k, v.EndOthers)
			}
		}
	}
	if v.Wake {
		s.wakeWaiting()
	}
	switch {
	case v.Recovery != nil:
		go s.awaitRecovery(*v.Recovery, v.WakeIn)
	case v.WakeIn > 0:
		time.AfterFunc(v.WakeIn, func() { deliver(s.ctx, s.wakeC, struct{}{}) })
	}
}

// notStarted records that slot i's job could not start, as an exit with
// status 126, and returns what the mode needs to know of it.
func (s *supervisor) notStarted(i int, err error) job.Exit {
	sl := &s.slots[i]
	now := time.Now()
	s.log.Warn(fmt.Sprintf("%s could not start (%v): it counts as failed, with exit status %d", sl.job.Name(i), err, exitNotStarted))
	sl.started, sl.exited = now, true
	sl.out.Wall, sl.out.Code, sl.out.Signal, sl.out.EndedBy = 0, exitNotStarted, 0, job.EndedItself
	if !sl.first.IsZero() { // a restart that could not start: the wall runs from the first start
		sl.out.Wall = now.Sub(sl.first)
	}
	return s.runFacts(job.Exit{Code: exitNotStarted, Started: now})
}

// exitNotStarted is the status of a job that could not start: a shell's
// for a command it found but cannot execute.
const exitNotStarted = 126

// recordTask writes a finished task to the joblog and the counts of slot
// i, which ran it; i < 0: another node did.
func (s *supervisor) recordTask(i int, rec job.Record) {
	if i >= 0 {
		out := &s.slots[i].out
		out.Tasks++
		if rec.Failed() {
			out.TasksFailed++
		}
	}
	switch {
	case s.traits.joblog == nil:
	case i < 0:
		s.traits.joblog.Add(rec) // written when fromNode's turn ends, before it answers
	default:
		s.sayJoblogError(s.traits.joblog.Record(rec))
	}
}

// sayJoblogError says why a record was not written: an error (a --resume
// would run its task again), or a warning for a stream whose reader has
// gone (JoblogStream's rule 4).
func (s *supervisor) sayJoblogError(err error) {
	switch {
	case errors.Is(err, taskqueue.ErrReaderGone):
		s.log.Warn("--joblog: " + err.Error())
	case err != nil:
		s.log.Error("--joblog: " + err.Error())
	}
}

// restart starts slot i again once its backoff ran out, unless the run
// stopped meanwhile.
func (s *supervisor) restart(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := &s.slots[i]
	s.pending--
	sl.pending = false
	if s.stopping || sl.done {
		s.final(i)
		return
	}
	s.running++
	s.startCounted(i)
}

// final: slot i will not run again; its output ends once drained.
func (s *supervisor) final(i int) {
	sl := &s.slots[i]
	if sl.done {
		return
	}
	sl.done = true
	s.publish(i)
	ring := s.board.Output(i)
	go func() { sl.readers.Wait(); ring.Close() }()
}

// stopAll stops the run: nothing new starts, every running process is
// ended for why, and a slot waiting to restart is done.
func (s *supervisor) stopAll(why job.Ended) {
	if !s.stopping {
		s.beginStop(why)
	}
	s.mode.stop(string(why), true)
	for i := range s.slots {
		s.terminate(i, why)
		if sl := &s.slots[i]; sl.pending && !sl.done {
			sl.pending = false // its timer still comes, and finds it done
			s.final(i)
		}
	}
	s.wakeWaiting() // they find nothing to run, and are done
}

// terminate ends slot i's process for why: TERM to its group now, KILL
// after the kill wait if it is still there.
func (s *supervisor) terminate(i int, why job.Ended) {
	sl := &s.slots[i]
	if sl.pid == 0 {
		return
	}
	if sl.endedBy == job.EndedItself {
		sl.endedBy = why
	}
	s.publish(i)
	s.signalSlot(i, syscall.SIGTERM)
	d := deadline{i, sl.pid}
	time.AfterFunc(s.policy.KillWait, func() { deliver(s.ctx, s.killC, d) })
}

// armKill sets the KILL that follows the first stop by the kill wait;
// the first deadline stands.
func (s *supervisor) armKill() {
	if s.killTimer == nil {
		s.killTimer = time.AfterFunc(s.policy.KillWait, func() { deliver(s.ctx, s.killAllC, struct{}{}) })
	}
}

// signalSlot sends sig to slot i's process group: the instance and what it
// started (each slot's process leads a group of its own).
func (s *supervisor) signalSlot(i int, sig syscall.Signal) {
	if pid := s.slots[i].pid; pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// handleSignal applies onSignal's decision about a signal to gpulaunch.
func (s *supervisor) handleSignal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig == syscall.SIGINT {
		s.interrupts++
	}
	a := onSignal(sig, s.traits.drainsOnHangup, s.stopping, s.interrupts)
	// whether anything runs or waits to: read before the stop below wakes
	// the waiting slots, which then are done (a group in its backoff)
	busy := s.running > 0 || s.pending > 0
	defer s.flushNodes()
	if a.drain {
		if s.mode.stop("SIGHUP", false) {
			s.log.Info("SIGHUP: the running tasks finish, no new task starts (TERM or Ctrl-C ends them)")
		}
		s.wakeWaiting()
		s.publishCounts()
		return
	}
	for i := range s.slots {
		s.signalSlot(i, sig)
	}
	if a.stop {
		s.mode.stop(job.SignalName(sig), true)
		s.wakeWaiting()
	}
	if a.beginStop {
		// A scheduled restart sees stopping when its timer fires.
		s.log.Info(fmt.Sprintf("%s: passed to every instance; KILL in %s", job.SignalName(sig), s.policy.KillWait))
		s.beginStop(job.EndedSignalled)
		if busy {
			// a signal that finds every instance ended stopped nothing:
			// the run finished (it comes between the last exit and the
			// loop's end)
			s.stopSignal = sig
		}
		for i := range s.slots {
			if sl := &s.slots[i]; sl.pid > 0 && sl.endedBy == job.EndedItself {
				sl.endedBy = job.EndedSignalled
				s.publish(i)
			}
		}
		s.armKill()
	}
	if a.killNow {
		s.killEvery() // mu is held: killAll would take it again and hang the loop
	}
}

// signalFromClient sends a `gpulaunch signal` request's signal.
func (s *supervisor) signalFromClient(req signalRequest) signalReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sent []Signalled
	for i := range s.slots {
		if pid := s.slots[i].pid; (req.instance == i || req.instance == AllInstances) && pid > 0 {
			s.signalSlot(i, req.sig)
			sent = append(sent, Signalled{Instance: i, PID: pid})
		}
	}
	switch {
	case len(sent) > 0:
		s.log.Info(fmt.Sprintf("%s from `gpulaunch signal`: sent to %s", job.SignalName(req.sig), describeSent(sent)))
		return signalReply{sent: sent}
	case req.instance == AllInstances:
		return signalReply{err: errors.New("no instance is running")}
	}
	return signalReply{err: fmt.Errorf("instance %d is not running (state %s)", req.instance, s.slots[req.instance].state())}
}

// timedOut ends a process that ran past --timeout.
func (s *supervisor) timedOut(d deadline) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots[d.slot].pid == d.pid {
		s.log.Info(fmt.Sprintf("instance %d ran past --timeout %s: ending it", d.slot, s.policy.Timeout))
		s.terminate(d.slot, job.EndedTimeout)
	}
}

// endLate ends a process a verdict's EndIn gave time to end by itself.
func (s *supervisor) endLate(e ending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots[e.slot].pid == e.pid && e.pid > 0 {
		s.terminate(e.slot, e.why)
	}
}

// killLate KILLs a process that outlived the kill wait after its TERM.
func (s *supervisor) killLate(d deadline) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots[d.slot].pid == d.pid {
		_ = syscall.Kill(-d.pid, syscall.SIGKILL)
	}
}

// killAll KILLs every running process group: the kill wait after the
// first stop ran out.
func (s *supervisor) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killEvery()
}

// killEvery KILLs every running process group. The caller holds mu.
func (s *supervisor) killEvery() {
	for i := range s.slots {
		s.signalSlot(i, syscall.SIGKILL)
	}
}

// waitOver: -W ran out after the first instance was done.
func (s *supervisor) waitOver() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.Info(fmt.Sprintf("--wait %s after the first exit: ending the others", s.policy.WaitAfterFirst))
	s.stopAll(job.EndedWait)
	s.armKill()
}

// outputLost warns, once per destination, that output to it is dropped
// from now on; the run goes on.
func (s *supervisor) outputLost(where string, err error) {
	s.log.Warn(fmt.Sprintf("writing %s failed (%v): the instances' output to it is dropped from now on (`gpulaunch logs` still has the last %d KiB of each); the run goes on",
		where, err, process.RingSize>>10))
}

// publish writes slot i's row of the live table from the slot's facts:
// the one place that does, so that `gpulaunch status`, the summary and
// the report (from outcome) cannot disagree.
func (s *supervisor) publish(i int) {
	s.publishRow(i)
	// A fault of its GPU's MPS server changes what its neighbours are
	// (failing with the server) before any event of theirs: their rows
	// are written too, so status says so at once.
	if s.fateOf != nil && s.fateOf[i] >= 0 {
		for k, g := range s.fateOf {
			if k != i && g == s.fateOf[i] {
				s.publishRow(k)
			}
		}
	}
}

// publishRow writes slot i's row alone.
func (s *supervisor) publishRow(i int) {
	sl := &s.slots[i]
	sl.fate, sl.withServer = s.traits.fateOf(i)
	s.board.update(i, func(row *InstanceStatus) { sl.row(i, row) })
}

// publishCounts gives a queue's counts to the board and the progress line.
func (s *supervisor) publishCounts() {
	if s.traits.counts == nil {
		return
	}
	qs := s.traits.counts.Counts(s.running, time.Since(s.begun))
	s.board.setQueue(qs)
	if s.traits.progress != nil {
		s.traits.progress(qs)
	}
}

// noteStart logs a start: at info for an instance, at debug for the many
// tasks of a queue (whose message is then built only when read).
func (s *supervisor) noteStart(i int) {
	sl := &s.slots[i]
	if !s.traits.manyStarts {
		sl.tl.Event(sl.started, "start", fmt.Sprintf("pid %d", sl.pid))
	}
	level := s.startLevel()
	if !s.log.Core().Enabled(level) {
		return
	}
	j, b := sl.job, sl.inst.Binding
	msg := fmt.Sprintf("%s started in slot %d: pid %d", j.Name(i), i, sl.pid)
	if j.Task.Seq == 0 {
		msg = fmt.Sprintf("%s started: pid %d, GPU %s, CPUs %s, memory %s", j.Name(i), sl.pid, table.OrDash(sl.inst.GPUs), b.DescribeCPUs(), table.OrDash(b.DescribeMemory()))
	}
	fields := append(j.Fields(i), zap.Int("pid", sl.pid), zap.String("gpus", sl.inst.GPUs), zap.String("cpus", b.CPUs.String()),
		zap.String("mem_policy", string(b.MemPolicy)), zap.String("mem_nodes", b.MemNodes.String()))
	s.log.Log(level, msg, fields...)
}

// noteExit logs an exit, at the level of the mode's starts.
func (s *supervisor) noteExit(i, pid int, e job.Exit) {
	if !s.traits.manyStarts {
		detail := e.Status()
		if e.By != job.EndedItself {
			detail += " (" + string(e.By) + ")"
		}
		s.slots[i].tl.Event(e.Started.Add(e.Wall), "exit", detail)
	}
	level := s.startLevel()
	if !s.log.Core().Enabled(level) {
		return
	}
	j := s.slots[i].job
	fields := append(j.Fields(i), zap.Int("pid", pid), zap.Int("exit_code", e.Code), zap.String("signal", job.SignalName(e.Signal)),
		zap.Duration("wall", e.Wall), zap.String("ended_by", string(e.By)))
	s.log.Log(level, fmt.Sprintf("%s exited: %s after %s", j.Name(i), e.Status(), e.Wall.Round(time.Millisecond)), fields...)
}

func (s *supervisor) startLevel() zapcore.Level {
	if s.traits.manyStarts {
		return zap.DebugLevel
	}
	return zap.InfoLevel
}

// stopTimers stops the run-wide timers once the run is over.
func (s *supervisor) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range []*time.Timer{s.killTimer, s.waitTimer} {
		if t != nil {
			t.Stop()
		}
	}
}

// closeThreads ends the slot threads; every slot is idle by then.
func (s *supervisor) closeThreads() {
	for i := range s.slots {
		if t := s.slots[i].thread; t != nil {
			t.Close()
		}
	}
}

// outcomes are the slots' outcomes once the run is over; verify: launch
// verification judges an instance that ended before it was judged while
// running (verifyAfter, verifyGrace) on the samples it had.
func (s *supervisor) outcomes(verify bool) []Outcome {
	outs := make([]Outcome, len(s.slots))
	for i := range s.slots {
		w := s.slots[i].gpus
		if verify {
			for _, msg := range w.Verify(i) {
				s.log.Warn(msg)
				w.Warnings = append(w.Warnings, msg)
			}
		}
		outs[i] = s.slots[i].outcome(i)
		tl := &s.slots[i].tl
		outs[i].Series, outs[i].Events, outs[i].EventsDropped = tl.Series(), tl.Events, tl.Dropped
	}
	return outs
}

// deliver sends a timer's event to the loop, unless the loop has ended.
func deliver[T any](ctx context.Context, ch chan<- T, v T) {
	select {
	case ch <- v:
	case <-ctx.Done():
	}
}
