package fate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
)

// Inner is the mode a Machine decorates: launcher's runMode, whose
// rules decide every exit that is not one of a GPU's fault (F4).
type Inner interface {
	First(slot int) (job.Job, job.Then)
	AfterExit(slot int, j job.Job, e job.Exit) job.Verdict
	Resume(slot int) (job.Job, job.Then)
	Stop(why string, now bool) bool
}

// Queue is the queue Inner runs: F2's held tasks go back to its front.
type Queue interface{ GiveBack(job.Job) }

// Policy is what a Machine reads of the run's: --restarts, -K, whether
// -W is set, and the wait before a restart (launcher's restartBackoff,
// by the restart's number).
type Policy struct {
	Restarts       int
	KillOnBadExit  bool
	WaitAfterFirst bool
	Backoff        func(restart int) time.Duration
}

// Cause is the cause of a GPU's MPS server's fault that ended the GPU's
// instances (F2b) or the run (F5): the run's root cause.
type Cause struct {
	Instance, Rank int
	// Attempt is the GPU's restart count when it failed.
	Attempt int
	// Code is the exit status, -1 when Signal killed it.
	Code   int
	Signal syscall.Signal
	Fault  *Fault
}

// Fault is what gpulaunch knows of a GPU's MPS server's fault: the
// server's log names every client it set the sticky error on, not which
// one faulted.
type Fault struct {
	// GPU is the GPU's number in the plan.
	GPU int
	// Line is the server's log line that starts its list (its time and
	// pid), PIDs the clients it lists, in its order.
	Line string
	PIDs []int
	// Listed: the cause was named by the list's order (its client first,
	// as the H200's server listed the faulting one); otherwise it was the
	// first of the GPU's instances whose failure gpulaunch handled.
	Listed bool
	// With are the instances that failed with the server, not on their
	// own.
	With []int
	// Said is the cause's last line of output: its CUDA error, as a
	// rule ("CUDA error: an illegal memory access was encountered").
	Said string
}

// Machine runs the instances (launcher's instanceMode) or a queue's
// tasks (queueMode) of GPUs shared under MPS (launcher's Spec.Fates),
// whose instances
// share a fate: one client's fault makes its GPU's server set a sticky
// error on every client, each fails at its next CUDA call, and the server
// serves again only once every client has exited (mps.Fate). It decorates
// the mode it wraps, which decides every other exit, and keeps each
// GPU's sequence — its fault's clients ended, all exited, the server
// recovered, all started again — in its own fields, as launcher's
// groupMode keeps a --ddp group's. Whether an exit is one of a fault is a
// fact the supervisor reads from the server's log before it hands the
// exit over (launcher's awaitFault, mps.FaultOf: C1–C3). The rules, in order:
//
//	F1. An instance of a shared GPU that failed with a fault of its
//	    server not handled before begins the GPU's fault, unless the run
//	    stops: every other instance of the GPU that runs (or waits out a
//	    restart's backoff) and has not failed by itself StickyGrace
//	    later is ended (EndOthers among the GPU's slots, EndIn), for the
//	    server recovers only once every client has exited — but the
//	    cause (F3), when its exit is still to come: the faulting client
//	    fails by itself, and its status is the run's; those done before
//	    the fault stay done.
//	F2. While the GPU's fault is handled, every exit of its instances
//	    waits — failed with the sticky error, ended by F1, or a success;
//	    the last (no instance of the GPU runs) waits for the server's
//	    recovery (its log's "Destroy server context", bounded) and, when
//	    they restart, restartBackoff; then
//	    a. with --restarts left to the GPU, the instances the fault took
//	       down start again, together, each counting one restart, and the
//	       GPU one of its own: the neighbours' collateral failure is
//	       counted once, for the GPU, not against each one's budget;
//	    b. with none, they are done: the cause failed (the run's root
//	       cause, F3), the others failed with their GPU's MPS server and
//	       count in the exit status no more than -K's ended instances
//	       (ExitCode's rule 1); -K then ends the run.
//	F3. The fault's cause is the instance whose process tree holds the
//	    client the server's list names first (a client is known by its
//	    pid from its daemon's control.log while it lives, its instance
//	    by its ancestry: followClients, mps.OwnerOf) — on the H200 and in the stand-in the client
//	    that faulted, an order NVIDIA does not document — or, where that
//	    pid is no process gpulaunch saw, the first instance of the GPU
//	    whose failed exit was handled. The log lists every client with
//	    the sticky error and cannot say more.
//	F4. Any other exit follows the wrapped mode's rules; an instance's
//	    own failures count against its own --restarts, not its restarts
//	    with its GPU.
//	F5. A stop of the run: nothing restarts; a waiting instance is done
//	    when woken; the fault handled when the run stopped is its root
//	    cause, as when no --restarts are left (F2b).
//	F6. A process that starts on a GPU whose fault is handled is ended
//	    at once (ending): it would be refused by the sticky server.
//
// Under a queue the same sequence applies to the GPU's slots, with the
// queue's rules for the tasks (taskqueue's task.go, rule 1): a task that
// failed with its GPU's server and is not the cause is given back and
// runs again, no try counted; the cause's task failed (its tries, its
// record); F2's waiting slots take no task, and a task they would take
// next — the cause's retry among them — goes back to the queue's front
// until the GPU's server has recovered (F2a for every slot of the GPU,
// whatever --restarts says: --restarts is not a queue's).
type Machine struct {
	inner  Inner
	policy Policy
	// queue is the queue inner runs (F2's held tasks go back to it);
	// nil: inner runs instances.
	queue Queue
	// of is each slot's GPU's place in fates; -1: a slot of no shared
	// GPU, which inner alone decides.
	of    []int
	fates []fateState
	// Per slot: its last job; its own restarts (F4) and those with its
	// GPU (F2a); whether it runs a process or will (a restart's backoff).
	jobs          []job.Job
	own, together []int
	live          []bool
	ranks         []int
	stopped       bool
	faults        int // the faults begun, of every GPU
	// failed is the first fault that ended its instances (F2b): the
	// run's root cause; nil while none did.
	failed *Cause
}

