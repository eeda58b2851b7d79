//go:build linux

package launcher

import (
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// A restarted instance's wall runs from its first start to its last
// exit, alike in its Outcome (the summary, the report) and its live row
// (gpulaunch status), and while it runs again, from its first start to
// now.
func TestWallOfARestartedInstance(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	s := slot{gpus: telemetry.NewGPUWatch(nil, nil)}
	s.began(&process.Process{PID: 10}, at(0))
	if e := s.ended(process.Reaped{Status: 1 << 8}, at(4)); e.Wall != 4*time.Second {
		t.Errorf("the first attempt's own wall %v, want 4s (the log's and the joblog's)", e.Wall)
	}
	s.job = s.job.Again() // its first restart
	s.began(&process.Process{PID: 11}, at(4.25))

	b := NewBoard(RunInfo{}, []Instance{{}})
	var row InstanceStatus
	s.row(0, &row)
	b.rows[0] = row
	snap := b.Snapshot()
	if got, want := snap.Instances[0].Wall, snap.Taken.Sub(t0); got != want {
		t.Errorf("running again: status wall %v, want %v (since the first start)", got, want)
	}

	e := s.ended(process.Reaped{}, at(13.5))
	if e.Wall != 9250*time.Millisecond {
		t.Errorf("the second attempt's own wall %v, want 9.25s", e.Wall)
	}
	s.done = true
	want := 13500 * time.Millisecond
	if o := s.outcome(0); o.Wall != want {
		t.Errorf("outcome wall %v, want %v: from the first start to the last exit", o.Wall, want)
	}
	s.row(0, &row)
	b.rows[0] = row
	if got := b.Snapshot().Instances[0].Wall; got != want {
		t.Errorf("exited: status wall %v, want %v", got, want)
	}
}
