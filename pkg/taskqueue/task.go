package taskqueue

import (
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// The end of a task follows the same rules wherever it ran — in a queue
// on one node (Queue.AfterTaskExit) or on a node of a queue over several
// (Feed.AfterTaskExit). In order:
//  1. A task that failed with its GPU's MPS server — a client of the
//     server when another client's fault set a sticky error on every
//     client (job.ServerFault, not its cause), or ended by gpulaunch for
//     that fault (job.EndedMPSFault) — did not fail on its own: it is
//     given back, no try counted and no record written, and runs again
//     once the GPU's server has recovered (pkg/fate's Machine) — but not
//     in a run that stops or a queue that starts no new task (--halt,
//     SIGHUP's drain): then it is as rule 2's, for --resume.
//     The fault's cause is judged by the rules below, as any task.
//  2. A task that gpulaunch ended (--halt now, a signal to gpulaunch, the
//     holder's stop or its loss) did not finish: it is given back, not
//     recorded, so that --resume or another node runs it again.
//  3. A failed task runs again at once in the same slot while it has
//     tries left (--retries N: N tries in all) and the run is not
//     stopping.
//  4. Otherwise it finished: its record is the verdict's (the joblog's
//     line, the slot's counts), and a failure is said.
//
// What a finished task then changes is the queue's own (its counts and
// --halt) or the node's (telling the holder); after it, unless the run
// stops, the slot takes its next task (takeNext).

// taskEnd is which of the rules a task's end met.
type taskEnd int

const (
	withServer taskEnd = iota // rule 1
	givenBack                 // rule 2
	triedAgain                // rule 3
	finished                  // rule 4
)

// judgeTask applies rules 1 to 4 to the end e of job j, a task that runs
// at most tries times, on host; back says what becomes of a task given
// back, for the log; halted: the queue starts no new task.
func judgeTask(j job.Job, e job.Exit, tries int, host, back string, halted bool) (taskEnd, job.Verdict) {
	t := j.Task
	var v job.Verdict
	switch rec := job.RecordOf(t, host, e); {
	case e.By == job.EndedMPSFault || e.Fault != nil && !e.Fault.Cause && e.By == job.EndedItself:
		then := "it runs again once the server has recovered, no try counted"
		if e.Stopping || halted {
			then = "no new task starts, so it does not run again here: " + back
		}
		v.Say(zap.InfoLevel, "task %d failed with its GPU's MPS server (%s; another client's fault): %s", t.Seq, e.Status(), then)
		return withServer, v
	case e.By.ByGpulaunch():
		v.Say(zap.InfoLevel, "task %d was ended by gpulaunch (%s): %s", t.Seq, e.By, back)
		return givenBack, v
	case rec.Failed() && !e.Stopping && j.Try+1 < tries:
		next := j.Again()
		v = job.Verdict{Then: job.Now, Job: next}
		v.Say(zap.InfoLevel, "task %d failed (%s): try %d of %d", t.Seq, e.Status(), next.Try+1, tries)
		return triedAgain, v
	default:
		v.Record = &rec
		if rec.Failed() {
			v.Say(zap.WarnLevel, "task %d failed: %s after %d %s: %s", t.Seq, e.Status(), j.Try+1, map[bool]string{true: "try", false: "tries"}[j.Try == 0], t.Command)
		}
		return finished, v
	}
}

// takeNext completes v with the slot's next job from take, unless the
// run stops: then the slot is done.
func takeNext(v job.Verdict, stopping bool, slot int, take func(slot int) (job.Job, job.Then)) job.Verdict {
	if stopping {
		return v
	}
	v.Job, v.Then = take(slot)
	return v
}

// taking is take as takeNext asks it: a task's first try.
func taking(take func(slot int) (job.Task, job.Then)) func(slot int) (job.Job, job.Then) {
	return func(slot int) (job.Job, job.Then) {
		t, then := take(slot)
		return job.OfTask(t), then
	}
}
