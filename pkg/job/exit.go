package job

import (
	"strconv"
	"syscall"
	"time"
)

// Exit is what the supervisor tells a mode about an ended job.
type Exit struct {
	Code    int            // the exit status; -1 when a signal killed it
	Signal  syscall.Signal // 0 when it exited
	By      Ended          // who ended it: EndedItself, or why gpulaunch did
	Started time.Time
	Wall    time.Duration
	// Stopping: the run is stopping (a signal to gpulaunch, -K, -W, a
	// halt); nothing new starts.
	Stopping bool
	// WaitStarted: -W's clock runs already.
	WaitStarted bool
	// Running is how many slots still run a process, or are starting
	// one, after this exit: 0 when it was the last (a group's restart
	// waits for that).
	Running int
	// Fault is the MPS server's fault the process failed with: it was a
	// client of its GPU's server when one client's fault set a sticky
	// error on every client (read from the server's log); nil: none.
	Fault *ServerFault
}

// ServerFault is one fault of an MPS server, as a fact of an exit: the
// server's log lists every client it set the sticky error on, the
// faulting one among them, and does not say which one faulted.
type ServerFault struct {
	// GPU is the shared GPU's place among the run's shared GPUs (the
	// launcher's Spec.Fates), N the fault's place in its server's log,
	// from 0: together they name the fault.
	GPU, N int
	// Line is the server's line that starts the list, as written (its
	// time and the server's pid); PIDs the clients it lists, in its
	// order.
	Line string
	PIDs []int
	// Listed is where the process's pid is in PIDs; -1: not there (a
	// child of the instance that gpulaunch did not see).
	Listed int
	// FirstSlot is the slot whose process PIDs names first: on the H200
	// and in the project's stand-in, the client that faulted (NVIDIA
	// does not document the order); -1: no process gpulaunch saw.
	FirstSlot int
	// Cause: the rules of a shared GPU's fate named this exit's slot the
	// fault's cause (set by them before a queue's rules read the exit).
	Cause bool
}

// ExitOf reads a wait status.
func ExitOf(ws syscall.WaitStatus) (code int, sig syscall.Signal) {
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return ws.ExitStatus(), 0
}

// Failed: a non-zero exit, or killed by a signal.
func (e Exit) Failed() bool { return e.Code != 0 }

// Status is the exit as srun writes it: "0", "7", "SIGSEGV".
func (e Exit) Status() string { return Status(e.Code, e.Signal) }

// Status renders an exit as srun does: the signal's name when a signal
// killed it, else the code.
func Status(code int, sig syscall.Signal) string {
	if sig != 0 {
		return SignalName(sig)
	}
	return strconv.Itoa(code)
}

// Ended says why a process stopped.
type Ended string

// Reasons a process stopped other than by itself.
const (
	EndedItself    Ended = ""
	EndedBadExit   Ended = "kill-on-bad-exit"
	EndedWait      Ended = "wait"
	EndedTimeout   Ended = "timeout"
	EndedMemory    Ended = "memory cap"
	EndedSignalled Ended = "signal to gpulaunch"
	EndedHalt      Ended = "halt"
	EndedGroup     Ended = "group restart"
	// EndedMPSFault: its GPU's MPS server set a sticky error on every
	// client (one client's fault); the server recovers only once every
	// client has exited, so gpulaunch ends those that have not yet.
	EndedMPSFault Ended = "MPS server fault"
	// A queue over several nodes, on a node that is not its holder: the
	// holder stopped the queue now (a signal or --halt there), or the
	// holder is gone.
	EndedHolderStop Ended = "queue stopped by its holder"
	EndedHolderLost Ended = "queue holder lost"
)

// ByGpulaunch: a task ended so did not finish; a queue does not record
// it, so that --resume (or another node) runs it again.
func (e Ended) ByGpulaunch() bool {
	switch e {
	case EndedHalt, EndedSignalled, EndedHolderStop, EndedHolderLost:
		return true
	}
	return false
}
