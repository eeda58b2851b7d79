package launcher

import (
	"time"

	"go.uber.org/zap"
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
// worker group, and rules 1 and 2a apply to the group (afterGroupExit).
func (p Policy) afterInstanceExit(slot int, j job, e exitFacts) verdict {
	if p.Group {
		return p.afterGroupExit(slot, j, e)
	}
	if e.failed() && e.by == EndedItself && !e.stopping && j.try < p.Restarts {
		next := j.again()
		v := verdict{then: thenLater, job: next, delay: restartBackoff(next.try)}
		v.say(zap.InfoLevel, "instance %d restarts in %s (restart %d of %d)", slot, v.delay, next.try, p.Restarts)
		return v
	}
	v := verdict{then: thenDone}
	stopping := e.stopping
	if e.failed() && p.KillOnBadExit && !stopping {
		v.say(zap.InfoLevel, "instance %d failed: ending the others (--kill-on-bad-exit)", slot)
		v.stopAll, stopping = EndedBadExit, true
	}
	v.startWait = p.WaitAfterFirst > 0 && !e.waitStarted && !stopping
	return v
}

// afterGroupExit is afterInstanceExit for a group (--ddp): a rank that
// fails leaves the others waiting for it in their collectives (NCCL's
// timeout is ten minutes or more), so the group fails or restarts whole.
// The rules, in order:
//
//	G1. An instance that failed by itself, while the run and the group
//	    are not stopping, ends the group: while the group has --restarts
//	    left, every other instance is ended and the whole group starts
//	    again — every instance in its slot, with its rank — once all have
//	    exited, after restartBackoff (TORCHELASTIC_RESTART_COUNT counts the
//	    restarts); with none left, the others are ended as by -K.
//	G2. Any other end — a success, an instance the group's stop ended —
//	    leaves the instance done until a restart of the group.
//	G3. -W applies as to instances, to the first done by itself.
func (p Policy) afterGroupExit(slot int, j job, e exitFacts) verdict {
	v := verdict{then: thenDone}
	if e.failed() && e.by == EndedItself && !e.stopping {
		if j.try < p.Restarts {
			v.restartGroup, v.delay = true, restartBackoff(j.try+1)
			v.say(zap.InfoLevel, "instance %d failed: every instance restarts in %s, as one group (restart %d of %d)", slot, v.delay, j.try+1, p.Restarts)
			return v
		}
		v.say(zap.InfoLevel, "instance %d failed and the group has no restart left: ending the others", slot)
		v.stopAll = EndedBadExit
		return v
	}
	v.startWait = p.WaitAfterFirst > 0 && !e.waitStarted && !e.stopping && e.by == EndedItself
	return v
}

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
func (p Policy) overMemoryCap(rss uint64, endedBy Ended) bool {
	return p.MemPerTask > 0 && rss > p.MemPerTask && endedBy == EndedItself
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
