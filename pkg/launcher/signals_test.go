//go:build linux

package launcher

import (
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
