//go:build linux

package launcher

import (
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// The instance supervisor's rules: pure functions of the Policy and what
// happened, with no process, clock or lock inside. The supervisor applies
// their verdicts (supervisor.go); policy_test.go holds their cases.

// afterInstanceExit is what follows the end of an instance's process.
// The rules, in order:
//  1. Restart: a failed instance — a non-zero exit, or a signal — that
//     ended by itself starts again while it has --restarts left and the
//     run is not stopping, after restartBackoff. One that gpulaunch
//     ended (--timeout, --mem-per-task, a stop) is not restarted:
//     gpulaunch meant it to end.
//  2. Otherwise the instance is done, and
//     a. -K: if it failed and the run is not stopping already, every
//     other instance is ended;
//     b. -W: the first instance to be done starts the clock that ends
//     the others, unless the run is stopping (also because of a.).
//
// With Group (--ddp) the instances are one distributed job, as torchrun's
// worker group, and groupMode's rules apply instead (group.go).
func (p Policy) afterInstanceExit(slot int, j job.Job, e job.Exit) job.Verdict {
	if e.Failed() && e.By == job.EndedItself && !e.Stopping && j.Try < p.Restarts {
		next := j.Again()
		v := job.Verdict{Then: job.Later, Job: next, Delay: restartBackoff(next.Try)}
		v.Say(zap.InfoLevel, "instance %d restarts in %s (restart %d of %d)", slot, v.Delay, next.Try, p.Restarts)
		return v
	}
	v := job.Verdict{Then: job.Done}
	stopping := e.Stopping
	if e.Failed() && p.KillOnBadExit && !stopping {
		v.Say(zap.InfoLevel, "instance %d failed: ending the others (--kill-on-bad-exit)", slot)
		v.StopAll, stopping = job.EndedBadExit, true
	}
	v.StartWait = p.WaitAfterFirst > 0 && !e.WaitStarted && !stopping
	return v
}

// MaxRestarts is the most --restarts an instance may be given: at the
// backoff's 10 s, 10,000 restarts are a day of crash loop, far past any
// transient fault; a larger count is a typo.
const MaxRestarts = 10000

// Backoff bounds: a crash loop must not spin, and a transient failure
// should cost seconds, not minutes.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 10 * time.Second
)

// restartBackoff is the wait before an instance's nth restart (n from
// 1): 0.25 s, doubling, at most 10 s.
func restartBackoff(n int) time.Duration {
	d := firstBackoff
	for k := 1; k < n && d < maxBackoff; k++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// overMemoryCap: a process tree whose resident memory is rss is ended
// (--mem-per-task) when it is over the cap and nothing ends it already.
func (p Policy) overMemoryCap(rss uint64, endedBy job.Ended) bool {
	return p.MemPerTask > 0 && rss > p.MemPerTask && endedBy == job.EndedItself
}

// memCapEvery is the longest sampling interval under a memory cap: a
// runaway allocation is caught within about a second.
const memCapEvery = 500 * time.Millisecond

// sampleEvery is how often the sampler measures the slots: the telemetry
// interval, at most memCapEvery with a memory cap; 0: never.
func (p Policy) sampleEvery() time.Duration {
	every := p.Monitor
	if p.MemPerTask > 0 && (every == 0 || every > memCapEvery) {
		every = memCapEvery
	}
	return every
}

// killWait is the grace between TERM and KILL.
func (p Policy) killWait() time.Duration {
	if p.KillWait <= 0 {
		return defaultKillWait
	}
	return p.KillWait
}
