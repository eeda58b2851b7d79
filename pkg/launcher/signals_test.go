//go:build linux

package launcher

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A signal after the run is over — while gpulaunch writes its summary and
// report — is dropped: it had its default action, and a HUP or TERM then
// killed gpulaunch half-way through the report. Before the fix this
// test's own process dies of the HUP.
func TestSignalAfterTheRunIsDropped(t *testing.T) {
	res, err := Run(Spec{Instances: []Instance{{Path: "/bin/true", Args: []string{"true"}, Env: os.Environ()}},
		Stdout: io.Discard, Stderr: io.Discard, Policy: Policy{KillWait: time.Second}})
	if err != nil || res.ExitCode() != 0 {
		t.Fatalf("run: %v, exit %d", err, res.ExitCode())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Delivered to afterRun, where a run drops it. Waiting only until the
	// kernel had it pending no more was not enough: Go hands a signal to
	// its channels later, on a goroutine of its own, and the next test's
	// Run, registered by then, took the HUP as its own and drained its
	// queue after one task (make test, once).
	select {
	case sig := <-afterRun:
		if sig != syscall.SIGHUP {
			t.Fatalf("afterRun had %v, want SIGHUP", sig)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the HUP never reached afterRun (signals pending: %#x)", pending(t))
	}
}

// pending is the signals pending for this process and any of its threads.
func pending(t *testing.T) uint64 {
	var set uint64
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range append(tasks, nil) {
		path := "/proc/self/status"
		if task != nil {
			path = "/proc/self/task/" + task.Name() + "/status"
		}
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && (k == "SigPnd" || k == "ShdPnd") {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err != nil {
					t.Fatalf("%s: %s: %v", path, l, err)
				}
				set |= n
			}
		}
	}
	return set
}

// What a signal does while gpulaunch waits before its run, rule by rule
// (onWaitSignal).
func TestOnWaitSignal(t *testing.T) {
	INT, TERM, HUP, QUIT, USR1, USR2 := syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2
	for _, tc := range []struct {
		name       string
		sig        syscall.Signal
		stopping   bool
		interrupts int
		want       waitAction
	}{
		{"W1: INT stops the wait", INT, false, 1, waitAction{stop: true}},
		{"W1: TERM stops the wait", TERM, false, 0, waitAction{stop: true}},
		{"W1: HUP stops the wait, a queue's too", HUP, false, 0, waitAction{stop: true}},
		{"W1: QUIT stops the wait", QUIT, false, 0, waitAction{stop: true}},
		{"W1: the first stop is the stop: a TERM after it changes nothing", TERM, true, 1, waitAction{}},
		{"W2: a second INT hurries the stop", INT, true, 2, waitAction{hurry: true}},
		{"W2: an INT after a TERM is the first INT", INT, true, 1, waitAction{}},
		{"W3: USR1 is dropped", USR1, false, 0, waitAction{}},
		{"W3: USR2 is dropped, stopping or not", USR2, true, 2, waitAction{}},
	} {
		if got := onWaitSignal(tc.sig, tc.stopping, tc.interrupts); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A Waiting with real signals to this process: USR1 is dropped, the
// first INT stops the wait (its context's cause says which), a second
// hurries; and a TERM that comes after the hand-over and before the run
// is the run's first signal — the supervisor reads it, and the run of a
// 30 s instance ends with 143. Before the hand-over existed, the run
// never saw it and lasted the 30 s.
func TestWaitingAnswersSignalsAndHandsThemOver(t *testing.T) {
	w := StartWaiting()
	self := os.Getpid()
	_ = syscall.Kill(self, syscall.SIGUSR1)
	_ = syscall.Kill(self, syscall.SIGINT)
	select {
	case <-w.Context().Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the INT did not stop the wait")
	}
	if by, ok := w.Stopped(); !ok || by.Signal != syscall.SIGINT || by.ExitCode(false) != 130 || by.ExitCode(true) != 255 {
		t.Errorf("stopped by %v (%v), want SIGINT: 130, a queue 255", by, ok)
	}
	var cause StoppedBy
	if !errors.As(context.Cause(w.Context()), &cause) || cause.Signal != syscall.SIGINT {
		t.Errorf("cause %v, want StoppedBy SIGINT", context.Cause(w.Context()))
	}
	_ = syscall.Kill(self, syscall.SIGINT)
	select {
	case <-w.Hurry():
	case <-time.After(20 * time.Second):
		t.Fatal("the second INT did not hurry the stop")
	}
	w.Stop()

	w = StartWaiting()
	sigs := w.HandOver()
	_ = syscall.Kill(self, syscall.SIGTERM)
	// delivered, to the waiting's channel alone, before the run begins
	for deadline := time.Now().Add(20 * time.Second); len(sigs) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the TERM never reached the handed-over channel")
		}
	}
	res, err := Run(Spec{Instances: []Instance{{Path: "/bin/sleep", Args: []string{"sleep", "30"}, Env: os.Environ()}},
		Stdout: io.Discard, Stderr: io.Discard, Policy: Policy{KillWait: time.Second}, Signals: sigs})
	w.Stop()
	if err != nil || res.ExitCode() != 143 {
		t.Fatalf("run: %v, exit %d, want 143 (the TERM before it)", err, res.ExitCode())
	}
}