// fateState is one shared GPU's state.
type fateState struct {
	fate  mps.Fate
	phase fatePhase
	// fault is the fault handled now, or last; handled counts its log's
	// faults handled: one with N < handled is over.
	fault   *job.ServerFault
	handled int
	// restarts are the GPU's restarts so far (F2a), restart whether the
	// fault handled now ends in one.
	restarts int
	restart  bool
	// cause is the fault's cause (F3), -1 while not known; listed: named
	// by the server's list, not by the order of the exits. down are the
	// slots the fault took down, with the slots that failed with the
	// server, not on their own.
	cause  int
	listed bool
	down   []int
	with   []int
	// causeEnd is the cause's exit, once it came.
	causeEnd job.Exit
	// begun orders the GPUs' faults: the run's faults so far when this
	// one began.
	begun int
	// roles say, per slot of the GPU, what its last fault was to it, for
	// status and the summary; with marks those that failed with it.
	roles map[int]string
}

type fatePhase int

// StickyGrace is how long a GPU's clients have to fail by themselves
// after its server's fault, at their next CUDA call and with their own
// error line, before gpulaunch ends them: on the H200 all 4 had failed
// within 0.45 s; a client between two calls (a long CPU phase) would
// hold the server, and its neighbours' restart, for as long.
const StickyGrace = 2 * time.Second

const (
	fateRuns       fatePhase = iota // its instances run as they will
	fateEnding                      // F1: a fault's clients are being ended; F2 waits for them
	fateRecovering                  // F2: every client exited; the server recovers, then they restart
	fateOver                        // F2b: the fault's instances are done
)

// New decorates inner, which runs len(ranks) slots (each slot's rank),
// with the fates of GPUs fates; q is the queue inner runs, nil for
// instances.
func New(inner Inner, fates []mps.Fate, ranks []int, p Policy, q Queue) *Machine {
	n := len(ranks)
	m := &Machine{inner: inner, policy: p, queue: q, of: make([]int, n), jobs: make([]job.Job, n), own: make([]int, n), together: make([]int, n),
		live: make([]bool, n), ranks: make([]int, n)}
	for i := range m.of {
		m.of[i], m.ranks[i] = -1, ranks[i]
	}
	for g, f := range fates {
		m.fates = append(m.fates, fateState{fate: f, cause: -1, roles: map[int]string{}})
		for _, s := range f.Slots {
			if s >= 0 && s < n {
				m.of[s] = g
			}
		}
	}
	return m
}

