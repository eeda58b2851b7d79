//go:build linux

package launcher

import (
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// runMode is the kind of run the supervisor runs: N instances, each in a
// slot of its own (instanceMode), as one group (groupMode, --ddp), or a
// task queue over N slots (queueMode; feedMode on a node of a queue over
// several). The supervisor never branches on the mode: where they differ,
// it asks its mode. A mode holds no process, clock or lock — the
// supervisor calls it under its own lock — so its rules are tested alone,
// like kubelet's CPU manager policies behind their Policy interface.
type runMode interface {
	// first is slot i's first job (job.Now), or none: the slot is done
	// from the start (a queue with fewer tasks than slots), or waits for
	// one (a node of a queue over several, before the holder sends any).
	first(slot int) (job.Job, job.Then)
	// afterExit decides what follows the end of slot's job.
	afterExit(slot int, j job.Job, e job.Exit) job.Verdict
	// resume is what a waiting slot does now: the same answers as first.
	resume(slot int) (job.Job, job.Then)
	// stop starts nothing new from now on; why is what the summary
	// says, now whether running work ends too (other nodes are told so).
	// It reports whether this call stopped it (the first does).
	stop(why string, now bool) bool
	// ending is why a process that starts now must be ended at once (a
	// group restart under way: the others are being ended), or
	// job.EndedItself.
	ending() job.Ended
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
	counts(running int, elapsed time.Duration) (taskqueue.QueueStatus, bool)
	// fromNode applies a message from another node of a queue over
	// several (taskqueue's nodes.go, feed.go); the verdict concerns no
	// slot.
	fromNode(m taskqueue.NodeMessage) job.Verdict
	// outbox hands over the messages for other nodes the rules queued.
	outbox() []taskqueue.NodeMessage
	// awaitsNodes: other nodes hold tasks whose ends this run must hear
	// of before it is over.
	awaitsNodes() bool
	// firstFailure is the failure that ended a group (--ddp), whose
	// error file holds the root cause; nil for other modes, and for a
	// group that did not fail.
	firstFailure() *Failure
}

// Work is what a run's slots do, besides running each its instance (a
// nil Work, under Policy's rules, as one group with Policy.Group): the
// tasks of a queue (QueueTasks), or those another node's queue sends
// (FeedTasks).
type Work interface {
	mode() runMode
	// journal is the joblog finished tasks are recorded in (nil: none
	// here) and who is told the queue's counts at every change (nil:
	// nobody).
	journal() (*taskqueue.Joblog, func(taskqueue.QueueStatus))
}

// QueueTasks makes the slots run Queue's tasks one after another
// (KillOnBadExit, WaitAfterFirst and Restarts do not apply; the queue has
// its tries and --halt), and on the holder of a queue over several nodes
// hands tasks to the other nodes too.
type QueueTasks struct{ Queue *taskqueue.Queue }

// FeedTasks makes the slots run the tasks the holder of a queue over
// several nodes sends (taskqueue.Feed).
type FeedTasks struct{ Feed *taskqueue.Feed }

func (w QueueTasks) mode() runMode { return queueMode{w.Queue} }
func (w FeedTasks) mode() runMode  { return feedMode{w.Feed} }

func (w QueueTasks) journal() (*taskqueue.Joblog, func(taskqueue.QueueStatus)) {
	return w.Queue.Joblog, w.Queue.Progress
}

// journal: the holder records a node's tasks, and the node's progress
// line is not drawn.
func (w FeedTasks) journal() (*taskqueue.Joblog, func(taskqueue.QueueStatus)) { return nil, nil }

// modeOf is the mode that runs spec's work, with policy (spec.Policy, its
// defaults filled in).
func modeOf(spec Spec, policy Policy) runMode {
	switch {
	case spec.Work != nil:
		return spec.Work.mode()
	case policy.DDP:
		return newGroupMode(spec.Instances, policy)
	}
	return &instanceMode{insts: spec.Instances, policy: policy}
}

// alone is the part of a mode with no other nodes.
type alone struct{}

func (alone) fromNode(taskqueue.NodeMessage) job.Verdict { return job.Verdict{} }
func (alone) outbox() []taskqueue.NodeMessage            { return nil }
func (alone) awaitsNodes() bool                          { return false }

// instanceJob is the job of instance inst.
func instanceJob(inst Instance) job.Job {
	return job.Job{Path: inst.Path, Args: inst.Args, Stdout: inst.Stdout, Stderr: inst.Stderr, Label: inst.Index}
}

// instanceMode runs one instance per slot, under Policy's rules.
type instanceMode struct {
	alone
	insts  []Instance
	policy Policy
}

func (m *instanceMode) first(slot int) (job.Job, job.Then) {
	return instanceJob(m.insts[slot]), job.Now
}
func (m *instanceMode) resume(int) (job.Job, job.Then) { return job.Job{}, job.Done }

func (m *instanceMode) afterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return m.policy.afterInstanceExit(slot, j, e)
}

