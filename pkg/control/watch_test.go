//go:build linux

package control

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// Watch's rule 1: the interval given, else the run's monitor interval,
// else 2s.
func TestWatchIntervalRule(t *testing.T) {
	for _, tc := range []struct {
		rule    string
		monitor string
		every   time.Duration
		want    time.Duration
	}{
		{"1: --interval given", "2s", 5 * time.Second, 5 * time.Second},
		{"1: the run's monitor interval", "500ms", 0, 500 * time.Millisecond},
		{"1: telemetry off: 2s", "0s", 0, 2 * time.Second},
		{"1: a run that says none: 2s", "", 0, 2 * time.Second},
	} {
		first := launcher.Snapshot{Run: launcher.RunInfo{Monitor: tc.monitor}}
		if got := interval(first, tc.every); got != tc.want {
			t.Errorf("rule %s: %s, want %s", tc.rule, got, tc.want)
		}
	}
}

// Watch's rules 3 and 4 on a live server: the first frame at once, a
// refresh every interval, and a run that goes without its final state
// ends the watch Gone; a cancelled context ends it Stopped.
func TestWatchFramesAndEnds(t *testing.T) {
	dir := filepath.Join(socketParent(t), "gpulaunch")
	board := launcher.NewBoard(launcher.RunInfo{PID: 44, Host: "h", Command: []string{"app"}}, []launcher.Instance{{Index: 0}})
	srv, err := Listen(dir, "h", 44, os.Getuid(), board, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	c := Client{Path: srv.Path()}
	first, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, first, 10*time.Millisecond)
	defer w.Stop()
	if !w.Next(ctx) || w.Snapshot().Run.PID != 44 {
		t.Fatalf("first frame: %+v", w.Snapshot())
	}
	if !w.Next(ctx) || w.Snapshot().Run.PID != 44 {
		t.Fatalf("a refresh: %+v", w.Snapshot())
	}
	// cancelled while the run is up: no frame but the first and what a
	// refresh already under way brings, then Stopped
	stopped, stop := context.WithCancel(context.Background())
	stop()
	w2 := c.Watch(stopped, first, time.Hour)
	defer w2.Stop()
	for n := 0; w2.Next(stopped); n++ {
		if n > 100 {
			t.Fatal("frames go on after the watch was cancelled")
		}
	}
	if w2.End() != Stopped {
		t.Errorf("a cancelled watch: end %v, want Stopped", w2.End())
	}

	srv.Close(time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for w.Next(ctx) {
		if time.Now().After(deadline) {
			t.Fatal("frames go on after the run has gone")
		}
	}
	if w.End() != Gone {
		t.Errorf("end %v, want Gone", w.End())
	}
}