func (m *Machine) First(slot int) (job.Job, job.Then) {
	j, then := m.inner.First(slot)
	m.live[slot] = then == job.Now
	return j, then
}

// resume is F2's end when its GPU has recovered, F5's when the run
// stops, the wrapped mode's otherwise.
func (m *Machine) Resume(slot int) (job.Job, job.Then) {
	g := m.of[slot]
	if g < 0 {
		return m.inner.Resume(slot)
	}
	f := &m.fates[g]
	switch {
	case m.stopped && m.queue == nil: // F5
		return job.Job{}, job.Done
	case f.phase == fateEnding:
		return job.Job{}, job.Wait
	case f.phase == fateOver:
		return job.Job{}, job.Done
	case f.phase == fateRecovering:
		f.phase = fateRuns
	}
	if m.queue != nil {
		j, then := m.inner.Resume(slot)
		m.live[slot] = then == job.Now
		return j, then
	}
	if !f.restart || !slices.Contains(f.down, slot) { // F2a: those it took down
		return job.Job{}, job.Done
	}
	f.down = slices.DeleteFunc(f.down, func(s int) bool { return s == slot })
	f.with = slices.DeleteFunc(f.with, func(s int) bool { return s == slot })
	f.roles[slot] = fmt.Sprintf("restarted with GPU %d's instances after its MPS server's fault (%s)", f.fate.Index, m.causeOf(g))
	m.together[slot]++
	j := m.jobs[slot]
	j.Try = m.own[slot] + m.together[slot]
	m.live[slot] = true
	return j, job.Now
}

func (m *Machine) AfterExit(slot int, j job.Job, e job.Exit) job.Verdict {
	m.live[slot] = false
	m.jobs[slot] = j
	g := m.of[slot]
	if g < 0 {
		return m.track(slot, m.inner.AfterExit(slot, j, e))
	}
	f := &m.fates[g]
	switch {
	case f.phase == fateEnding: // F2
		return m.downed(g, slot, j, e)
	case e.Fault != nil && e.Fault.N >= f.handled && !m.stopped && !e.Stopping: // F1
		return m.beginFault(g, slot, j, e)
	}
	e.Fault = nil // an earlier fault's, or the run stops: its own end (F4, F5)
	return m.ownEnd(slot, j, e)
}

// ownEnd is F4: the wrapped mode's rules, an instance's own restarts
// counted apart from its restarts with its GPU.
func (m *Machine) ownEnd(slot int, j job.Job, e job.Exit) job.Verdict {
	if m.queue != nil {
		return m.track(slot, m.inner.AfterExit(slot, j, e))
	}
	mine := j
	mine.Try = m.own[slot]
	v := m.inner.AfterExit(slot, mine, e)
	if v.Then == job.Later {
		m.own[slot] = v.Job.Try
		v.Job.Try += m.together[slot]
	}
	return m.track(slot, v)
}

// track notes whether slot runs a process, or will, after verdict v.
func (m *Machine) track(slot int, v job.Verdict) job.Verdict {
	m.live[slot] = v.Then == job.Now || v.Then == job.Later
	return v
}

// beginFault is F1.
func (m *Machine) beginFault(g, slot int, j job.Job, e job.Exit) job.Verdict {
	f := &m.fates[g]
	f.phase, f.fault, f.handled = fateEnding, e.Fault, e.Fault.N+1
	m.faults++
	f.begun = m.faults
	f.cause, f.listed, f.with, f.down = -1, false, nil, []int{slot}
	if first := e.Fault.FirstSlot; first >= 0 && m.of[first] == g { // F3
		f.cause, f.listed = first, true
	}
	var others []int
	for _, s := range f.fate.Slots {
		if s == slot || !m.live[s] {
			continue
		}
		f.down = append(f.down, s)
		if s != f.cause { // the faulting client ends by itself, with its own status
			others = append(others, s)
		}
	}
	f.restart = m.queue != nil || f.restarts < m.policy.Restarts
	for _, s := range others { // said while they still run, until their own exits (noteRoles)
		f.roles[s] = fmt.Sprintf("failing with GPU %d's MPS server, whose sticky error reaches every client (%s); ended in %s unless it fails by itself first",
			f.fate.Index, m.causeOf(g)+" fault", StickyGrace)
	}
	v := m.downed(g, slot, j, e)
	if len(others) > 0 {
		v.EndOthers, v.Among, v.EndIn = job.EndedMPSFault, others, StickyGrace
	}
	then := "they are done (no --restarts left)"
	switch {
	case m.queue != nil:
		then = "its slots take no task until every client has exited and the server has recovered; the tasks it took down run again"
	case f.restart:
		then = fmt.Sprintf("they restart together once all have exited and the server has recovered (the GPU's restart %d of %d)", f.restarts+1, m.policy.Restarts)
	}
	v.Say(zap.WarnLevel, "GPU %d's MPS server set a sticky error on every client (its log: %s): %s; ending %s; %s",
		f.fate.Index, strings.TrimSpace(e.Fault.Line), m.causeSaid(g, slot), slotList(m.queue, others, "none left running"), then)
	return v
}

