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
