package launcher

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
)

// Task is one command of a task queue (gpulaunch --tasks, --each-line).
type Task struct {
	// Seq numbers the tasks of the input from 1, as GNU parallel's
	// joblog does; it is what --resume matches on.
	Seq  int
	Path string   // resolved executable
	Args []string // argv
	// Command is the task as the joblog and the status show it.
	Command string
	// Stdout and Stderr are this task's files; "" is the console.
	Stdout, Stderr string
	// OwnStdout and OwnStderr: the file is this task's alone (its
	// pattern names the task), so that every try, and a resume's rerun,
	// starts it afresh instead of appending to an earlier attempt's
	// output. A file tasks share keeps appending.
	OwnStdout, OwnStderr bool `json:",omitempty"`
	// Template and Input are an --each-line task's COMMAND and what it is
	// filled from (FillTemplate): filled again, in one pass, once the
	// slot ({%}) is known. Nil for a --tasks line.
	Template []string   `json:",omitempty"`
	Input    *TaskInput `json:",omitempty"`
}

// Queue runs tasks on the run's instances, which become slots: each slot
// keeps its GPUs, CPUs and memory policy, and takes the next task when
// its current one is finished.
type Queue struct {
	// Tasks are the tasks to run now, in order (a resume has already
	// left out those done before).
	Tasks []Task
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
	Host   string
	// ForSlot completes a task for the slot it is handed to ({%}).
	ForSlot func(t Task, slot int) Task
	// Progress, when set, is told of every change of the counts.
	Progress func(QueueStatus)

	// nodes are the other nodes of a queue over several (OverNodes);
	// nil when this node runs the queue alone.
	nodes *nodeLedger
	// told is how far the other nodes were told to stop: "", "soon", "now".
	told string
	// ended: the other nodes were told the queue is over.
	ended bool

	next              int // the next task to hand out; the tasks before it were started
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

// OverNodes makes this queue the holder of a queue over several nodes,
// the others numbering others (nodes.go).
func (q *Queue) OverNodes(others int) { q.nodes = newNodeLedger(others) }

// nextTask is the next task to hand out, to a slot here or to another
// node: a lost node's first (nodes.go, rule 1).
func (q *Queue) nextTask() (Task, bool) {
	switch {
	case q.halted != "":
		return Task{}, false
	case q.nodes != nil && len(q.nodes.again) > 0:
		t := q.nodes.again[0]
		q.nodes.again = q.nodes.again[1:]
		return t, true
	case q.next < len(q.Tasks):
		q.next++
		return q.Tasks[q.next-1], true
	}
	return Task{}, false
}

// take is what slot runs next: a task, or nothing yet while another node
// holds tasks that a loss would hand back (nodes.go, rule 6), or nothing.
func (q *Queue) take(slot int) (Task, then) {
	t, ok := q.nextTask()
	switch {
	case ok && q.ForSlot != nil:
		return q.ForSlot(t, slot), thenNow
	case ok:
		return t, thenNow
	case q.halted == "" && q.nodes.holding():
		return Task{}, thenWait
	}
	q.endNodes()
	return Task{}, thenDone
}

// stop starts no new task from now on, here and on the other nodes,
// which now also end their running tasks; true when this call stopped it.
func (q *Queue) stop(why string, now bool) bool {
	first := q.halted == ""
	if first {
		q.halted = why
	}
	q.tellNodes(why, now)
	return first
}

// afterTaskExit is what follows the end of a task in slot. The rules, in
// order:
//  1. A task that gpulaunch ended (--halt now, a signal to gpulaunch) did
//     not finish: it is not recorded, so a --resume runs it again.
//  2. A failed task runs again at once in the same slot while it has
//     tries left (--retries N: N tries in all) and the run is not
//     stopping.
//  3. Otherwise the task is recorded (the joblog, the counts) and --halt
//     is checked: "now" ends the running tasks, "soon" starts no more.
//  4. Then the slot takes the next task, unless the run is stopping or
//     the queue is halted or empty; then the slot is done.
func (q *Queue) afterTaskExit(slot int, j job, e exitFacts) verdict {
	t := j.task
	rec := q.record(t, e)
	var v verdict
	switch {
	case e.by.byGpulaunch():
		v.say(zap.InfoLevel, "task %d was ended by gpulaunch (%s): not in the joblog, so --resume runs it again", t.Seq, e.by)
	case rec.Failed() && !e.stopping && j.try+1 < q.Tries:
		next := j.again()
		v = verdict{then: thenNow, job: next}
		v.say(zap.InfoLevel, "task %d failed (%s): try %d of %d", t.Seq, e.status(), next.try+1, q.Tries)
		return v
	default:
		v.record = &rec
		if rec.Failed() {
			tries := map[bool]string{true: "try", false: "tries"}[j.try == 0]
			v.say(zap.WarnLevel, "task %d failed: %s after %d %s: %s", t.Seq, e.status(), j.try+1, tries, t.Command)
		}
		var halt note
		if v.stopAll, halt = q.finishedNotes(rec); halt.msg != "" {
			v.notes = append(v.notes, halt)
		}
	}
	if e.stopping || v.stopAll != "" {
		return v
	}
	next, then := q.take(slot)
	v.then, v.job = then, taskJob(next)
	return v
}

// finishedNotes counts a finished task (finished) and says what a halt
// it reached does: EndedHalt when the running tasks end now, and the
// line for the log.
func (q *Queue) finishedNotes(rec TaskRecord) (Ended, note) {
	switch q.finished(rec) {
	case "now":
		return EndedHalt, note{zap.InfoLevel, q.halted + ": ending the running tasks"}
	case "soon":
		return "", note{zap.InfoLevel, q.halted + ": no new task starts; the running ones finish"}
	}
	return "", note{}
}

// finished counts a task that ran to its end (after its tries) and
// says whether --halt is reached now: "now" or "soon".
func (q *Queue) finished(rec TaskRecord) string {
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
	q.stop(fmt.Sprintf("--halt %s reached at task %d", q.Halt, rec.Seq), q.Halt.When == "now")
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

// Counts are the queue's figures now.
func (q *Queue) Counts(running int, elapsed time.Duration) QueueStatus {
	s := QueueStatus{Total: q.Total, Skipped: q.Skipped, Done: q.failed + q.succeeded, Failed: q.failed, Running: running + q.nodes.running(),
		Remaining: len(q.Tasks) - q.next, Halted: q.halted}
	if q.nodes != nil {
		s.Remaining += len(q.nodes.again)
	}
	if elapsed > 0 {
		s.Rate = float64(s.Done) / elapsed.Seconds()
	}
	return s
}

// record turns a task's end into its joblog line. A task killed by a
// signal has Exitval 128 + the signal and the signal, as GNU parallel
// writes it since 20221222 (bug #63263: "the same exit code as bash";
// Debian 12's 20221122 still writes Exitval 0).
func (q *Queue) record(t Task, e exitFacts) TaskRecord {
	r := TaskRecord{Seq: t.Seq, Host: q.Host, Start: e.started, Runtime: e.wall, Exit: e.code, Signal: int(e.signal), Command: t.Command}
	if e.signal != 0 {
		r.Exit = 128 + int(e.signal)
	}
	return r
}

// WriteQueueSummary prints the end of a task queue: a row per slot, then
// the tasks' counts and which failed; its failure and warning cells
// painted by paint.
func WriteQueueSummary(w io.Writer, q *Queue, insts []Instance, outs []Outcome, wall time.Duration, paint Paint) {
	warnings := writeSlotTable(w, insts, outs, paint)
	done := q.failed + q.succeeded
	fmt.Fprintf(w, "tasks: %d of %d finished in %s", done, len(q.Tasks), wall.Round(time.Millisecond))
	if wall > 0 && done > 0 {
		fmt.Fprintf(w, " (%.1f/s)", float64(done)/wall.Seconds())
	}
	fmt.Fprintf(w, ": %d succeeded, %d failed", q.succeeded, q.failed)
	if len(q.failedSeqs) > 0 {
		list := make([]string, 0, 10)
		for _, s := range q.failedSeqs[:min(10, len(q.failedSeqs))] {
			list = append(list, strconv.Itoa(s))
		}
		more := ""
		if len(q.failedSeqs) > 10 {
			more = ", …"
		}
		fmt.Fprintf(w, " (task %s%s)", strings.Join(list, ", "), more)
	}
	if q.Skipped > 0 {
		fmt.Fprintf(w, "; %d skipped, done in an earlier run (--joblog)", q.Skipped)
	}
	if left := q.Unfinished(); left > 0 {
		fmt.Fprintf(w, "; %d not finished (%s): --resume runs them", left, q.halted)
	}
	fmt.Fprintln(w)
	writeNodeShares(w, q)
	writeWarnings(w, warnings, paint)
}

// writeSlotTable prints a row per slot and returns the slots' warnings.
func writeSlotTable(w io.Writer, insts []Instance, outs []Outcome, paint Paint) []string {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tGPU\tCPUS\tTASKS\t"+paint.Plain("FAILED")+"\tGPU% MEAN/PEAK\tGPU MEM\tPEAK RSS")
	var warnings []string
	for i, o := range outs {
		util := "-"
		if o.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			util = fmt.Sprintf("%.0f/%d", o.GPUUtilMean, o.GPUUtilPeak)
		}
		failed := paint.Exit(strconv.Itoa(o.TasksFailed), o.TasksFailed > 0, EndedItself)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", i, orDash(insts[i].GPUs), orDash(insts[i].CPUs), o.Tasks, failed,
			util, sizeString(o.GPUMemPeak), sizeString(o.PeakRSS))
		warnings = append(warnings, o.Warnings...)
	}
	tw.Flush()
	return warnings
}

// WriteFeedSummary prints the end of a node's share of a queue over
// several nodes: its slots, then what it did.
func WriteFeedSummary(w io.Writer, f *Feed, insts []Instance, outs []Outcome, paint Paint) {
	warnings := writeSlotTable(w, insts, outs, paint)
	fmt.Fprintln(w, f.Summary())
	writeWarnings(w, warnings, paint)
}

// writeNodeShares says what each other node of a queue over several did,
// and which were lost or never joined.
func writeNodeShares(w io.Writer, q *Queue) {
	for _, n := range q.NodeCounts() {
		fmt.Fprintf(w, "node %d (%s): %d task(s) finished, %d failed", n.Node, n.Host, n.Done, n.Failed)
		if n.Lost != "" {
			fmt.Fprintf(w, "; LOST: %s", n.Lost)
		}
		fmt.Fprintln(w)
	}
	if absent := q.AbsentNodes(); absent > 0 {
		fmt.Fprintf(w, "%d node(s) never joined the queue (see their own output)\n", absent)
	}
}
