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
// several). It is the part of a mode that decides, job by job; what a
// mode is once and for all — its traits — is a modeTraits, which the
// supervisor reads as policy. The supervisor never branches on the mode:
// where they differ, it asks its mode or reads its traits. A mode holds
// no process, clock or lock — the supervisor calls it under its own lock
// — so its rules are tested alone, like kubelet's CPU manager policies
// behind their Policy interface.
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
}

// modeTraits are what a mode is for the whole run, fixed when it begins:
// the supervisor reads them as its policy, never the mode's type. The
// zero value is a run of instances on one node.
type modeTraits struct {
	// drainsOnHangup: SIGHUP means "finish what runs, start nothing
	// new" (a queue, as GNU parallel) instead of being passed on to every
	// process (a run of instances, as srun).
	drainsOnHangup bool
	// records: the mode records the jobs that finished (a queue's
	// joblog), so an end by a signal meant for gpulaunch too must not be
	// taken for a job's own (awaitStop).
	records bool
	// manyStarts: the slots start many short processes (a queue). Its
	// starts and exits are logged at debug level, and the run gets
	// spare Ps for the slot threads (Run).
	manyStarts bool
	// ending is why a process that starts now in a slot must be ended at
	// once (a group restart under way: the others are being ended; its
	// GPU's MPS server's fault); nil: never, a process that starts ends
	// by itself.
	ending func(slot int) job.Ended
	// counts are a queue's figures for the board and the progress line;
	// nil for a run of instances.
	counts counter
	// nodes is the mode's side of a queue over several nodes
	// (taskqueue's nodes.go, feed.go); nil: a mode with no other nodes.
	nodes nodeSide
	// firstFailure is the failure that ended a group (--ddp), whose
	// error file holds the root cause, or a shared GPU's instances
	// (--mps: the cause of its MPS server's fault); nil for other modes
	// (and it returns nil while none did).
	firstFailure func() *Failure
	// fate is what a fault of slot's GPU's MPS server was to it, for
	// its row and outcome (fateMode.role); nil: no GPU shared under MPS.
	fate func(slot int) (role string, withServer bool)
	// joblog is the joblog finished tasks are recorded in (nil: none
	// here), and progress who is told the queue's counts at every change
	// (nil: nobody).
	joblog   *taskqueue.Joblog
	progress func(taskqueue.QueueStatus)
}

// counter is a queue's (taskqueue.Queue, taskqueue.Feed) source of its
// counts.
type counter interface {
	Counts(running int, elapsed time.Duration) taskqueue.QueueStatus
}

// nodeSide is a mode's part in a queue over several nodes.
type nodeSide interface {
	// fromNode applies a message from another node; the verdict
	// concerns no slot.
	fromNode(m taskqueue.NodeMessage) job.Verdict
	// outbox hands over the messages for other nodes the rules queued.
	outbox() []taskqueue.NodeMessage
	// awaitsNodes: other nodes hold tasks whose ends this run must hear
	// of before it is over.
	awaitsNodes() bool
}

// endingNow is traits' ending for slot: job.EndedItself without one.
func (t modeTraits) endingNow(slot int) job.Ended {
	if t.ending == nil {
		return job.EndedItself
	}
	return t.ending(slot)
}

// fateOf is fate's; nothing without one.
func (t modeTraits) fateOf(slot int) (string, bool) {
	if t.fate == nil {
		return "", false
	}
	return t.fate(slot)
}

// awaitsNodes is nodes' awaitsNodes; false without other nodes.
func (t modeTraits) awaitsNodes() bool { return t.nodes != nil && t.nodes.awaitsNodes() }

// fromNode is nodes' fromNode; nothing to do without other nodes.
func (t modeTraits) fromNode(m taskqueue.NodeMessage) job.Verdict {
	if t.nodes == nil {
		return job.Verdict{}
	}
	return t.nodes.fromNode(m)
}

// failure is firstFailure's; nil for a mode without one.
func (t modeTraits) failure() *Failure {
	if t.firstFailure == nil {
		return nil
	}
	return t.firstFailure()
}

// outbox is nodes' outbox; none without other nodes.
func (t modeTraits) outbox() []taskqueue.NodeMessage {
	if t.nodes == nil {
		return nil
	}
	return t.nodes.outbox()
}

