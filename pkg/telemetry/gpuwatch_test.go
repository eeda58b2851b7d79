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
	want := []GPUSample{{UUID: "GPU-a", Util: 90, InstanceUtil: 90, InstanceUtilSource: SourceGPU, Mem: 7}, {UUID: "GPU-b", Util: -1, InstanceUtil: -1, Mem: 5}}
	if !slices.Equal(w.PerGPU, want) {
		t.Fatalf("per GPU %+v, want %+v", w.PerGPU, want)
	}
	w.Observe(0, []gpu.Usage{{UUID: "GPU-a", Utilization: 20}, {UUID: "GPU-b", Utilization: 30}}, tree, nil, time.Second)
	want = []GPUSample{{UUID: "GPU-a", Util: 20, InstanceUtil: 20, InstanceUtilSource: SourceGPU}, {UUID: "GPU-b", Util: 30, InstanceUtil: 30, InstanceUtilSource: SourceGPU}}
	if !slices.Equal(w.PerGPU, want) {
		t.Fatalf("second sample: per GPU %+v, want %+v (the last sample's only)", w.PerGPU, want)
	}
}

// InstanceUtil's rules: an instance's own figure on one GPU, and its
// source.
func TestInstanceUtilRules(t *testing.T) {
	tree := map[int]bool{100: true, 101: true}
	shared := gpu.Usage{UUID: "GPU-a", Utilization: 90, PerProcess: true,
		ProcessUtil: []gpu.ProcessUtil{{PID: 100, SM: 15}, {PID: 101, SM: 5}, {PID: 200, SM: 70}}}
	for _, tc := range []struct {
		name   string
		u      gpu.Usage
		mps    bool
		want   int
		source string
	}{
		{"1: an MPS client gets its GPU's figure", shared, true, 90, SourceGPU},
		{"1: an MPS client on a GPU of no figure: not measured", gpu.Usage{Utilization: -1, PerProcess: true}, true, -1, ""},
		{"2: per-process samples: its tree's sum, not the other's", shared, false, 20, SourceProcesses},
		{"2: no sample of its processes: 0, not unknown", gpu.Usage{Utilization: 90, PerProcess: true, ProcessUtil: []gpu.ProcessUtil{{PID: 200, SM: 90}}}, false, 0, SourceProcesses},
		{"2: at most 100", gpu.Usage{Utilization: 100, PerProcess: true, ProcessUtil: []gpu.ProcessUtil{{PID: 100, SM: 80}, {PID: 101, SM: 60}}}, false, 100, SourceProcesses},
		{"3: no per-process samples: the GPU's figure", gpu.Usage{Utilization: 61}, false, 61, SourceGPU},
		{"3: a MIG device (no figure at all): not measured", gpu.Usage{Utilization: -1}, false, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, source := InstanceUtil(tc.u, tree, tc.mps)
			if got != tc.want || source != tc.source {
				t.Errorf("InstanceUtil = %d %q, want %d %q", got, source, tc.want, tc.source)
			}
		})
	}
}

