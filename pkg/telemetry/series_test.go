//go:build linux

package telemetry

import (
	"encoding/json"
	"math"
	"testing"
)

// A week of samples every 2 s stays at most seriesMax points, in time
// order, each the mean of the samples it stands for.
func TestSeriesStaysSmall(t *testing.T) {
	for _, n := range []int{1, 999, 1000, 1001, 302400} {
		var b seriesBuf
		for i := range n {
			util := float64(i % 100)
			if i%7 == 0 {
				util = -1 // not measured: left out of the means
			}
			b.add(2*float64(i), util, 1e9, 50, 1e6)
		}
		s := b.series()
		if len(s.T) == 0 || len(s.T) > seriesMax {
			t.Fatalf("%d samples: %d points", n, len(s.T))
		}
		for k := 1; k < len(s.T); k++ {
			if s.T[k] <= s.T[k-1] {
				t.Fatalf("%d samples: time goes back at point %d", n, k)
			}
		}
		for k := range s.T {
			if s.CPU[k] != 50 || s.RSS[k] != 1e6 || (s.GPUMem[k] != 1e9 && s.GPUMem[k] != -1) || s.GPUUtil[k] > 99 {
				t.Fatalf("%d samples: point %d = %v %v %v %v", n, k, s.CPU[k], s.RSS[k], s.GPUMem[k], s.GPUUtil[k])
			}
		}
		if last := s.T[len(s.T)-1]; n > 1 && math.Abs(last-2*float64(n-1)) > 2*float64(b.every) {
			t.Errorf("%d samples: the last point is at %.0f s, the last sample at %d s", n, last, 2*(n-1))
		}
	}
	var b seriesBuf
	b.add(0, -1, -1, 0, 0)
	if s := b.series(); s.GPUUtil[0] != -1 || s.GPUMem[0] != -1 {
		t.Errorf("an unmeasured GPU: %v", s)
	}
}

// A run too short to sample has a series of empty lists, never null: the
// report's schema (docs/report.schema.json) and its readers want lists.
func TestSeriesEmptyIsListsNotNull(t *testing.T) {
	var b seriesBuf
	data, err := json.Marshal(b.series())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"t_seconds":[],"gpu_util_pct":[],"gpu_mem_bytes":[],"cpu_pct":[],"rss_bytes":[]}`
	if string(data) != want {
		t.Errorf("empty series: %s, want %s", data, want)
	}
}
