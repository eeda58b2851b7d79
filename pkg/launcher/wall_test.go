package launcher

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// A restarted instance's wall runs from its first start to its last
// exit, alike in its Outcome (the summary, the report) and its live row
// (gpulaunch status), and while it runs again, from its first start to
// now.
func TestWallOfARestartedInstance(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	s := slot{watch: newGPUWatch(nil, nil)}
	s.began(&process{pid: 10}, at(0))
	if e := s.ended(reaped{status: 1 << 8}, at(4)); e.wall != 4*time.Second {
		t.Errorf("the first attempt's own wall %v, want 4s (the log's and the joblog's)", e.wall)
	}
	s.restarts = 1
	s.began(&process{pid: 11}, at(4.25))

	b := NewBoard(RunInfo{}, []Instance{{}})
	var row InstanceStatus
	s.row(0, &row)
	b.rows[0] = row
	snap := b.Snapshot()
	if got, want := snap.Instances[0].Wall, snap.Taken.Sub(t0); got != want {
		t.Errorf("running again: status wall %v, want %v (since the first start)", got, want)
	}

	e := s.ended(reaped{}, at(13.5))
	if e.wall != 9250*time.Millisecond {
		t.Errorf("the second attempt's own wall %v, want 9.25s", e.wall)
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

// The summary says what WALL is when an instance restarted, and paints
// an instance's own failure red and an end gpulaunch caused yellow.
func TestSummaryWallNoteAndPaint(t *testing.T) {
	insts := []Instance{{Index: 0, Rank: 0}, {Index: 1, Rank: 1}, {Index: 2, Rank: 2}}
	outs := []Outcome{
		{Index: 0, Code: 3, Restarts: 1, Wall: 13500 * time.Millisecond},
		{Index: 1, Code: -1, Signal: syscall.SIGTERM, EndedBy: EndedBadExit},
		{Index: 2},
	}
	for _, paint := range []Paint{false, true} {
		var b strings.Builder
		WriteSummary(&b, insts, outs, paint)
		out := b.String()
		if !strings.Contains(out, "WALL: from an instance's first start to its last exit") || !strings.Contains(out, "13.5s") {
			t.Errorf("paint %v: no WALL note or wall:\n%s", paint, out)
		}
		for _, want := range []string{sgrFail + "3" + sgrReset, sgrWarn + "SIGTERM" + sgrReset, sgrWarn + "kill-on-bad-exit" + sgrReset, sgrPlain + "0" + sgrReset} {
			if strings.Contains(out, want) != bool(paint) {
				t.Errorf("paint %v: %q present: %v\n%q", paint, want, !bool(paint), out)
			}
		}
	}
	var b strings.Builder
	WriteSummary(&b, insts, outs[1:2], false)
	if strings.Contains(b.String(), "WALL:") {
		t.Errorf("a WALL note without a restart:\n%s", b.String())
	}
}
