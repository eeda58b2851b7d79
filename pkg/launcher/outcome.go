//go:build linux

package launcher

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// Outcome is how one instance ended.
type Outcome struct {
	Index    int            `json:"instance"`
	PID      int            `json:"pid"`
	Restarts int            `json:"restarts"`
	Wall     time.Duration  `json:"wall_ns"`
	Code     int            `json:"exit_code"` // -1 when killed by a signal
	Signal   syscall.Signal `json:"signal,omitempty"`
	EndedBy  job.Ended      `json:"ended_by,omitempty"`
	PeakRSS  uint64         `json:"peak_rss_bytes"`
	// CPUSeconds is the CPU time of the instance's process tree.
	CPUSeconds float64 `json:"cpu_seconds"`
	// GPUUtilMean and GPUUtilPeak are its own use of its GPUs in percent
	// over the samples taken while it ran (telemetry.InstanceUtil); -1
	// when none was taken. GPUUtilSource says where they come from:
	// "processes" (its processes' SM%), "gpu" (its GPUs' figure, whoever
	// used them: MPS, no per-process samples), "" (no sample).
	GPUUtilMean   float64 `json:"gpu_util_mean_pct"`
	GPUUtilPeak   int     `json:"gpu_util_peak_pct"`
	GPUUtilSource string  `json:"gpu_util_source"`
	// GPUMemPeak is the most GPU memory its processes held at once.
	GPUMemPeak uint64 `json:"gpu_mem_peak_bytes"`
	// Warnings are launch verification's findings.
	Warnings []string `json:"warnings"`
	// MPSFault says what a fault of its GPU's MPS server was to the
	// instance: its cause, or failed with it; "" none (fateMode).
	// WithServer: it failed with its GPU's server, not on its own.
	MPSFault   string `json:"mps_fault,omitempty"`
	WithServer bool   `json:"-"`
	// Tasks and TasksFailed count what a slot of a task queue ran.
	Tasks       int `json:"tasks,omitempty"`
	TasksFailed int `json:"tasks_failed,omitempty"`
	// Series and Events are its timeline, for the report's pictures;
	// filled once the run is over (supervisor.outcomes). EventsDropped
	// counts the events past the bound.
	Series        *telemetry.Series `json:"-"`
	Events        []telemetry.Event `json:"-"`
	EventsDropped int               `json:"-"`
}

// Status renders the outcome as srun would: "0", "7", "SIGSEGV".
func (o Outcome) Status() string {
	if o.Signal != 0 {
		return job.SignalName(o.Signal)
	}
	return fmt.Sprint(o.Code)
}

// ExitCode combines outcomes like srun (srun.1, RETURN VALUE: "the
// highest exit code of all tasks run or the highest signal (… 128 +
// signal) of any task that exited with a signal"). The rules, in order:
//  1. Instances that gpulaunch ended because another failed (-K, --ddp's
//     group, their GPU's MPS server's fault), or that failed with their
//     GPU's MPS server (WithServer), do not count: the run's code is the
//     failure that caused it.
//  2. An instance that gpulaunch ended for -W, --timeout or
//     --mem-per-task counts as killed by the TERM it was sent, whatever
//     it did then — exited 0 on it, or outlived the kill wait and was
//     KILLed: it did not finish, and `gpulaunch … && next` must not go on.
//  3. 128 + the highest signal if any counted instance was killed by one;
//  4. else the highest exit code.
func ExitCode(outs []Outcome) int {
	sig, code := 0, 0
	for _, o := range outs {
		if o.WithServer {
			continue
		}
		switch o.EndedBy {
		case job.EndedBadExit, job.EndedGroup, job.EndedMPSFault:
			continue
		case job.EndedWait, job.EndedTimeout, job.EndedMemory:
			o.Signal = syscall.SIGTERM
		}
		if o.Signal != 0 {
			sig = max(sig, int(o.Signal))
		} else {
			code = max(code, o.Code)
		}
	}
	if sig > 0 {
		return 128 + sig
	}
	return code
}

// Result is how a run ended.
type Result struct {
	// Outcomes are the instances' (a queue's slots'), in instance order.
	Outcomes []Outcome
	// Signal is the signal to gpulaunch that stopped the run (INT, TERM,
	// HUP, QUIT); 0 when none did.
	Signal syscall.Signal
	// RootCause is the failure that ended a distributed group (--ddp)
	// and what its rank reported, or the cause of the MPS server's fault
	// that ended a shared GPU's instances (--mps); nil when neither.
	RootCause *Failure
}

// ExitCode is a run of instances' exit status. The rules, in order:
//  1. A run that a signal to gpulaunch stopped (INT, TERM, HUP, QUIT)
//     exits 128 + that signal, the first that stopped it, whatever its
//     instances did then: exited 0 or failed on it, died of it, or were
//     KILLed after the kill wait or by a second Ctrl-C. The run did not
//     finish (srun: a task a signal ended beats every exit code), and
//     Ctrl-C gives a shell's 130.
//  2. Otherwise srun's rule (ExitCode).
func (r Result) ExitCode() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return ExitCode(r.Outcomes)
}

func describeSent(sent []Signalled) string {
	parts := make([]string, len(sent))
	for i, s := range sent {
		parts[i] = fmt.Sprintf("instance %d (pid %d)", s.Instance, s.PID)
	}
	return strings.Join(parts, ", ")
}