func (m *instanceMode) stop(string, bool) bool { return false }
func (m *instanceMode) firstFailure() *Failure { return nil }
func (m *instanceMode) ending() job.Ended      { return job.EndedItself }
func (m *instanceMode) drainsOnHangup() bool   { return false }
func (m *instanceMode) records() bool          { return false }
func (m *instanceMode) manyStarts() bool       { return false }

func (m *instanceMode) counts(int, time.Duration) (taskqueue.QueueStatus, bool) {
	return taskqueue.QueueStatus{}, false
}

// queueMode feeds a Queue's tasks to the slots, under its rules
// (taskqueue's queue.go), and on the holder of a queue over several nodes
// to the other nodes too (nodes.go).
type queueMode struct{ q *taskqueue.Queue }

func (m queueMode) first(slot int) (job.Job, job.Then) {
	t, then := m.q.Take(slot)
	return job.OfTask(t), then
}

func (m queueMode) resume(slot int) (job.Job, job.Then) { return m.first(slot) }

func (m queueMode) afterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return m.q.AfterTaskExit(slot, j, e)
}

func (m queueMode) stop(why string, now bool) bool { return m.q.Stop(why, now) }
func (m queueMode) ending() job.Ended              { return job.EndedItself }
func (m queueMode) drainsOnHangup() bool           { return true }
func (m queueMode) firstFailure() *Failure         { return nil }
func (m queueMode) records() bool                  { return true }
func (m queueMode) manyStarts() bool               { return true }

func (m queueMode) counts(running int, elapsed time.Duration) (taskqueue.QueueStatus, bool) {
	return m.q.Counts(running, elapsed), true
}

func (m queueMode) fromNode(msg taskqueue.NodeMessage) job.Verdict { return m.q.FromNode(msg) }
func (m queueMode) outbox() []taskqueue.NodeMessage                { return m.q.DrainOutbox() }
func (m queueMode) awaitsNodes() bool                              { return m.q.HoldingNodes() }

// feedMode runs the tasks another node's queue sends (taskqueue's feed.go).
type feedMode struct{ f *taskqueue.Feed }

func (m feedMode) first(slot int) (job.Job, job.Then) {
	t, then := m.f.Take(slot)
	return job.OfTask(t), then
}

func (m feedMode) resume(slot int) (job.Job, job.Then) { return m.first(slot) }

func (m feedMode) afterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return m.f.AfterTaskExit(slot, j, e)
}

func (m feedMode) stop(why string, _ bool) bool { return m.f.StopHere(why) }
func (m feedMode) ending() job.Ended            { return job.EndedItself }
func (m feedMode) drainsOnHangup() bool         { return true }
func (m feedMode) firstFailure() *Failure       { return nil }
func (m feedMode) records() bool                { return true }
func (m feedMode) manyStarts() bool             { return true }

func (m feedMode) counts(running int, elapsed time.Duration) (taskqueue.QueueStatus, bool) {
	return m.f.Counts(running, elapsed), true
}

func (m feedMode) fromNode(msg taskqueue.NodeMessage) job.Verdict { return m.f.FromNode(msg) }
func (m feedMode) outbox() []taskqueue.NodeMessage                { return m.f.DrainOutbox() }
func (m feedMode) awaitsNodes() bool                              { return false }
