//go:build linux

package launcher

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Waiting holds gpulaunch's signals from before its run starts until the
// supervisor takes them (HandOver, Spec.Signals). Before its run
// gpulaunch may wait — for its MPS daemons to come up, for the holder of
// a queue over several nodes — and such a wait answers signals by the
// run's rules (README, "Signals"): a Ctrl-C ends it at once, not when it
// is over. From StartWaiting on, no signal has its default action: one
// that comes between a wait and the run waits in the channel for the
// supervisor.
type Waiting struct {
	sigs     chan os.Signal
	ctx      context.Context
	cancel   context.CancelCauseFunc
	hurry    chan struct{}
	handover chan struct{}
	read     chan struct{} // closed when the reader has stopped

	mu         sync.Mutex
	stoppedBy  syscall.Signal // 0: not stopped
	interrupts int
	hurried    bool
}

// StoppedBy is why a wait ended early: a signal to gpulaunch. It is the
// cause of Waiting's context (context.Cause), and so what a wait that
// takes that context returns, wrapped.
type StoppedBy struct{ Signal syscall.Signal }

func (s StoppedBy) Error() string { return job.SignalName(s.Signal) + " to gpulaunch" }

// ExitCode is the status of a run that a signal stopped while it waited
// (README, "Signals", 5 and 6): 128 + the signal for a run of instances,
// 255 for a task queue — on any node — whose tasks it left unrun.
func (s StoppedBy) ExitCode(queue bool) int {
	if queue {
		return 255
	}
	return 128 + int(s.Signal)
}

// waitAction is what a signal to gpulaunch does while it waits.
type waitAction struct {
	stop  bool // the wait ends: nothing more starts
	hurry bool // what the wait started is ended at once
}

// onWaitSignal decides what a signal does while gpulaunch waits, before
// anything of its run has started. The rules, in order:
//
//	W1. INT, TERM, HUP and QUIT stop the wait, and the run with it;
//	    the first is the one that stopped it. A queue's HUP too: no task
//	    runs, so its drain has nothing to let finish.
//	W2. A second INT while the wait stops (Ctrl-C twice) hurries what
//	    stops it: the helpers it started are KILLed at once, not asked
//	    to quit first.
//	W3. USR1 and USR2 are passed to every running instance, and none
//	    runs: they are dropped.
//
// interrupts counts the SIGINTs received, this one included.
func onWaitSignal(sig syscall.Signal, stopping bool, interrupts int) waitAction {
	switch sig {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		return waitAction{stop: !stopping, hurry: stopping && sig == syscall.SIGINT && interrupts >= 2}
	}
	return waitAction{}
}

// StartWaiting catches the signals that the run passes on from now on.
func StartWaiting() *Waiting {
	w := &Waiting{sigs: make(chan os.Signal, 16), hurry: make(chan struct{}), handover: make(chan struct{}), read: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancelCause(context.Background())
	signal.Notify(w.sigs, forwarded...)
	go w.readSignals()
	return w
}

// readSignals applies onWaitSignal to each signal until the hand-over.
func (w *Waiting) readSignals() {
	defer close(w.read)
	for {
		select {
		case <-w.handover:
			return
		case s := <-w.sigs:
			w.take(s.(syscall.Signal))
		}
	}
}

func (w *Waiting) take(sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sig == syscall.SIGINT {
		w.interrupts++
	}
	a := onWaitSignal(sig, w.stoppedBy != 0, w.interrupts)
	if a.stop {
		w.stoppedBy = sig
		w.cancel(StoppedBy{sig})
	}
	if a.hurry && !w.hurried {
		w.hurried = true
		close(w.hurry)
	}
}

// Context ends when a signal stops the wait; its cause is StoppedBy.
func (w *Waiting) Context() context.Context { return w.ctx }

// Hurry is closed by a second Ctrl-C after the stop (W2).
func (w *Waiting) Hurry() <-chan struct{} { return w.hurry }

// Stopped is the signal that stopped the wait, if one did.
func (w *Waiting) Stopped() (StoppedBy, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return StoppedBy{w.stoppedBy}, w.stoppedBy != 0
}

// HandOver ends the wait's own reading of signals and returns their
// channel for the supervisor (Spec.Signals): what comes from now on, or
// came and was not read, is the run's. Stopped, read after it, is final.
func (w *Waiting) HandOver() chan os.Signal {
	close(w.handover)
	<-w.read
	return w.sigs
}

// Stop ends the wait's hold on the signals, for a gpulaunch that ends
// without a run: from then on, as after a run, they are dropped.
func (w *Waiting) Stop() {
	signal.Notify(afterRun, forwarded...) // first: no gap with the default actions
	signal.Stop(w.sigs)
	select {
	case <-w.handover:
	default:
		close(w.handover)
	}
	<-w.read
}