func TestJoinSourcesRules(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"", "", ""}, {"", SourceProcesses, SourceProcesses}, {SourceProcesses, "", SourceProcesses},
		{SourceProcesses, SourceProcesses, SourceProcesses}, {SourceProcesses, SourceGPU, SourceGPU}, {SourceGPU, SourceProcesses, SourceGPU},
	} {
		if got := JoinSources(tc.a, tc.b); got != tc.want {
			t.Errorf("JoinSources(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestMPSClientRules(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want bool
	}{
		{[]string{"CUDA_MPS_PIPE_DIRECTORY=/run/mps"}, true},
		{[]string{"CUDA_MPS_PIPE_DIRECTORY="}, false},
		{[]string{"CUDA_MPS_LOG_DIRECTORY=/x", "PATH=/bin"}, false},
	} {
		if got := MPSClient(tc.env); got != tc.want {
			t.Errorf("MPSClient(%q) = %v", tc.env, got)
		}
	}
}

// Two instances sharing a GPU, one busy and one idle, as the watch sees
// them across samples: each its own figure, its source, and the idle
// check by Verify's rules.
func TestGPUWatchSharedGPURules(t *testing.T) {
	const a = "GPU-a"
	perProcess := func(util int, mem map[int]uint64, sm map[int]int) []gpu.Usage {
		u := gpu.Usage{UUID: a, Utilization: util, PerProcess: true}
		for pid, m := range mem {
			u.Processes = append(u.Processes, gpu.GPUProcess{PID: pid, MemoryUsed: m})
		}
		for pid, s := range sm {
			u.ProcessUtil = append(u.ProcessUtil, gpu.ProcessUtil{PID: pid, SM: s})
		}
		return []gpu.Usage{u}
	}
	gpuOnly := func(util int, mem map[int]uint64) []gpu.Usage {
		u := perProcess(util, mem, nil)
		u[0].PerProcess = false
		return u
	}
	busy := map[int]int{200: 70} // another instance's process, pid 200
	for _, tc := range []struct {
		name     string
		env      []string
		samples  [][]gpu.Usage
		mean     float64
		peak     int
		source   string
		warnings []string
	}{
		{"the sum of its processes' samples, not the GPU's", nil,
			[][]gpu.Usage{perProcess(90, map[int]uint64{100: 1}, map[int]int{100: 20, 200: 70}), perProcess(90, map[int]uint64{100: 1}, map[int]int{100: 20, 200: 70})},
			20, 20, SourceProcesses, nil},
		{"Verify 3: idle without a context on a GPU another keeps busy", nil,
			[][]gpu.Usage{perProcess(70, nil, busy), perProcess(70, nil, busy), perProcess(70, nil, busy)},
			0, 0, SourceProcesses, []string{"instance 0: no process of it used its GPU(s) GPU-a over 3 sample(s)"}},
		{"Verify 4: a context held, no kernel run by its samples", nil,
			[][]gpu.Usage{perProcess(70, map[int]uint64{100: 1}, busy), perProcess(70, map[int]uint64{100: 1}, busy), perProcess(70, map[int]uint64{100: 1}, busy)},
			0, 0, SourceProcesses, []string{"instance 0: its processes held memory on its GPU(s) GPU-a but ran no kernel over 3 sample(s)"}},
		{"Verify 5 and InstanceUtil 1: an MPS client's figure is its GPU's, and a held context with 0 is not judged", []string{"CUDA_MPS_PIPE_DIRECTORY=/run/mps"},
			[][]gpu.Usage{perProcess(0, map[int]uint64{100: 1}, map[int]int{300: 0}), perProcess(0, map[int]uint64{100: 1}, nil), perProcess(0, map[int]uint64{100: 1}, nil)},
			0, 0, SourceGPU, nil},
		{"an MPS client on a busy GPU: the GPU's figure, said so", []string{"CUDA_MPS_PIPE_DIRECTORY=/run/mps"},
			[][]gpu.Usage{perProcess(98, map[int]uint64{100: 1}, map[int]int{4228: 98}), perProcess(96, map[int]uint64{100: 1}, map[int]int{4228: 96})},
			97, 98, SourceGPU, nil},
		{"Verify 2: one sample above 0 is use", nil,
			[][]gpu.Usage{perProcess(70, map[int]uint64{100: 1}, busy), perProcess(75, map[int]uint64{100: 1}, map[int]int{100: 5, 200: 70}), perProcess(70, map[int]uint64{100: 1}, busy)},
			5.0 / 3, 5, SourceProcesses, nil},
		{"a run partly without per-process samples is its GPU's", nil,
			[][]gpu.Usage{perProcess(90, map[int]uint64{100: 1}, map[int]int{100: 20}), gpuOnly(90, map[int]uint64{100: 1})},
			55, 90, SourceGPU, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewGPUWatch([]string{a}, tc.env)
			var got []string
			for _, s := range tc.samples {
				got = append(got, w.Observe(0, s, map[int]bool{100: true}, map[string]int{a: 0}, verifyGrace)...)
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
			if m := w.MeanUtil(); m < tc.mean-0.01 || m > tc.mean+0.01 || w.UtilPeak != tc.peak || w.Source != tc.source {
				t.Errorf("mean %.2f peak %d source %q, want %.2f %d %q", m, w.UtilPeak, w.Source, tc.mean, tc.peak, tc.source)
			}
		})
	}
}

// SourceNote's rules: which instances' GPU% is their GPU's, and why.
func TestSourceNoteRules(t *testing.T) {
	p, g := SourceProcesses, SourceGPU
	for _, tc := range []struct {
		name string
		rows []Sourced
		want string
	}{
		{"1: every figure its processes' or unmeasured: no note", []Sourced{{0, p, false}, {1, "", false}}, ""},
		{"2: MPS clients, in ranges", []Sourced{{0, g, true}, {1, g, true}, {2, g, true}, {4, g, true}},
			"GPU%: instances 0-2,4: their GPU's, whoever used it (under MPS, NVML gives a client's use to the MPS server)"},
		{"2: no per-process samples, beside instances of their own", []Sourced{{0, p, false}, {1, g, false}},
			"GPU%: each instance's own processes', but instance 1: its GPU's, whoever used it (the driver gave no per-process samples: MIG, AMD, Intel, or NVML's error)"},
		{"2: both whys", []Sourced{{0, g, true}, {1, g, false}}, "GPU%: instance 0: its GPU's, whoever used it (under MPS, NVML gives a client's use to the MPS server); instance 1: its GPU's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SourceNote(tc.rows); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("SourceNote = %q, want %q", got, tc.want)
			}
		})
	}
}

