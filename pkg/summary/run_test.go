//go:build linux

package summary

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// The summary says what WALL is when an instance restarted, and paints
// an instance's own failure red and an end gpulaunch caused yellow.
func TestSummaryWallNoteAndPaint(t *testing.T) {
	insts := []launcher.Instance{{Index: 0, Rank: 0}, {Index: 1, Rank: 1}, {Index: 2, Rank: 2}}
	outs := []launcher.Outcome{
		{Index: 0, Code: 3, Restarts: 1, Wall: 13500 * time.Millisecond},
		{Index: 1, Code: -1, Signal: syscall.SIGTERM, EndedBy: job.EndedBadExit},
		{Index: 2},
	}
	for _, paint := range []Paint{false, true} {
		var b strings.Builder
		Write(&b, insts, outs, paint)
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
	Write(&b, insts, outs[1:2], false)
	if strings.Contains(b.String(), "WALL:") {
		t.Errorf("a WALL note without a restart:\n%s", b.String())
	}
}
