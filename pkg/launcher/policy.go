//go:build linux

package launcher

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/flagvalue"
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

// The values a Policy takes, checked as the command line is read, each
// with the flag that gave it:
//
//	V1. Restarts cannot be negative (CheckRestarts).
//	V2. KillWait must be longer than 0: instances need a moment to stop
//	    (CheckKillWait).
//	V3. Monitor, when on, is MinMonitorInterval at least (CheckMonitor).

// MinMonitorInterval is the shortest --monitor-interval: every sample
// reads /proc for each instance's process tree (and asks the GPU driver),
// and the cost is per tick more than per instance. gpulaunch's own CPU
// time (user+sys) over 3 s of `sleep`, start included, on 2 shared cores:
// 2 instances: 1ms 2.5 s (85% of a core), 10ms 0.73 s, 100ms 0.12 s;
// 8 instances: 10ms 0.95 s (a third of a core), 50ms 0.32 s. 10ms keeps
// fast sampling for short runs (tests, a scale study's sizes) and refuses
// the values that would take the core.
const MinMonitorInterval = 10 * time.Millisecond

// CheckRestarts is V1.
func CheckRestarts(n int) error {
	if n < 0 {
		return fmt.Errorf("--restarts %d: cannot be negative", n)
	}
	return nil
}

// CheckKillWait is V2.
func CheckKillWait(d time.Duration) error {
	if d == 0 {
		return errors.New("--kill-wait must be longer than 0: instances need a moment to stop")
	}
	return nil
}

// CheckMonitor is V3; given is the interval as the command line gave it.
func CheckMonitor(d time.Duration, given string) error {
	if d > 0 && d < MinMonitorInterval {
		return fmt.Errorf("--monitor-interval %s: below the floor of %s, sampling would take most of a core away from the instances (85%% of one at 1ms); give %s or more (the default is 2s), or 0 to turn telemetry off",
			given, MinMonitorInterval, MinMonitorInterval)
	}
	return nil
}

// PolicyFlags are a Policy's values as the command line gives them
// (run's -K, -W, --restarts, --timeout, --kill-wait, --mem-per-task,
// --monitor-interval).
type PolicyFlags struct {
	KillOnBadExit                                bool
	Restarts                                     int
	Wait, Timeout, KillWait, MemPerTask, Monitor string
}

// ReadPolicy reads f into the instances' policy, each value checked by
// V1-V3 as it is read, in the order of the flags; a duration or size that
// does not parse is refused in its flag's words (flagvalue). A
// MemPerTask of 0 is read as Slurm reads --mem=0, "all the memory": no
// cap of gpulaunch's own (a cgroup's limit stays), as without the flag.
func ReadPolicy(f PolicyFlags) (Policy, error) {
	p := Policy{KillOnBadExit: f.KillOnBadExit, Restarts: f.Restarts}
	if err := CheckRestarts(f.Restarts); err != nil {
		return p, err
	}
	var err error
	if p.WaitAfterFirst, err = flagvalue.Duration("--wait", f.Wait); err != nil {
		return p, err
	}
	if p.Timeout, err = flagvalue.Duration("--timeout", f.Timeout); err != nil {
		return p, err
	}
	if p.KillWait, err = flagvalue.Duration("--kill-wait", f.KillWait); err != nil {
		return p, err
	}
	if err := CheckKillWait(p.KillWait); err != nil {
		return p, err
	}
	if p.MemPerTask, err = flagvalue.Size("--mem-per-task", f.MemPerTask); err != nil {
		return p, err
	}
	if p.Monitor, err = flagvalue.Duration("--monitor-interval", f.Monitor); err != nil {
		return p, err
	}
	return p, CheckMonitor(p.Monitor, f.Monitor)
}
