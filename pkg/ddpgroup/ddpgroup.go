package ddpgroup

import (
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Policy is what a Machine reads of the run's: --restarts, whether -W is
// set, the directory of the ranks' error files ("": none), and the wait
// before a restart (launcher's restartBackoff, by the restart's number).
type Policy struct {
	Restarts       int
	WaitAfterFirst bool
	ErrorDir       string
	Backoff        func(restart int) time.Duration
}

// Failure is the failure that ended the group (G7): the rank that failed
// by itself in the group's last attempt, and its error file.
type Failure struct {
	Instance, Rank int
	// Attempt is the group's restart count when it failed.
	Attempt int
	// Code is the exit status, -1 when Signal killed the rank.
	Code   int
	Signal syscall.Signal
	// ErrorFile is the rank's TORCHELASTIC_ERROR_FILE; "" without
	// Policy.ErrorDir.
	ErrorFile string
}

// Machine runs the instances as one distributed job (--ddp), as
// torchrun's agent runs its worker group: a rank that fails leaves the
// others waiting for it in their collectives (NCCL's timeout is ten
// minutes or more), so the group fails or restarts whole. It runs the
// instances' jobs it is given, and keeps the group's sequence — end the
// others, wait for all, back off, start all — in its own fields, so that
// the supervisor carries it out with the verdicts it knows (EndOthers,
// Wait, WakeIn) and holds no state of it. The rules, in order:
//
//	G1. An instance that failed by itself while the group runs and the
//	    run is not stopping ends the group: with --restarts left, every
//	    other instance is ended (EndOthers) and the group restarts (G2,
//	    G4); with none left, the others are ended as by -K.
//	G2. While the group is ending, every exit — the failed one's too —
//	    waits for the restart; the last (no slot runs a process any
//	    more) starts the backoff: the waiting instances are woken after
//	    Policy.Backoff (WakeIn).
//	G3. A process that starts while the group is ending is ended at once
//	    (ending): it belongs to the group that is being ended.
//	G4. Woken after the backoff, every waiting instance starts again, in
//	    its slot with its rank; its job's Try is the group's restart count
//	    (TORCHELASTIC_RESTART_COUNT).
//	G5. Any other end — a success, or an end gpulaunch caused while the
//	    group runs — leaves the instance waiting until the group restarts
//	    or is over; the last to end while none runs is done, and wakes the
//	    waiting ones, which are done too. -W applies as to instances, to
//	    the first that ended by itself.
//	G6. A stop of the run (a signal, -K, -W, --timeout of the run) is the
//	    group's end: an instance that exits is done, the waiting ones are
//	    done when woken, and nothing starts again.
//	G7. Each start of a rank is told its error file in the attempt's
//	    directory (TORCHELASTIC_ERROR_FILE, instance.ErrorFile); the
//	    instance whose failure ends the group (G1 with no restart left)
//	    is the group's first failure, whose error file is its root cause,
//	    as torchrun's "Root Cause (first observed failure)".
type Machine struct {
	jobs   []job.Job
	ranks  []int
	policy Policy
	// restarts is the group's restarts so far: the Try of the jobs it
	// starts.
	restarts int
	// ran is, per slot, the restart its instance last started in: a
	// waiting slot with ran < restarts has yet to start in this one.
	ran   []int
	phase groupPhase
	// delay is the backoff of the restart under way.
	delay time.Duration
	// failed is the failure that ended the group (G7); nil while none did.
	failed *Failure
}

// groupPhase is where the group is in its sequence.
type groupPhase int

const (
	groupRuns    groupPhase = iota // its instances run (or wait, done by G5)
	groupEnding                    // G1: the others are being ended
	groupBackoff                   // G2: every process ended; the restart waits out its delay
	groupStopped                   // G6: the run stops
)

// New is the group of the instances whose jobs (as they first start,
// by slot) and ranks are given, under p.
func New(jobs []job.Job, ranks []int, p Policy) *Machine {
	return &Machine{jobs: jobs, ranks: ranks, policy: p, ran: make([]int, len(jobs))}
}

// jobOf is slot's instance in the group's current restart (G4).
func (m *Machine) jobOf(slot int) job.Job {
	j := m.jobs[slot]
	j.Try = m.restarts
	j.Env = []string{"TORCHELASTIC_RESTART_COUNT=" + strconv.Itoa(m.restarts), "TORCHELASTIC_MAX_RESTARTS=" + strconv.Itoa(m.policy.Restarts)}
	if m.policy.ErrorDir != "" { // G7
		j.ErrorFile = instance.ErrorFile(m.policy.ErrorDir, m.restarts, m.ranks[slot])
		j.Env = append(j.Env, "TORCHELASTIC_ERROR_FILE="+j.ErrorFile)
	}
	m.ran[slot] = m.restarts
	return j
}

func (m *Machine) First(slot int) (job.Job, job.Then) { return m.jobOf(slot), job.Now }

// Resume is G4 after the backoff, and G5's and G6's end otherwise. A
// wake asks every waiting slot before any of them starts (wakeWaiting),
// so the group does not change phase in the middle of one; should it end
// again before a slot was asked, that slot waits for the restart (G2)
// rather than being done.
func (m *Machine) Resume(slot int) (job.Job, job.Then) {
	if m.phase == groupBackoff {
		m.phase, m.restarts = groupRuns, m.restarts+1
	}
	switch {
	case m.phase == groupRuns && m.ran[slot] < m.restarts:
		return m.jobOf(slot), job.Now
	case m.phase == groupEnding:
		return job.Job{}, job.Wait
	}
	return job.Job{}, job.Done
}

func (m *Machine) AfterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	switch {
	case m.phase == groupEnding:
		return m.waitForRestart(e)
	case m.phase == groupStopped || e.Stopping:
		return job.Verdict{Then: job.Done}
	case e.Failed() && e.By == job.EndedItself:
		return m.endGroup(slot, j, e)
	}
	return m.leaveWaiting(e)
}

