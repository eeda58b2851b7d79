package taskqueue

import (
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// MaxTries is the most tries --retries may give a task: GNU parallel
// takes any count, but a task that failed 10,000 times on a GPU slot is
// not going to succeed, and a larger count is a typo.
const MaxTries = 10000

// Queue runs tasks on the run's instances, which become slots: each slot
// keeps its GPUs, CPUs and memory policy, and takes the next task when
// its current one is finished.
type Queue struct {
	// QueueConfig is what it is made of (NewQueue).
	QueueConfig

	// nodes are the other nodes of a queue over several (NewQueue);
	// nil when this node runs the queue alone.
	nodes *nodeLedger
	// told is how far the other nodes were told to stop: "", "soon", "now".
	told string
	// ended: the other nodes were told the queue is over.
	ended bool

	next int // the next task to hand out; the tasks before it were started
	// again are tasks given back on this node to run again before the
	// next (task.go's rule 1: they failed with their GPU's MPS server),
	// each with its tries so far.
	again             []job.Job
	failed, succeeded int
	failedSeqs        []int
	halted            string // why no new task starts
	haltCode          int    // the exit status --halt fixed, once haltSet
	haltSet           bool
}

// QueueStatus is the queue's counts, for status, top and the progress line.
type QueueStatus struct {
	Total     int     `json:"total"`
	Skipped   int     `json:"skipped"`
	Done      int     `json:"done"`
	Failed    int     `json:"failed"`
	Running   int     `json:"running"`
	Remaining int     `json:"remaining"`
	Halted    string  `json:"halted,omitempty"`
	Rate      float64 `json:"tasks_per_second"`
}

// QueueConfig is what a Queue is made of.
type QueueConfig struct {
	// Tasks are the tasks to run now, in order (a resume has already
	// left out those done before).
	Tasks []job.Task
	// Total is the number of tasks in the input, Skipped those a resume
	// left out.
	Total, Skipped int
	// Tries is how many times a task runs at most (--retries, GNU
	// parallel's meaning: tries in all): a failed task runs again in the
	// same slot until it succeeds or has run this often; 0 and 1: once.
	Tries int
	Halt  Halt
	// Joblog receives a record for every task that finished (not for
	// those gpulaunch ended itself: a resume runs them again).
	Joblog *Joblog
	// Host is the joblog's Host: ":" on one node, as GNU parallel writes
	// for the local machine; the holder's name over several nodes.
	Host string
	// Slots complete a task for the slot it is handed to ({%}, its
	// files); nil: the tasks run as they are.
	Slots *Slots
	// Progress, when set, is told of every change of the counts.
	Progress func(QueueStatus)
	// OtherNodes, on the holder of a queue over several nodes, is how
	// many other nodes take its tasks (nodes.go); 0 on one node.
	OtherNodes int
}

// NewQueue makes the queue c describes, complete.
func NewQueue(c QueueConfig) *Queue {
	q := &Queue{QueueConfig: c}
	if c.OtherNodes > 0 {
		q.nodes = newNodeLedger(c.OtherNodes)
	}
	return q
}

// nextTask is the next task to hand out, to a slot here or to another
// node: a lost node's first (nodes.go, rule 1).
func (q *Queue) nextTask() (job.Task, bool) {
	switch {
	case q.halted != "":
		return job.Task{}, false
	case q.nodes != nil && len(q.nodes.again) > 0:
		t := q.nodes.again[0]
		q.nodes.again = q.nodes.again[1:]
		return t, true
	case q.next < len(q.Tasks):
		q.next++
		return q.Tasks[q.next-1], true
	}
	return job.Task{}, false
}

// TakeJob is what slot runs next: a task given back here (again, its
// tries kept), else Take's.
func (q *Queue) TakeJob(slot int) (job.Job, job.Then) {
	if q.halted == "" && len(q.again) > 0 {
		j := q.again[0]
		q.again = q.again[1:]
		j.Task = q.Slots.Complete(q.original(j.Task), slot)
		j.Label = j.Task.Seq
		return j, job.Now
	}
	t, then := q.Take(slot)
	return job.OfTask(t), then
}

// GiveBack puts job j, taken and not run (or to run again: task.go's
// rule 1), at the front of the tasks to run here, its tries kept.
func (q *Queue) GiveBack(j job.Job) {
	q.again = append([]job.Job{j}, q.again...)
}

// original is task t as the input gave it, before a slot completed it
// ({%}, its files): a task given back may run in another slot.
func (q *Queue) original(t job.Task) job.Task {
	k := sort.Search(len(q.Tasks), func(k int) bool { return q.Tasks[k].Seq >= t.Seq })
	if k < len(q.Tasks) && q.Tasks[k].Seq == t.Seq {
		return q.Tasks[k]
	}
	return t
}

// Take is what slot runs next: a task, or nothing yet while another node
// holds tasks that a loss would hand back (nodes.go, rule 6), or nothing.
func (q *Queue) Take(slot int) (job.Task, job.Then) {
	t, ok := q.nextTask()
	switch {
	case ok:
		return q.Slots.Complete(t, slot), job.Now
	case q.halted == "" && q.nodes.holding():
		return job.Task{}, job.Wait
	}
	q.endNodes()
	return job.Task{}, job.Done
}

// Stop starts no new task from now on, here and on the other nodes,
// which now also end their running tasks; true when this call stopped it.
func (q *Queue) Stop(why string, now bool) bool {
	first := q.halted == ""
	if first {
		q.halted = why
	}
	q.tellNodes(why, now)
	return first
}

// AfterTaskExit is what follows the end of a task in slot: the rules of
// every task's end (task.go), then for a task that finished its count and
// --halt ("now" ends the running tasks, "soon" starts no more); then the
// slot takes the next task, unless the run is stopping or the queue is
// halted or empty, when it is done.
func (q *Queue) AfterTaskExit(slot int, j job.Job, e job.Exit) job.Verdict {
	end, v := judgeTask(j, e, q.Tries, q.Host, "not in the joblog, so --resume runs it again", q.halted != "")
	switch end {
	case withServer:
		q.GiveBack(j)
	case triedAgain:
		return v
	case finished:
		var halt job.Note
		if v.StopAll, halt = q.finishedNotes(*v.Record); halt.Msg != "" {
			v.Notes = append(v.Notes, halt)
		}
	}
	return takeNext(v, e.Stopping || v.StopAll != "", slot, q.TakeJob)
}

// finishedNotes counts a finished task (finished) and says what a halt
// it reached does: job.EndedHalt when the running tasks end now, and the
// line for the log.
func (q *Queue) finishedNotes(rec job.Record) (job.Ended, job.Note) {
	switch q.finished(rec) {
	case "now":
		return job.EndedHalt, job.Note{Level: zap.InfoLevel, Msg: q.halted + ": ending the running tasks"}
	case "soon":
		return "", job.Note{Level: zap.InfoLevel, Msg: q.halted + ": no new task starts; the running ones finish"}
	}
	return "", job.Note{}
}

// finished counts a task that ran to its end (after its tries) and
// says whether --halt is reached now: "now" or "soon".
func (q *Queue) finished(rec job.Record) string {
	if rec.Failed() {
		q.failed++
		q.failedSeqs = append(q.failedSeqs, rec.Seq)
	} else {
		q.succeeded++
	}
	if q.Halt.When == "" || q.haltSet {
		return ""
	}
	reached, code := q.Halt.reached(haltCounts{failed: q.failed, succeeded: q.succeeded, tasks: len(q.Tasks)}, rec)
	if !reached {
		return ""
	}
	q.haltSet, q.haltCode = true, code
	q.Stop(fmt.Sprintf("--halt %s reached at task %d", q.Halt, rec.Seq), q.Halt.When == "now")
	return q.Halt.When
}

// ExitCode is the queue's exit status, as GNU parallel's. The rules, in
// order:
//  1. --halt reached: the status the halt fixed (Halt.reached).
//  2. A queue a signal stopped with tasks unfinished (never started, or
//     ended by gpulaunch): 255, as parallel exits on TERM and INT, so that
//     `gpulaunch … && next` does not go on (parallel itself exits 0 after
//     a SIGHUP when no task failed; gpulaunch does not).
//  3. A queue over several nodes that lost one: 255, even when the others
//     finished every task, so that the loss is not taken for success.
//  4. Otherwise Halt.unreachedCode: the number of failed tasks up to 101
//     (0 when every task succeeded), or with a share the failed share of
//     the tasks started.
func (q *Queue) ExitCode() int {
	switch {
	case q.haltSet:
		return q.haltCode
	case q.failed+q.succeeded < len(q.Tasks):
		return 255
	case len(q.nodes.losses()) > 0:
		return 255
	}
	return q.Halt.unreachedCode(q.failed, q.next)
}

// Unfinished is how many of the queue's tasks have no record: never
// started, or ended by gpulaunch.
func (q *Queue) Unfinished() int { return len(q.Tasks) - q.failed - q.succeeded }

// FailedSeqs are the tasks that failed, in the order they finished.
func (q *Queue) FailedSeqs() []int { return q.failedSeqs }

// Succeeded and Failed count the tasks that finished (after their tries);
// Done is both.
func (q *Queue) Succeeded() int { return q.succeeded }
func (q *Queue) Failed() int    { return q.failed }
func (q *Queue) Done() int      { return q.failed + q.succeeded }

// Halted is why no new task starts; "" while they do.
func (q *Queue) Halted() string { return q.halted }

// Counts are the queue's figures now.
func (q *Queue) Counts(running int, elapsed time.Duration) QueueStatus {
	s := QueueStatus{Total: q.Total, Skipped: q.Skipped, Done: q.failed + q.succeeded, Failed: q.failed, Running: running + q.nodes.running(),
		Remaining: len(q.Tasks) - q.next, Halted: q.halted}
	s.Remaining += len(q.again)
	if q.nodes != nil {
		s.Remaining += len(q.nodes.again)
	}
	if elapsed > 0 {
		s.Rate = float64(s.Done) / elapsed.Seconds()
	}
	return s
}
