//go:build linux

package telemetry

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

func TestGPUWatch(t *testing.T) {
	owner := map[string]int{"GPU-a": 0, "GPU-b": 1}
	tree := map[int]bool{100: true, 101: true}
	sample := func(aUtil int, procs map[string][]int) []gpu.Usage {
		var out []gpu.Usage
		for _, id := range []string{"GPU-a", "GPU-b", "GPU-c"} {
			u := gpu.Usage{UUID: id}
			if id == "GPU-a" {
				u.Utilization = aUtil
			}
			for _, pid := range procs[id] {
				u.Processes = append(u.Processes, gpu.GPUProcess{PID: pid, MemoryUsed: 1 << 30})
			}
			out = append(out, u)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		samples  [][]gpu.Usage
		mean     float64
		warnings []string
	}{
		{"uses its GPU", [][]gpu.Usage{sample(0, nil), sample(80, map[string][]int{"GPU-a": {101}}), sample(40, map[string][]int{"GPU-a": {101}})}, 40, nil},
		{"idle all along", [][]gpu.Usage{sample(0, nil), sample(0, nil), sample(0, nil)}, 0, []string{"instance 0: no process of it used its GPU(s) GPU-a"}},
		{"busy without a context seen (MPS, other counters)", [][]gpu.Usage{sample(30, nil), sample(30, nil), sample(30, nil)}, 30, nil},
		{"on another instance's GPU, reported once", [][]gpu.Usage{
			sample(0, map[string][]int{"GPU-b": {100}}), sample(0, map[string][]int{"GPU-b": {100}}), sample(0, map[string][]int{"GPU-a": {100}})},
			0, []string{"instance 0: process 100 runs on GPU GPU-b, instance 1's GPU, not its own (GPU-a): the app ignores ROCR_VISIBLE_DEVICES"}},
		{"on a GPU nobody owns", [][]gpu.Usage{sample(0, map[string][]int{"GPU-c": {100}, "GPU-a": {100}})}, 0, []string{"GPU GPU-c, no instance's GPU"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewGPUWatch([]string{"GPU-a"}, []string{"PATH=/bin", "ROCR_VISIBLE_DEVICES=GPU-a"})
			var got []string
			for _, s := range tc.samples {
				got = append(got, w.Observe(0, s, tree, owner, verifyGrace)...)
			}
			got = append(got, w.Verify(0)...)
			if len(got) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d like %q", got, len(tc.warnings), tc.warnings)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.warnings[i]) {
					t.Errorf("warning %q lacks %q", got[i], tc.warnings[i])
				}
			}
			if m := w.MeanUtil(); m < tc.mean-0.01 || m > tc.mean+0.01 {
				t.Errorf("mean %.2f, want %.2f", m, tc.mean)
			}
		})
	}
}

// An idle GPU is judged while the instance runs only after verifyGrace,
// however many samples came before: an app that has not reached its first
// CUDA call yet is not told it runs on the CPU.
func TestGPUWatchWaitsForTheGrace(t *testing.T) {
	idle := []gpu.Usage{{UUID: "GPU-a"}}
	w := NewGPUWatch([]string{"GPU-a"}, nil)
	for i := 0; i < 10; i++ {
		if got := w.Observe(0, idle, map[int]bool{}, nil, verifyGrace-time.Second); len(got) != 0 {
			t.Fatalf("sample %d, before the grace: %q", i, got)
		}
	}
	if got := w.Observe(0, idle, map[int]bool{}, nil, verifyGrace); len(got) != 1 || !strings.Contains(got[0], "no process of it used its GPU") {
		t.Fatalf("after the grace: %q", got)
	}
}

// Each of an instance's GPUs keeps its last sample: the GPU's utilisation
// and the memory the instance's own processes hold on it, not another's
// and not on a GPU that is not its own.
func TestGPUWatchPerGPU(t *testing.T) {
	tree := map[int]bool{100: true, 101: true}
	w := NewGPUWatch([]string{"GPU-a", "GPU-b"}, nil)
	w.Observe(0, []gpu.Usage{
		{UUID: "GPU-a", Utilization: 90, Processes: []gpu.GPUProcess{{PID: 100, MemoryUsed: 3}, {PID: 101, MemoryUsed: 4}, {PID: 999, MemoryUsed: 50}}},
		{UUID: "GPU-b", Utilization: -1, Processes: []gpu.GPUProcess{{PID: 101, MemoryUsed: 5}}},
		{UUID: "GPU-c", Utilization: 10, Processes: []gpu.GPUProcess{{PID: 100, MemoryUsed: 70}}},
	}, tree, nil, time.Second)
	want := []GPUSample{{UUID: "GPU-a", Util: 90, Mem: 7}, {UUID: "GPU-b", Util: -1, Mem: 5}}
	if !slices.Equal(w.PerGPU, want) {
		t.Fatalf("per GPU %+v, want %+v", w.PerGPU, want)
	}
	w.Observe(0, []gpu.Usage{{UUID: "GPU-a", Utilization: 20}, {UUID: "GPU-b", Utilization: 30}}, tree, nil, time.Second)
	want = []GPUSample{{UUID: "GPU-a", Util: 20}, {UUID: "GPU-b", Util: 30}}
	if !slices.Equal(w.PerGPU, want) {
		t.Fatalf("second sample: per GPU %+v, want %+v (the last sample's only)", w.PerGPU, want)
	}
}