// endGroup is G1.
func (m *Machine) endGroup(slot int, j job.Job, e job.Exit) job.Verdict {
	if m.restarts >= m.policy.Restarts {
		m.failed = &Failure{Instance: slot, Rank: m.ranks[slot], Attempt: m.restarts, Code: e.Code, Signal: e.Signal, ErrorFile: j.ErrorFile}
		v := job.Verdict{Then: job.Done, StopAll: job.EndedBadExit}
		v.Say(zap.InfoLevel, "instance %d failed and the group has no restart left: ending the others", slot)
		return v
	}
	m.phase, m.delay = groupEnding, m.policy.Backoff(m.restarts+1)
	v := m.waitForRestart(e)
	v.EndOthers = job.EndedGroup
	v.Say(zap.InfoLevel, "instance %d failed: every instance restarts in %s, as one group (restart %d of %d)", slot, m.delay, m.restarts+1, m.policy.Restarts)
	return v
}

// waitForRestart is G2.
func (m *Machine) waitForRestart(e job.Exit) job.Verdict {
	v := job.Verdict{Then: job.Wait}
	if e.Running == 0 {
		m.phase, v.WakeIn = groupBackoff, m.delay
	}
	return v
}

// leaveWaiting is G5.
func (m *Machine) leaveWaiting(e job.Exit) job.Verdict {
	v := job.Verdict{Then: job.Wait}
	if e.Running == 0 {
		v.Then, v.Wake = job.Done, true
	}
	v.StartWait = m.policy.WaitAfterFirst && !e.WaitStarted && e.By == job.EndedItself
	return v
}

// Stop is G6.
func (m *Machine) Stop(string, bool) bool {
	m.phase = groupStopped
	return false
}

// Ending is G3.
func (m *Machine) Ending() job.Ended {
	if m.phase == groupEnding {
		return job.EndedGroup
	}
	return job.EndedItself
}

// FirstFailure is G7's: the failure that ended the group; nil while none
// did.
func (m *Machine) FirstFailure() *Failure { return m.failed }
