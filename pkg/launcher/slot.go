package launcher

import (
	"strconv"
	"sync"
	"syscall"
	"time"
)

// slot is one slot of a run, as the supervisor keeps it: the instance the
// plan put there, the job it runs now or ran last, and the facts from
// which its public state — the board's row and its Outcome — is derived
// (row, outcome). The supervisor's lock guards every field but readers.
type slot struct {
	inst   Instance
	thread *slotThread // made on the slot's first start
	job    job         // the job running now, or the last one

	proc    *process    // the process running now; nil: none
	pid     int         // its pid; 0 when none runs
	started time.Time   // when the current or last process started
	first   time.Time   // when the slot's first process started: its wall counts from there
	endedBy Ended       // who is ending the current process: EndedItself until gpulaunch does
	timer   *time.Timer // the current process's --timeout

	restarts int  // an instance's restarts so far
	pending  bool // a restart waits out its backoff
	waiting  bool // a queue slot waits for a task (thenWait)
	done     bool // the slot runs nothing more
	exited   bool // a process of the slot has exited
	// out holds the exit of the last process and the counts across all of
	// them; outcome completes it with the GPU record.
	out Outcome
	// env is a task's environment: the slot's own buffer, reused task
	// after task (ForkExec is done with it when it returns).
	env []string

	// tl is the slot's timeline: its samples over the run, decimated, and
	// its starts, exits and warnings.
	tl timeline

	// CPU time in seconds: of the slot's finished processes (from wait4,
	// or their last sample if that saw more: orphans the kernel does not
	// count), and of the current process tree as last sampled.
	cpuDone, cpuNow float64
	// The sampler's view of the current process tree: the last sample's
	// resident memory and CPU rate, and the sample before, for the rate.
	rss        uint64
	cpuPercent float64
	sampledAt  time.Time
	sampledCPU float64
	watch      *gpuWatch // the slot's GPUs across samples

	// readers counts the output streams still being copied: the slot's
	// output ring ends when the slot is done and they are.
	readers sync.WaitGroup
}

// environ is the environment job runs with: the instance's, plus the
// task number for a task, or the group's restart count (torchrun's
// variables) for an instance of a group.
func (s *slot) environ(j job, p Policy) []string {
	switch {
	case j.task.Seq > 0:
		s.env = append(append(s.env[:0], s.inst.Env...), "GPULAUNCH_TASK="+strconv.Itoa(j.task.Seq))
	case p.Group:
		s.env = append(append(s.env[:0], s.inst.Env...),
			"TORCHELASTIC_RESTART_COUNT="+strconv.Itoa(j.try), "TORCHELASTIC_MAX_RESTARTS="+strconv.Itoa(p.Restarts))
	default:
		return s.inst.Env
	}
	return s.env
}

// began records the start of the slot's process p.
func (s *slot) began(p *process, now time.Time) {
	s.proc, s.pid, s.started = p, p.pid, now
	if s.first.IsZero() {
		s.first = now
	}
	s.out.PID = p.pid
	s.rss, s.cpuPercent, s.sampledAt, s.sampledCPU, s.cpuNow = 0, 0, time.Time{}, 0, 0
}

// sampled takes one sample of the current process tree: its CPU time in
// seconds and its resident memory.
func (s *slot) sampled(now time.Time, cpu float64, rss uint64) {
	s.cpuNow = max(s.cpuNow, cpu)
	s.rss = rss
	s.out.PeakRSS = max(s.out.PeakRSS, rss)
	s.cpuPercent = 0
	if dt := now.Sub(s.sampledAt).Seconds(); !s.sampledAt.IsZero() && dt > 0 {
		s.cpuPercent = 100 * max(0, s.cpuNow-s.sampledCPU) / dt
	}
	s.sampledAt, s.sampledCPU = now, s.cpuNow
}

// reaped is a child's end as wait4 reports it: its status, and the
// kernel's own account of its resources — its CPU time and peak resident
// memory, its reaped children's included. They are exact where samples
// are not: a process that ends between two samples was never sampled.
type reaped struct {
	status syscall.WaitStatus
	cpu    float64 // user + system CPU time, seconds
	maxRSS uint64  // peak resident set, bytes
}

// ended records the end of the slot's process and returns what a mode
// needs to know of it; the stopping and -W facts are the run's to add.
func (s *slot) ended(end reaped, now time.Time) exitFacts {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.cpuDone += max(s.cpuNow, end.cpu)
	s.cpuNow, s.rss = 0, 0
	s.out.PeakRSS = max(s.out.PeakRSS, end.maxRSS)
	code, sig := exitOf(end.status)
	e := exitFacts{code: code, signal: sig, by: s.endedBy, started: s.started, wall: now.Sub(s.started)}
	s.proc, s.pid, s.exited = nil, 0, true
	// The slot's wall is from its first start to this exit: a restarted
	// instance's whole time, not its last attempt's (e.wall, the log's
	// "exited … after" and a task's joblog runtime).
	s.out.Wall, s.out.Code, s.out.Signal, s.out.EndedBy = now.Sub(s.first), code, sig, s.endedBy
	s.endedBy = EndedItself
	return e
}

// state is the slot's state as `gpulaunch status` shows it.
func (s *slot) state() string {
	switch {
	case s.pid > 0 && s.endedBy != EndedItself:
		return StateStopping
	case s.pid > 0:
		return StateRunning
	case s.done:
		return StateExited
	case s.waiting:
		return StateWaiting
	case s.exited:
		return StateRestarting
	}
	return StateStarting
}

// outcome is how the slot ended, or stands now.
func (s *slot) outcome(index int) Outcome {
	o := s.out
	o.Index, o.Restarts, o.CPUSeconds = index, s.restarts, s.cpuDone+s.cpuNow
	o.GPUUtilMean, o.GPUUtilPeak, o.GPUMemPeak = s.watch.meanUtil(), s.watch.utilPeak, s.watch.memPeak
	o.Warnings = append([]string{}, s.watch.warnings...)
	return o
}

// row fills the slot's line of the live table.
func (s *slot) row(index int, r *InstanceStatus) {
	o := s.outcome(index)
	r.State, r.PID, r.Started, r.Restarts = s.state(), o.PID, s.started, s.job.try
	r.Wall, r.Exit, r.EndedBy, r.first = o.Wall, "", o.EndedBy, s.first
	if s.exited {
		r.Exit = o.Status()
	}
	if s.pid > 0 {
		r.EndedBy = s.endedBy
	}
	r.CPUPercent, r.CPUSeconds, r.RSS, r.PeakRSS = s.cpuPercent, o.CPUSeconds, s.rss, o.PeakRSS
	r.GPUUtil, r.GPUMem, r.GPUUtilMean = s.watch.lastUtil, s.watch.lastMem, o.GPUUtilMean
	r.Warnings = append(r.Warnings[:0], o.Warnings...)
	r.Task, r.Command = s.job.task.Seq, s.job.task.Command
}
