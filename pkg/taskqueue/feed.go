package taskqueue

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Feed is the side of a queue over several nodes on a node that is not
// its holder: it runs the tasks the holder sends on this node's slots and
// reports their ends (nodes.go has the holder's side). The rules, in
// order:
//  1. A slot takes the oldest task the holder sent and it has not
//     started. With none, it waits for the next one — unless the holder
//     said the queue is over, or the run stops: then the slot is done.
//  2. A task that gpulaunch ended (a stop here or from the holder, the
//     holder lost) did not finish: it goes back to the holder, which hands
//     it out again or leaves it for --resume.
//  3. A failed task with tries left (--retries) runs again at once in the
//     same slot, as on one node.
//  4. Otherwise its record goes to the holder, which writes the joblog and
//     counts it; the slot takes its next task (rule 1).
//  5. A stop here (a signal to this gpulaunch) or from the holder starts
//     nothing new; the tasks sent and not started go back to the holder.
//     The holder's "now" also ends the tasks running here.
//  6. The holder lost: nothing here can be recorded any more, so the tasks
//     running here are ended and the run exits 255; the holder's
//     joblog and --resume have the truth.
//  7. A relay stopped by a signal while it waits for its group after its
//     own share (nodelink's drain) cuts the group off, as its loss would:
//     their tasks end unrecorded, and the relay exits 255 too.
type Feed struct {
	// Tries is --retries: how many times a task runs at most.
	Tries int
	// Host is this node's name, for the records.
	Host string
	// Slots complete a task for the slot it is handed to ({%}, files);
	// nil: the tasks run as they are.
	Slots *Slots

	waiting []job.Task // sent by the holder, not started
	running int        // tasks running here
	over    bool       // the holder has no more tasks
	halted  string     // why nothing new starts here
	// haltedHere: the stop came from this node (a signal), not from the
	// holder.
	haltedHere bool
	lost       string      // why the holder is gone
	cutOff     string      // rule 7: why this relay cut its group off
	status     QueueStatus // the whole queue's counts, as the holder last sent them
	done       int         // tasks that finished here
	failed     int
	outbox     []NodeMessage
}

// Take is what slot runs next (rule 1).
func (f *Feed) Take(slot int) (job.Task, job.Then) {
	switch {
	case f.halted != "":
		return job.Task{}, job.Done
	case len(f.waiting) > 0:
		t := f.waiting[0]
		f.waiting = f.waiting[1:]
		f.running++
		t = f.Slots.Complete(t, slot)
		return t, job.Now
	case f.over:
		return job.Task{}, job.Done
	}
	return job.Task{}, job.Wait
}

// AfterTaskExit applies rules 2 to 4 to the end of a task in slot, with
// the rules of every task's end (task.go).
func (f *Feed) AfterTaskExit(slot int, j job.Job, e job.Exit) job.Verdict {
	f.running--
	end, v := judgeTask(j, e, f.Tries, f.Host, "given back to the queue's holder", false)
	switch end {
	case givenBack, withServer:
		f.send(NodeMessage{Kind: MsgReturned, Seqs: []int{j.Task.Seq}})
	case triedAgain:
		f.running++
		return v
	case finished:
		f.done++
		if v.Record.Failed() {
			f.failed++
		}
		f.send(NodeMessage{Kind: MsgDone, Record: v.Record, Running: f.running})
	}
	return takeNext(v, e.Stopping, slot, taking(f.Take))
}

// FromNode applies a message from the holder.
func (f *Feed) FromNode(m NodeMessage) job.Verdict {
	var v job.Verdict
	switch m.Kind {
	case MsgTask:
		if f.halted != "" {
			f.send(NodeMessage{Kind: MsgReturned, Seqs: []int{m.Task.Seq}})
			return v
		}
		f.waiting = append(f.waiting, *m.Task)
		v.Wake = true
	case MsgEnd:
		f.over, v.Wake = true, true
	case MsgStatus:
		f.status = *m.Status
	case MsgStopSoon, MsgStopNow:
		if f.stop(m.Why) {
			v.Say(zap.InfoLevel, "the queue's holder stops the queue (%s)", m.Why)
		}
		v.Wake = true
		if m.Kind == MsgStopNow {
			v.StopAll = job.EndedHolderStop
		}
	case MsgLost:
		if (f.over || f.halted != "") && f.running == 0 {
			return v // the holder closed after the end: a departure
		}
		f.lost = m.Why
		f.stop("the queue's holder is lost")
		v.Say(zap.ErrorLevel, "the queue's holder is lost (%s): ending the tasks here, which can no longer be recorded; its joblog and --resume tell what finished", m.Why)
		v.StopAll, v.Wake = job.EndedHolderLost, true
	}
	return v
}

// StopHere is a stop from this node's side, a signal to this gpulaunch
// (rule 5); true when this call stopped it.
func (f *Feed) StopHere(why string) bool {
	first := f.stop(why)
	f.haltedHere = f.haltedHere || first
	return first
}

// stop starts nothing new here and gives the tasks not started back to
// the holder (rule 5); true when this call stopped it.
func (f *Feed) stop(why string) bool {
	if f.halted != "" {
		return false
	}
	f.halted = why
	if len(f.waiting) > 0 {
		seqs := make([]int, len(f.waiting))
		for i, t := range f.waiting {
			seqs[i] = t.Seq
		}
		f.waiting = nil
		f.send(NodeMessage{Kind: MsgReturned, Seqs: seqs})
	}
	return true
}

func (f *Feed) send(m NodeMessage) {
	if f.lost == "" {
		f.outbox = append(f.outbox, m)
	}
}

// Counts are the whole queue's, as the holder last sent them, with this
// node's running tasks when it has sent none yet.
func (f *Feed) Counts(running int, elapsed time.Duration) QueueStatus {
	s := f.status
	if s.Total == 0 {
		s.Running = running
	}
	if f.halted != "" && s.Halted == "" {
		s.Halted = f.halted
	}
	return s
}

// ExitCode is this node's exit status: 255 when the holder was lost or a
// signal here stopped the node's share early (rule 6), else 0 — the
// queue's own status is the holder's, and srun exits with the highest of
// its tasks'.
func (f *Feed) ExitCode() int {
	if f.lost != "" || f.haltedHere || f.cutOff != "" {
		return 255
	}
	return 0
}

// CutOffGroup is rule 7: this relay, stopped (why) while it waited for
// its group, cut them off.
func (f *Feed) CutOffGroup(why string) { f.cutOff = why }

// Summary says what this node did, for its summary line.
func (f *Feed) Summary() string {
	s := fmt.Sprintf("tasks: %d finished on this node, %d failed; the queue's joblog, counts and exit status are the holder's (node 0)", f.done, f.failed)
	switch {
	case f.lost != "":
		s += fmt.Sprintf("; the holder was lost (%s)", f.lost)
	case f.cutOff != "":
		s += fmt.Sprintf("; %s", f.cutOff)
	case f.halted != "":
		s += fmt.Sprintf("; stopped: %s", f.halted)
	}
	return s
}

func (f *Feed) DrainOutbox() []NodeMessage {
	out := f.outbox
	f.outbox = nil
	return out
}
