//go:build linux

package launcher

import (
	"strconv"
	"sync"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// slot is one slot of a run, as the supervisor keeps it: the instance the
// plan put there, the job it runs now or ran last, and the facts from
// which its public state — the board's row and its Outcome — is derived
// (row, outcome). The supervisor's lock guards every field but readers.
type slot struct {
	inst   Instance
	thread *process.Thread // made on the slot's first start
	job    job.Job         // the job running now, or the last one

	proc    *process.Process // the process running now; nil: none
	pid     int              // its pid; 0 when none runs
	started time.Time        // when the current or last process started
	first   time.Time        // when the slot's first process started: its wall counts from there
	endedBy job.Ended        // who is ending the current process: job.EndedItself until gpulaunch does
	timer   *time.Timer      // the current process's --timeout

	pending bool // a restart waits out its backoff
	waiting bool // the slot waits for its mode (job.Wait): a task from another node, its group's restart
	done    bool // the slot runs nothing more
	exited  bool // a process of the slot has exited
	// out holds the exit of the last process and the counts across all of
	// them; outcome completes it with the GPU record.
	out Outcome
	// env is a task's environment: the slot's own buffer, reused task
	// after task (ForkExec is done with it when it returns).
	env []string

	// tl is the slot's timeline: its samples over the run, decimated, and
	// its starts, exits and warnings.
	tl telemetry.Timeline

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
	gpus       *telemetry.GPUWatch // the slot's GPUs across samples

	// clientPIDs are the pids of the current or last process's tree
	// that gpulaunch saw: its own, those its GPU's MPS control daemon
	// logged as clients (followClients), and those of the sampler's
	// scans. An MPS server's fault lists its clients by pid (awaitFault).
	// mpsClient: the daemon logged one of them as a client.
	clientPIDs []int
	mpsClient  bool
	// fate is what its GPU's MPS server's last fault was to the slot,
	// withServer whether it failed with it (fateMode.role).
	fate       string
	withServer bool

	// readers counts the output streams still being copied: the slot's
	// output ring ends when the slot is done and they are.
	readers sync.WaitGroup
}

// environ is the environment j runs with: the instance's, plus the task
// number for a task, plus what its mode tells it (j.Env: a group's
// restart count, torchrun's variables).
func (s *slot) environ(j job.Job) []string {
	if j.Task.Seq == 0 && len(j.Env) == 0 {
		return s.inst.Env
	}
	s.env = append(s.env[:0], s.inst.Env...)
	if j.Task.Seq > 0 {
		s.env = append(s.env, "GPULAUNCH_TASK="+strconv.Itoa(j.Task.Seq))
	}
	s.env = append(s.env, j.Env...)
	return s.env
}

// began records the start of the slot's process p.
func (s *slot) began(p *process.Process, now time.Time) {
	s.proc, s.pid, s.started = p, p.PID, now
	if s.first.IsZero() {
		s.first = now
	}
	s.out.PID = p.PID
	s.clientPIDs, s.mpsClient = append(s.clientPIDs[:0], p.PID), false
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

// ended records the end of the slot's process and returns what a mode
// needs to know of it; the stopping and -W facts are the run's to add.
func (s *slot) ended(end process.Reaped, now time.Time) job.Exit {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.cpuDone += max(s.cpuNow, end.CPU)
	s.cpuNow, s.rss = 0, 0
	s.out.PeakRSS = max(s.out.PeakRSS, end.MaxRSS)
	code, sig := job.ExitOf(end.Status)
	e := job.Exit{Code: code, Signal: sig, By: s.endedBy, Started: s.started, Wall: now.Sub(s.started)}
	s.proc, s.pid, s.exited = nil, 0, true
	// The slot's wall is from its first start to this exit: a restarted
	// instance's whole time, not its last attempt's (e.Wall, the log's
	// "exited … after" and a task's joblog runtime).
	s.out.Wall, s.out.Code, s.out.Signal, s.out.EndedBy = now.Sub(s.first), code, sig, s.endedBy
	s.endedBy = job.EndedItself
	return e
}

// state is the slot's state as `gpulaunch status` shows it.
func (s *slot) state() string {
	switch {
	case s.pid > 0 && s.endedBy != job.EndedItself:
		return StateStopping
	case s.pid > 0:
		return StateRunning
	case s.done:
		return StateExited
	case s.waiting && s.exited && s.job.Task.Seq == 0:
		// an instance of a group (--ddp) that ended and waits for the
		// group's restart or end: it has exited, and may run again
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
	o.Index, o.CPUSeconds = index, s.cpuDone+s.cpuNow
	if s.job.Task.Seq == 0 {
		// an instance's restarts; a queue slot's outcome counts none (its
		// tasks' retries are the joblog's)
		o.Restarts = s.job.Try
	}
	o.GPUUtilMean, o.GPUUtilPeak, o.GPUUtilSource, o.GPUMemPeak = s.gpus.MeanUtil(), s.gpus.UtilPeak, s.gpus.Source, s.gpus.MemPeak
	o.Warnings = append([]string{}, s.gpus.Warnings...)
	o.MPSFault, o.WithServer = s.fate, s.withServer
	return o
}

// row fills the slot's line of the live table.
func (s *slot) row(index int, r *InstanceStatus) {
	o := s.outcome(index)
	r.State, r.PID, r.Started, r.Restarts = s.state(), o.PID, s.started, s.job.Try
	r.Wall, r.Exit, r.EndedBy, r.First = o.Wall, "", o.EndedBy, s.first
	if s.exited {
		r.Exit = o.Status()
	}
	if s.pid > 0 {
		r.EndedBy = s.endedBy
	}
	r.CPUPercent, r.CPUSeconds, r.RSS, r.PeakRSS = s.cpuPercent, o.CPUSeconds, s.rss, o.PeakRSS
	r.GPUUtil, r.GPUUtilSource, r.GPUMem, r.GPUUtilMean = s.gpus.LastUtil, s.gpus.LastSource, s.gpus.LastMem, o.GPUUtilMean
	// the watch's, not NewBoard's guess: --mps names the pipe directory
	// in the instances' environment after the board was made
	r.MPSClient = s.gpus.MPSClient()
	r.GPUSamples = append(r.GPUSamples[:0], s.gpus.PerGPU...)
	r.Warnings = append(r.Warnings[:0], o.Warnings...)
	r.Task, r.Command = s.job.Task.Seq, s.job.Task.Command
	r.MPSFault = o.MPSFault
}
