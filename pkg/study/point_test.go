package study

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

// What every instance of a size is told, after gpulaunch's environment.
func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		size int
		weak bool
		want string
	}{{4, false, "PATH=/bin GPULAUNCH_SCALE_GPUS=4 GPULAUNCH_SCALE_WEAK=0"}, {8, true, "PATH=/bin GPULAUNCH_SCALE_GPUS=8 GPULAUNCH_SCALE_WEAK=1"}} {
		if got := strings.Join(Env([]string{"PATH=/bin"}, tc.size, tc.weak), " "); got != tc.want {
			t.Errorf("Env = %q, want %q", got, tc.want)
		}
	}
}

// GPUsUsed: distinct GPUs, fewer than the instances when they share.
func TestGPUsUsed(t *testing.T) {
	var p binding.Plan
	for i := range 6 {
		g := gpu.GPU{UUID: fmt.Sprintf("GPU-%d", i%4), BusID: fmt.Sprintf("0000:%02d:00.0", i%4)}
		p.Slots = append(p.Slots, binding.Slot{Index: i, GPUs: []gpu.GPU{g}})
	}
	if got := GPUsUsed(p); got != 4 {
		t.Errorf("6 instances on 4 GPUs: GPUsUsed = %d", got)
	}
}

// GPUNote: why GPU use is not measured.
func TestGPUNote(t *testing.T) {
	if got := GPUNote(0, nil, nil); got != "telemetry off (--monitor-interval 0)" {
		t.Errorf("monitor 0: %q", got)
	}
	if got := GPUNote(1, nil, nil); got != "no GPU backend" {
		t.Errorf("no source: %q", got)
	}
}

// The sink hands instance-labelled lines to the reading, however the
// writes cut them, and keeps the last tail lines.
func TestLineSink(t *testing.T) {
	m, err := scaling.NewMetric(`figure ([0-9]+)`, "sum")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineSink{tail: 2, reading: m.NewReading()}
	var out bytes.Buffer
	out.WriteString("0: figure 3\n1: fig")
	s.Write(out.Bytes())
	s.Write([]byte("ure 4\nno label figure 100\n1: done\n"))
	if fig, why := s.reading.Figure(); why != "" || fig != 7 {
		t.Errorf("figure %v (%s), want 3+4", fig, why)
	}
	if got := s.lastLines(nil); got != "  no label figure 100\n  1: done" {
		t.Errorf("last lines %q", got)
	}
}

// lastLines, by rule: a failed run's failing instances' own last lines
// first, then the others', at most tail lines in all.
func TestLastLines(t *testing.T) {
	sink := func(lines ...string) *lineSink {
		s := &lineSink{tail: 4}
		for _, l := range lines {
			s.Write([]byte(l + "\n"))
		}
		return s
	}
	noisy := []string{"1: step 1", "9: CUDA out of memory", "0: step 1", "2: step 1", "1: step 2", "0: step 2", "2: step 2", "warning: no label"}
	for _, tc := range []struct {
		name    string
		sink    *lineSink
		failing []int
		want    string
	}{
		{"L1, L2: the failing instance's error first, pushed out of the run's last lines by the others", sink(noisy...), []int{9},
			"9: CUDA out of memory|0: step 2|2: step 2|warning: no label"},
		{"L1: each failing instance its share of the room, in instance order", sink(noisy...), []int{9, 1},
			"1: step 1|1: step 2|9: CUDA out of memory|warning: no label"},
		{"L1: at least the last line of each, as room lasts", sink("3: a", "1: b", "2: c", "0: d", "4: e"), []int{4, 3, 2, 1, 0},
			"0: d|1: b|2: c|3: a"},
		{"L1: a failing instance that printed nothing leaves the room to the others", sink(noisy...), []int{5},
			"1: step 2|0: step 2|2: step 2|warning: no label"},
		{"L3: none failing: the run's last lines", sink(noisy...), nil,
			"1: step 2|0: step 2|2: step 2|warning: no label"},
	} {
		got := strings.ReplaceAll(strings.TrimPrefix(tc.sink.lastLines(tc.failing), "  "), "\n  ", "|")
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
