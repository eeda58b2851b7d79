//go:build linux

package launcher

import (
	"os"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// forwarded are the signals gpulaunch passes on to its processes.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// ForwardedNames are the forwarded signals by name ("SIGUSR1"), as
// Python's signal module and so torchrun's TORCHELASTIC_SIGNALS_TO_HANDLE
// name them (instance.EnvOptions.Forwarded).
func ForwardedNames() []string {
	names := make([]string, len(forwarded))
	for i, s := range forwarded {
		names[i] = job.SignalName(s.(syscall.Signal))
	}
	return names
}

// afterRun takes the signals that come after a run is over, and is never
// read: they are dropped (Run). Buffered, as signal.Notify asks; a full
// channel drops them too.
var afterRun = make(chan os.Signal, 1)

// signalAction is what gpulaunch does about a signal it received.
type signalAction struct {
	// drain: start nothing new and let what runs finish; nothing is sent.
	drain bool
	// forward: send the signal to every running process group.
	forward bool
	// stop: the run stops (no restart, no new task).
	stop bool
	// beginStop: this is the stop's first signal: the processes it
	// reaches count as ended by gpulaunch, and KILL follows the kill wait.
	beginStop bool
	// killNow: KILL every process group at once.
	killNow bool
}

// onSignal decides what a signal to gpulaunch does. The rules, in order:
//  1. SIGHUP to a run whose mode drains on hangup (a task queue): the
//     running tasks finish, none starts (GNU parallel's convention);
//     nothing is sent.
//  2. Every other signal is passed to every running process group (srun
//     passes signals to its tasks).
//  3. INT, TERM, HUP and QUIT also stop the run. The first stop makes the
//     processes it reaches ended by gpulaunch and starts the kill wait,
//     after which KILL follows.
//  4. When the run is stopping already, a second SIGINT (Ctrl-C twice)
//     KILLs at once; a second TERM does not, because Slurm sends TERM
//     twice at a time limit.
//
// interrupts counts the SIGINTs received, this one included.
func onSignal(sig syscall.Signal, drainsOnHangup, stopping bool, interrupts int) signalAction {
	if sig == syscall.SIGHUP && drainsOnHangup {
		return signalAction{drain: true}
	}
	a := signalAction{forward: true}
	switch sig {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		a.stop = true
		a.beginStop = !stopping
		a.killNow = stopping && sig == syscall.SIGINT && interrupts >= 2
	}
	return a
}
