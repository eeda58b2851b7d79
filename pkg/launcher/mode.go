package launcher

import (
	"fmt"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// runMode is the kind of run the supervisor runs: N instances, each in a
// slot of its own (instanceMode), or a task queue over N slots
// (queueMode). The supervisor never branches on the mode: where the two
// differ, it asks its mode. A mode holds no process, clock or lock — the
// supervisor calls it under its own lock — so its rules are tested alone,
// like kubelet's CPU manager policies behind their Policy interface.
type runMode interface {
	// first is slot i's first job (thenNow), or none: the slot is done
	// from the start (a queue with fewer tasks than slots), or waits for
	// one (a node of a queue over several, before the holder sends any).
	first(slot int) (job, then)
	// afterExit decides what follows the end of slot's job.
	afterExit(slot int, j job, e exitFacts) verdict
	// resume is what a waiting slot does now: the same answers as first.
	resume(slot int) (job, then)
	// stop starts nothing new from now on; why is what the summary
	// says, now whether running work ends too (other nodes are told so).
	// It reports whether this call stopped it (the first does).
	stop(why string, now bool) bool
	// drainsOnHangup: SIGHUP means "finish what runs, start nothing
	// new" (a queue, as GNU parallel) instead of being passed on to every
	// process (a run of instances, as srun).
	drainsOnHangup() bool
	// records: the mode records the jobs that finished (a queue's
	// joblog), so an end by a signal meant for gpulaunch too must not be
	// taken for a job's own (awaitStop).
	records() bool
	// manyStarts: the slots start many short processes (a queue). Its
	// starts and exits are logged at debug level, and the run gets
	// spare Ps for the slot threads (Run).
	manyStarts() bool
	// counts are a queue's figures for the board and the progress line;
	// false for a run of instances.
	counts(running int, elapsed time.Duration) (QueueStatus, bool)
	// fromNode applies a message from another node of a queue over
	// several (nodes.go, feed.go).
	fromNode(m NodeMessage) nodeVerdict
	// outbox hands over the messages for other nodes the rules queued.
	outbox() []NodeMessage
	// awaitsNodes: other nodes hold tasks whose ends this run must hear
	// of before it is over.
	awaitsNodes() bool
}

// alone is the part of a mode with no other nodes.
type alone struct{}

func (alone) fromNode(NodeMessage) nodeVerdict { return nodeVerdict{} }
func (alone) outbox() []NodeMessage            { return nil }
func (alone) awaitsNodes() bool                { return false }

// job is one thing a slot runs: an instance's command, or a task.
type job struct {
	path           string
	args           []string
	stdout, stderr string // files; "" the console
	// label is what the console labels its lines with: the instance's
	// number, or the task's.
	label int
	// task is the queue's task; Seq 0 for an instance.
	task Task
	// try counts the earlier runs of this job: an instance's restarts, a
	// task's retries. A job that ran before appends to its files.
	try int
}

func instanceJob(inst Instance) job {
	return job{path: inst.Path, args: inst.Args, stdout: inst.Stdout, stderr: inst.Stderr, label: inst.Index}
}

func taskJob(t Task) job {
	return job{path: t.Path, args: t.Args, stdout: t.Stdout, stderr: t.Stderr, label: t.Seq, task: t}
}

// again is the same job, to be run once more.
func (j job) again() job {
	j.try++
	return j
}

// name is the job as the log names it: "instance 2", "task 17".
func (j job) name(slot int) string {
	if j.task.Seq > 0 {
		return "task " + strconv.Itoa(j.task.Seq)
	}
	return "instance " + strconv.Itoa(slot)
}

// fields identify the job in JSON logs.
func (j job) fields(slot int) []zap.Field {
	if j.task.Seq > 0 {
		return []zap.Field{zap.Int("task", j.task.Seq), zap.Int("slot", slot)}
	}
	return []zap.Field{zap.Int("instance", slot), zap.Int("restart", j.try)}
}

// exitFacts is what the supervisor tells a mode about an ended job.
type exitFacts struct {
	code    int            // the exit status; -1 when a signal killed it
	signal  syscall.Signal // 0 when it exited
	by      Ended          // who ended it: EndedItself, or why gpulaunch did
	started time.Time
	wall    time.Duration
	// stopping: the run is stopping (a signal to gpulaunch, -K, -W, a
	// halt), or its group is (a group restart); nothing new starts.
	stopping bool
	// waitStarted: -W's clock runs already.
	waitStarted bool
}

// exitOf reads a wait status.
func exitOf(ws syscall.WaitStatus) (code int, sig syscall.Signal) {
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return ws.ExitStatus(), 0
}

// failed: a non-zero exit, or killed by a signal.
func (e exitFacts) failed() bool { return e.code != 0 }

// status is the exit as srun writes it: "0", "7", "SIGSEGV".
func (e exitFacts) status() string {
	return Outcome{Code: e.code, Signal: e.signal}.Status()
}

// then is what a slot does next.
type then int

const (
	// thenDone: the slot is done; it runs nothing more.
	thenDone then = iota
	// thenNow: the slot runs verdict.job at once, on its own thread (a
	// queue's next task, a retry).
	thenNow
	// thenLater: the slot runs verdict.job after verdict.delay, started
	// by the supervisor's loop (an instance's restart after its backoff).
	thenLater
	// thenWait: the slot has nothing to run yet, and may later: a queue
	// over several nodes, waiting for a task from the holder, or for
	// tasks a lost node held. The loop asks the mode again (resume) when a
	// node's message says so.
	thenWait
)

// verdict is a mode's answer to an exit: what the slot does next, and
// what the run does about it.
type verdict struct {
	then  then
	job   job
	delay time.Duration
	// record is a task that finished, for the joblog and the counts.
	record *TaskRecord
	// stopAll, when set, ends every other slot's process for that
	// reason and stops the run (-K, --halt now).
	stopAll Ended
	// startWait starts -W's clock.
	startWait bool
	// restartGroup ends every other slot's process and, once none runs,
	// starts every slot again after delay (--ddp's group restart).
	restartGroup bool
	// notes are what to tell the user, in order.
	notes []note
}

// note is one log line a rule asks for.
type note struct {
	level zapcore.Level
	msg   string
}

func (v *verdict) say(level zapcore.Level, format string, args ...any) {
	v.notes = append(v.notes, note{level, fmt.Sprintf(format, args...)})
}

// instanceMode runs one instance per slot, under Policy's rules.
type instanceMode struct {
	alone
	insts  []Instance
	policy Policy
}

func (m *instanceMode) first(slot int) (job, then) { return instanceJob(m.insts[slot]), thenNow }
func (m *instanceMode) resume(int) (job, then)     { return job{}, thenDone }

func (m *instanceMode) afterExit(slot int, j job, e exitFacts) verdict {
	return m.policy.afterInstanceExit(slot, j, e)
}

func (m *instanceMode) stop(string, bool) bool { return false }
func (m *instanceMode) drainsOnHangup() bool   { return false }
func (m *instanceMode) records() bool          { return false }
func (m *instanceMode) manyStarts() bool       { return false }

func (m *instanceMode) counts(int, time.Duration) (QueueStatus, bool) { return QueueStatus{}, false }

// queueMode feeds a Queue's tasks to the slots, under its rules
// (queue.go), and on the holder of a queue over several nodes to the
// other nodes too (nodes.go).
type queueMode struct{ q *Queue }

func (m queueMode) first(slot int) (job, then) {
	t, then := m.q.take(slot)
	return taskJob(t), then
}

func (m queueMode) resume(slot int) (job, then) { return m.first(slot) }

func (m queueMode) afterExit(slot int, j job, e exitFacts) verdict {
	return m.q.afterTaskExit(slot, j, e)
}

func (m queueMode) stop(why string, now bool) bool { return m.q.stop(why, now) }
func (m queueMode) drainsOnHangup() bool           { return true }
func (m queueMode) records() bool                  { return true }
func (m queueMode) manyStarts() bool               { return true }

func (m queueMode) counts(running int, elapsed time.Duration) (QueueStatus, bool) {
	return m.q.Counts(running, elapsed), true
}

func (m queueMode) fromNode(msg NodeMessage) nodeVerdict { return m.q.fromNode(msg) }
func (m queueMode) outbox() []NodeMessage                { return m.q.drainOutbox() }
func (m queueMode) awaitsNodes() bool                    { return m.q.holdingNodes() }

// feedMode runs the tasks another node's queue sends (feed.go).
type feedMode struct{ f *Feed }

func (m feedMode) first(slot int) (job, then) {
	t, then := m.f.take(slot)
	return taskJob(t), then
}

func (m feedMode) resume(slot int) (job, then) { return m.first(slot) }

func (m feedMode) afterExit(slot int, j job, e exitFacts) verdict {
	return m.f.afterTaskExit(slot, j, e)
}

// stop from this node's side: a signal here (rule 5).
func (m feedMode) stop(why string, _ bool) bool {
	first := m.f.stop(why)
	m.f.haltedHere = m.f.haltedHere || first
	return first
}

func (m feedMode) drainsOnHangup() bool { return true }
func (m feedMode) records() bool        { return true }
func (m feedMode) manyStarts() bool     { return true }

func (m feedMode) counts(running int, elapsed time.Duration) (QueueStatus, bool) {
	return m.f.counts(running, elapsed), true
}

func (m feedMode) fromNode(msg NodeMessage) nodeVerdict { return m.f.fromNode(msg) }
func (m feedMode) outbox() []NodeMessage                { return m.f.drainOutbox() }
func (m feedMode) awaitsNodes() bool                    { return false }