// Verify's rules, each by its number, and MeanUtil's "not measured": an
// instance (pid 100) on GPU-a, three samples of the same usage.
func TestVerifyRules(t *testing.T) {
	const mine, other = 100, 200
	usage := func(gpuUtil int, perProcess bool, sm map[int]int, ctx ...int) gpu.Usage {
		u := gpu.Usage{UUID: "GPU-a", Utilization: gpuUtil, PerProcess: perProcess}
		for pid, v := range sm {
			u.ProcessUtil = append(u.ProcessUtil, gpu.ProcessUtil{PID: pid, SM: v})
		}
		for _, pid := range ctx {
			u.Processes = append(u.Processes, gpu.GPUProcess{PID: pid, MemoryUsed: 1 << 30})
		}
		return u
	}
	const unused, noKernel = "no process of it used its GPU(s)", "held memory on its GPU(s) GPU-a but ran no kernel"
	for _, tc := range []struct {
		rule string
		mps  bool
		u    gpu.Usage
		want string // a warning's words; "" none
		mean float64
	}{
		{"2: its own processes computed", false, usage(90, true, map[int]int{mine: 20, other: 70}, mine, other), "", 20},
		{"3: an MPS client with no process on its busy GPU", true, usage(90, false, nil, other), unused, 90},
		{"3: an MPS client with its process on the busy GPU", true, usage(90, false, nil, mine, other), "", 90},
		{"4: its GPU busy, no per-process samples, no process seen (a container's pids)", false, usage(60, false, nil), "", 60},
		{"5: idle on a busy shared GPU, per-process samples", false, usage(70, true, map[int]int{other: 70}, other), unused, 0},
		{"6: a context held, its processes' samples all 0", false, usage(70, true, map[int]int{other: 70}, mine, other), noKernel, 0},
		{"7: a context held, its GPU's figure 0", false, usage(0, false, nil, mine), "", 0},
		{"not measured: a MIG device's use is not given", false, usage(-1, false, nil, mine), "", -1},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			env := []string{"CUDA_VISIBLE_DEVICES=GPU-a"}
			if tc.mps {
				env = append(env, gpu.MPSPipeEnv+"=/tmp/mps")
			}
			w := NewGPUWatch([]string{"GPU-a"}, env)
			var got []string
			for range 3 {
				got = append(got, w.Observe(0, []gpu.Usage{tc.u}, map[int]bool{mine: true}, map[string]int{"GPU-a": 0}, verifyGrace)...)
			}
			got = append(got, w.Verify(0)...)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warnings %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("warnings %q, want one saying %q", got, tc.want)
			}
			if m := w.MeanUtil(); m < tc.mean-0.01 || m > tc.mean+0.01 {
				t.Errorf("mean %.2f, want %.2f", m, tc.mean)
			}
		})
	}
}