// causeSaid names the fault's cause for the log, as far as it is known.
func (m *Machine) causeSaid(g, slot int) string {
	f := &m.fates[g]
	if f.listed {
		return fmt.Sprintf("%s %d's client is listed first, the faulting one where the server's order is the H200's", m.unit(), f.cause)
	}
	return fmt.Sprintf("%s %d failed first (the log lists every client, not which faulted)", m.unit(), slot)
}

// downed is F2: an exit of the fault's clients waits, the last one for
// the server's recovery.
func (m *Machine) downed(g, slot int, j job.Job, e job.Exit) job.Verdict {
	f := &m.fates[g]
	if f.cause < 0 && e.Fault != nil { // F3: the first failed exit handled
		f.cause = slot
	}
	if !slices.Contains(f.down, slot) {
		f.down = append(f.down, slot)
	}
	if slot == f.cause {
		f.causeEnd = e
	}
	if slot != f.cause && (e.Failed() || e.By == job.EndedMPSFault) && !slices.Contains(f.with, slot) {
		f.with = append(f.with, slot)
	}
	m.noteRoles(g)
	v := job.Verdict{Then: job.Wait}
	if m.queue != nil {
		v = m.heldTask(slot, j, e, slot == f.cause)
	}
	if m.liveOn(g) {
		return v
	}
	if m.queue == nil && (!f.restart || m.stopped || e.Stopping) { // F2b
		return m.fateOver(g, slot, e)
	}
	f.phase = fateRecovering
	v.Recovery = f.fault
	if m.queue == nil {
		v.WakeIn = m.policy.Backoff(f.restarts + 1)
		f.restarts++
	}
	return v
}

// heldTask is a queue slot's exit during its GPU's fault: the queue's
// rules judge the task (the cause's is its own failure; the others'
// given back), and a task the slot would run next waits at the front of
// the queue, with the slot, for the GPU's recovery.
func (m *Machine) heldTask(slot int, j job.Job, e job.Exit, cause bool) job.Verdict {
	if e.Fault != nil {
		fault := *e.Fault
		fault.Cause = cause
		e.Fault = &fault
	}
	v := m.inner.AfterExit(slot, j, e)
	switch {
	case v.Then == job.Now:
		m.queue.GiveBack(v.Job)
		v.Then, v.Job = job.Wait, job.Job{}
	case v.Then == job.Done && !e.Stopping && v.StopAll == "":
		// the tasks its neighbours give back may still come
		v.Then = job.Wait
	}
	return v
}

// fateOver is F2b: the GPU's fault ends its instances.
func (m *Machine) fateOver(g, slot int, e job.Exit) job.Verdict {
	f := &m.fates[g]
	f.phase = fateOver
	v := job.Verdict{Then: job.Done, Wake: true}
	if m.failed == nil && f.cause >= 0 {
		m.failed = m.causeFailure(g)
	}
	if m.policy.KillOnBadExit && !e.Stopping && !m.stopped {
		v.Say(zap.InfoLevel, "GPU %d's MPS fault ended its instances: ending the others (--kill-on-bad-exit)", f.fate.Index)
		v.StopAll = job.EndedBadExit
	}
	v.StartWait = m.policy.WaitAfterFirst && !e.WaitStarted && !e.Stopping
	return v
}

