//go:build linux

package launcher

import (
	"github.com/gpulaunch/gpulaunch/pkg/ddpgroup"
	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// groupMode is the runMode of a distributed group (--ddp): pkg/ddpgroup's
// Machine (rules G1–G7) over the instances' jobs, as instanceMode would
// start them.
type groupMode struct{ m *ddpgroup.Machine }

func newGroupMode(insts []Instance, p Policy) *groupMode {
	jobs, ranks := make([]job.Job, len(insts)), make([]int, len(insts))
	for i, inst := range insts {
		jobs[i], ranks[i] = instanceJob(inst), inst.Rank
	}
	gp := ddpgroup.Policy{Restarts: p.Restarts, WaitAfterFirst: p.WaitAfterFirst > 0, ErrorDir: p.ErrorDir, Backoff: restartBackoff}
	return &groupMode{ddpgroup.New(jobs, ranks, gp)}
}

func (a *groupMode) first(slot int) (job.Job, job.Then)  { return a.m.First(slot) }
func (a *groupMode) resume(slot int) (job.Job, job.Then) { return a.m.Resume(slot) }
func (a *groupMode) stop(why string, now bool) bool      { return a.m.Stop(why, now) }
func (a *groupMode) ending() job.Ended                   { return a.m.Ending() }
func (a *groupMode) afterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	return a.m.AfterExit(slot, j, e)
}

// firstFailure is the Machine's first failure as the run's root cause.
func (a *groupMode) firstFailure() *Failure {
	f := a.m.FirstFailure()
	if f == nil {
		return nil
	}
	return &Failure{Instance: f.Instance, Rank: f.Rank, Attempt: f.Attempt, Code: f.Code, Signal: f.Signal, ErrorFile: f.ErrorFile}
}