// Work is what a run's slots do, besides running each its instance (a
// nil Work, under Policy's rules, as one group with Policy.Group): the
// tasks of a queue (QueueTasks), or those another node's queue sends
// (FeedTasks).
type Work interface {
	mode() (runMode, modeTraits)
}

// QueueTasks makes the slots run Queue's tasks one after another
// (KillOnBadExit, WaitAfterFirst and Restarts do not apply; the queue has
// its tries and --halt), and on the holder of a queue over several nodes
// hands tasks to the other nodes too.
type QueueTasks struct{ Queue *taskqueue.Queue }

// FeedTasks makes the slots run the tasks the holder of a queue over
// several nodes sends (taskqueue.Feed).
type FeedTasks struct{ Feed *taskqueue.Feed }

// queueTraits are a queue's, kept here or fed by another node's.
var queueTraits = modeTraits{drainsOnHangup: true, records: true, manyStarts: true}

func (w QueueTasks) mode() (runMode, modeTraits) {
	m, t := queueMode{w.Queue}, queueTraits
	t.counts, t.nodes, t.joblog, t.progress = w.Queue, m, w.Queue.Joblog, w.Queue.Progress
	return m, t
}

// mode: the holder records a node's tasks, and the node's progress line
// is not drawn (no joblog, no progress).
func (w FeedTasks) mode() (runMode, modeTraits) {
	m, t := feedMode{w.Feed}, queueTraits
	t.counts, t.nodes = w.Feed, m
	return m, t
}

// modeOf is the mode that runs spec's work, with policy (spec.Policy, its
// defaults filled in), and its traits. The instances of a GPU shared
// under MPS share a fate (spec.Fates): a run of instances or a queue on
// one node is wrapped in fateMode; a --ddp group restarts whole anyway,
// and a node of a queue over several is fed by its holder.
func modeOf(spec Spec, policy Policy) (runMode, modeTraits) {
	switch {
	case spec.Work != nil:
		m, t := spec.Work.mode()
		if w, ok := spec.Work.(QueueTasks); ok && len(spec.Fates) > 0 {
			return withFates(m, t, spec, policy, w.Queue)
		}
		return m, t
	case policy.DDP:
		m := newGroupMode(spec.Instances, policy)
		return m, modeTraits{ending: func(int) job.Ended { return m.ending() }, firstFailure: m.firstFailure}
	}
	m := &instanceMode{insts: spec.Instances, policy: policy}
	if len(spec.Fates) > 0 {
		return withFates(m, modeTraits{}, spec, policy, nil)
	}
	return m, modeTraits{}
}

// withFates wraps mode m, of traits t, in fateMode.
func withFates(m runMode, t modeTraits, spec Spec, policy Policy, q *taskqueue.Queue) (runMode, modeTraits) {
	fm := newFateMode(m, spec.Fates, spec.Instances, policy, q)
	t.ending, t.firstFailure, t.fate = fm.ending, fm.firstFailure, fm.role
	return fm, t
}

// instanceJob is the job of instance inst.
func instanceJob(inst Instance) job.Job {
	return job.Job{Path: inst.Path, Args: inst.Args, Stdout: inst.Stdout, Stderr: inst.Stderr, Label: inst.Index}
}

// instanceMode runs one instance per slot, under Policy's rules.
type instanceMode struct {
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

// stop: a run of instances keeps no work to hold back; the supervisor
// ends its processes.
func (m *instanceMode) stop(string, bool) bool { return false }

// queueMode feeds a Queue's tasks to the slots, under its rules
// (taskqueue's queue.go), and on the holder of a queue over several nodes
// to the other nodes too (nodes.go).
type queueMode struct{ q *taskqueue.Queue }

func (m queueMode) first(slot int) (job.Job, job.Then) { return m.q.TakeJob(slot) }

func (m queueMode) resume(slot int) (job.Job, job.Then) { return m.first(slot) }

func (m queueMode) afterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return m.q.AfterTaskExit(slot, j, e)
}

func (m queueMode) stop(why string, now bool) bool { return m.q.Stop(why, now) }

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

func (m feedMode) fromNode(msg taskqueue.NodeMessage) job.Verdict { return m.f.FromNode(msg) }
func (m feedMode) outbox() []taskqueue.NodeMessage                { return m.f.DrainOutbox() }
func (m feedMode) awaitsNodes() bool                              { return false }
