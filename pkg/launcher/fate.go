//go:build linux

package launcher

import (
	"github.com/gpulaunch/gpulaunch/pkg/fate"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// fateMode is the runMode of GPUs shared under MPS (Spec.Fates): the
// fate their instances share (pkg/fate's Machine, rules F1–F6) over the
// mode it wraps (instanceMode, or queueMode for a queue's tasks). The
// supervisor's part — what the server's log says of each exit, the
// server's recovery, each client's pid — is fatewatch.go's.
type fateMode struct{ m *fate.Machine }

// MPSFault is a GPU's MPS server's fault as the run's root cause knows
// it (Failure.MPS).
type MPSFault = fate.Fault

// innerMode is a runMode as fate.Inner.
type innerMode struct{ runMode }

func (i innerMode) First(slot int) (job.Job, job.Then)  { return i.first(slot) }
func (i innerMode) Resume(slot int) (job.Job, job.Then) { return i.resume(slot) }
func (i innerMode) Stop(why string, now bool) bool      { return i.stop(why, now) }
func (i innerMode) AfterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return i.afterExit(slot, j, e)
}

func newFateMode(inner runMode, fates []mps.Fate, insts []Instance, p Policy, q *taskqueue.Queue) *fateMode {
	ranks := make([]int, len(insts))
	for i, inst := range insts {
		ranks[i] = inst.Rank
	}
	var queue fate.Queue // nil, not a nil *Queue, for instances
	if q != nil {
		queue = q
	}
	fp := fate.Policy{Restarts: p.Restarts, KillOnBadExit: p.KillOnBadExit, WaitAfterFirst: p.WaitAfterFirst > 0, Backoff: restartBackoff}
	return &fateMode{fate.New(innerMode{inner}, fates, ranks, fp, queue)}
}

func (a *fateMode) first(slot int) (job.Job, job.Then)  { return a.m.First(slot) }
func (a *fateMode) resume(slot int) (job.Job, job.Then) { return a.m.Resume(slot) }
func (a *fateMode) stop(why string, now bool) bool      { return a.m.Stop(why, now) }
func (a *fateMode) ending(slot int) job.Ended           { return a.m.Ending(slot) }
func (a *fateMode) role(slot int) (string, bool)        { return a.m.Role(slot) }
func (a *fateMode) afterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return a.m.AfterExit(slot, j, e)
}

// firstFailure is the Machine's cause as the run's root cause.
func (a *fateMode) firstFailure() *Failure {
	c := a.m.Cause()
	if c == nil {
		return nil
	}
	return &Failure{Instance: c.Instance, Rank: c.Rank, Attempt: c.Attempt, Code: c.Code, Signal: c.Signal, MPS: c.Fault}
}