// liveOn: an instance of GPU g runs a process, or will.
func (m *Machine) liveOn(g int) bool {
	for _, s := range m.fates[g].fate.Slots {
		if m.live[s] {
			return true
		}
	}
	return false
}

// noteRoles says what GPU g's fault is to each of its instances.
func (m *Machine) noteRoles(g int) {
	f := &m.fates[g]
	for _, s := range f.down {
		switch {
		case s == f.cause && f.listed:
			f.roles[s] = fmt.Sprintf("its client listed first by GPU %d's MPS server (the faulting one where the server's order is the H200's): the fault's cause", f.fate.Index)
		case s == f.cause:
			f.roles[s] = fmt.Sprintf("the first to fail of GPU %d's MPS clients: the fault's cause", f.fate.Index)
		case slices.Contains(f.with, s) && f.cause >= 0:
			f.roles[s] = fmt.Sprintf("failed with GPU %d's MPS server (%s %d's fault), not on its own", f.fate.Index, m.unit(), f.cause)
		case slices.Contains(f.with, s):
			f.roles[s] = fmt.Sprintf("failed with GPU %d's MPS server, not on its own", f.fate.Index)
		}
	}
}

// role is what slot's GPU's last fault was to it ("" none), and whether
// it failed with its GPU's server rather than on its own (F2b).
func (m *Machine) Role(slot int) (string, bool) {
	g := m.of[slot]
	if g < 0 {
		return "", false
	}
	f := &m.fates[g]
	return f.roles[slot], slot != f.cause && slices.Contains(f.with, slot)
}

// causeOf names GPU g's last fault's cause: "instance 2's".
func (m *Machine) causeOf(g int) string {
	if c := m.fates[g].cause; c >= 0 {
		return fmt.Sprintf("%s %d's", m.unit(), c)
	}
	return "a client's"
}

// unit is what the mode's slots run, as the log names it.
func (m *Machine) unit() string {
	if m.queue != nil {
		return "slot"
	}
	return "instance"
}

// stop is F5, and the wrapped mode's.
func (m *Machine) Stop(why string, now bool) bool {
	m.stopped = true
	return m.inner.Stop(why, now)
}

// ending is F6.
func (m *Machine) Ending(slot int) job.Ended {
	if g := m.of[slot]; g >= 0 && m.fates[g].phase == fateEnding {
		return job.EndedMPSFault
	}
	return job.EndedItself
}

// causeFailure is GPU g's fault's cause as the run's root cause.
func (m *Machine) causeFailure(g int) *Cause {
	f := &m.fates[g]
	attempt := f.restarts
	if f.phase == fateRecovering && m.queue == nil {
		attempt-- // counted for a restart that did not come
	}
	return &Cause{Instance: f.cause, Rank: m.ranks[f.cause], Attempt: attempt, Code: f.causeEnd.Code, Signal: f.causeEnd.Signal,
		Fault: &Fault{GPU: f.fate.Index, Line: strings.TrimSpace(f.fault.Line), PIDs: f.fault.PIDs, Listed: f.listed, With: slices.Sorted(slices.Values(f.with))}}
}

// Cause is F2b's, or F5's: a run stopped while a GPU's fault was
// handled (its instances ending, or waiting for the server's recovery
// and their restart together) failed with that fault, as one whose
// restarts ran out, whichever GPU's fault came first.
func (m *Machine) Cause() *Cause {
	if m.failed != nil || !m.stopped || m.queue != nil {
		return m.failed
	}
	first := -1
	for g := range m.fates {
		f := &m.fates[g]
		if f.phase != fateRuns && f.cause >= 0 && (first < 0 || f.begun < m.fates[first].begun) {
			first = g
		}
	}
	if first >= 0 {
		m.failed = m.causeFailure(first)
	}
	return m.failed
}

// slotList names slots for the log: "instances 1,3"; none when empty.
func slotList(q Queue, slots []int, none string) string {
	if len(slots) == 0 {
		return none
	}
	ids := make([]string, len(slots))
	for i, s := range slots {
		ids[i] = strconv.Itoa(s)
	}
	if q != nil {
		return "the tasks of slots " + strings.Join(ids, ",")
	}
	return "instances " + strings.Join(ids, ",")
}
