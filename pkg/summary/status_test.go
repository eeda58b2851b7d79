//go:build linux

package summary

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// eightOnH100 is a live table of 8 instances on a DGX H100: some
// running, some exited, one failed, one ended by gpulaunch, warnings.
func eightOnH100() launcher.Snapshot {
	s := launcher.Snapshot{Run: launcher.RunInfo{PID: 16426, Host: "gpu07", Command: []string{"python", "train.py", "--epochs", "90"}, Monitor: "2s"}}
	s.Taken = time.Now()
	s.Run.Started = s.Taken.Add(-95 * time.Second)
	cpus := []string{"0-13,112-125", "14-27,126-139", "28-41,140-153", "42-55,154-167", "56-69,168-181", "70-83,182-195", "84-97,196-209", "98-111,210-223"}
	bus := []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}
	for i := range 8 {
		r := launcher.InstanceStatus{Index: i, Rank: i, State: launcher.StateRunning, PID: 16433 + i, GPUs: "0000:" + bus[i] + ":00.0", CPUs: cpus[i],
			Restarts: 0, Wall: 95 * time.Second, CPUPercent: 99, RSS: 2 << 30, GPUUtil: 90, GPUMem: 30 << 30}
		switch i {
		case 2:
			r.State, r.Exit, r.Restarts = launcher.StateExited, "1", 3
		case 5:
			r.State, r.Exit, r.EndedBy = launcher.StateExited, "SIGTERM", job.EndedSignalled
		case 6:
			r.State, r.Exit = launcher.StateExited, "0"
		case 7:
			r.Warnings = []string{"instance 7: no process of it used its GPU(s) GPU-aedafa02-10e0-6fbc-9c68-d2c6dbc3010f over 3 sample(s): is the app running on the CPU (a CPU-only build, or no GPU code path)?"}
		}
		s.Instances = append(s.Instances, r)
	}
	return s
}

// Rules of fitTable, each by its number, on the live table.
func TestFitTableRules(t *testing.T) {
	names := func(cols []*table.Column) string {
		var s []string
		for _, c := range cols {
			if c.Shown() {
				s = append(s, c.Name)
			}
		}
		return strings.Join(s, ",")
	}
	whole := names(StatusColumns(eightOnH100()))
	for _, tc := range []struct {
		rule  string
		width int
		want  string // the columns shown
		gpu   string // instance 0's GPU cell, when shown
	}{
		{"1: not a terminal", 0, whole, "0000:18:00.0"},
		{"1: wide enough", 200, whole, "0000:18:00.0"},
		{"2+3: 80 columns", 80, "INSTANCE,STATE,GPU,WALL,RESTARTS,GPU%,LAST EXIT", "18:00.0"},
		{"3: 60 columns", 60, "INSTANCE,STATE,GPU%,LAST EXIT", ""},
		{"3+4: 40 columns", 40, "INSTANCE,STATE,GPU%,LAST EXIT", ""},
	} {
		cols := StatusColumns(eightOnH100())
		table.Fit(cols, tc.width)
		if got := names(cols); got != tc.want {
			t.Errorf("%s: columns %s, want %s", tc.rule, got, tc.want)
		}
		if g := table.Find(cols, "GPU"); g != nil && g.Cells[0] != tc.gpu {
			t.Errorf("%s: GPU %q, want %q", tc.rule, g.Cells[0], tc.gpu)
		}
		if tc.width > 0 && table.Width(cols) > tc.width {
			t.Errorf("%s: %d columns wide, want at most %d", tc.rule, table.Width(cols), tc.width)
		}
		if exit := table.Find(cols, "LAST EXIT"); tc.width == 40 && exit.Cells[5] != "SIGTERM (signa…" {
			t.Errorf("%s: instance 5's LAST EXIT %q, want it cut to fit", tc.rule, exit.Cells[5])
		}
	}
}

// The live table of 8 instances in an 80-column tmux pane: no line is
// wider than 80, and every exit shows, a failure in red and an end by
// gpulaunch in yellow when painted.
func TestStatusFits80Columns(t *testing.T) {
	for _, paint := range []Paint{false, true} {
		var b bytes.Buffer
		WriteStatus(&b, eightOnH100(), 80, paint)
		out := b.String()
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if n := utf8.RuneCountInString(StripSGR(l)); n > 80 {
				t.Errorf("paint %v: %d characters: %q", paint, n, l)
			}
		}
		plain := StripSGR(out)
		for _, want := range []string{"2         exited", "SIGTERM (signal to", "6         exited"} {
			if !strings.Contains(plain, want) {
				t.Errorf("paint %v: no %q in\n%s", paint, want, plain)
			}
		}
		if got := strings.Contains(out, "\x1b[31m1\x1b[0m"); got != bool(paint) {
			t.Errorf("paint %v: instance 2's failed exit in red: %v\n%q", paint, got, out)
		}
		if got := strings.Contains(out, "\x1b[33mSIGTERM (signal to"); got != bool(paint) {
			t.Errorf("paint %v: instance 5's end by gpulaunch in yellow: %v\n%q", paint, got, out)
		}
		if !bool(paint) && strings.Contains(out, "\x1b[") {
			t.Errorf("escape codes unpainted:\n%q", out)
		}
	}
}

// The status header counts its instances in words: "1 instance", not
// "1 instances" (issue 34).
func TestStatusHeaderCountsInWords(t *testing.T) {
	for n, want := range map[int]string{1: "· 1 instance: ", 8: "· 8 instances: "} {
		s := eightOnH100()
		s.Instances = s.Instances[:n]
		var b strings.Builder
		WriteStatus(&b, s, 200, Paint(false))
		if !strings.Contains(b.String(), want) {
			t.Errorf("%d instance(s): header %q, want %q", n, strings.SplitN(b.String(), "\n", 2)[0], want)
		}
	}
}
