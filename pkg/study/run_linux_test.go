package study

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

// standIn is a run that prints lines (labelled by the supervisor: here
// by the stand-in) and ends with code; err: the run could not start.
type standIn struct {
	lines []string
	code  int
	stop  bool
	err   error
	util  float64
}

func (s standIn) launch(spec launcher.Spec) (launcher.Result, error) {
	if s.err != nil {
		return launcher.Result{}, s.err
	}
	if !spec.Label || spec.Stdout == nil {
		return launcher.Result{}, errors.New("the study reads labelled output: Label and Stdout unset")
	}
	for _, l := range s.lines {
		fmt.Fprintln(spec.Stdout, l)
	}
	var res launcher.Result
	for i := range spec.Instances {
		res.Outcomes = append(res.Outcomes, launcher.Outcome{Index: i, Code: s.code, GPUUtilMean: s.util, GPUMemPeak: 1 << 30})
	}
	if s.stop {
		res.Signal = 2
	}
	return res, nil
}

func point(instances, gpusEach int) Point {
	var insts []launcher.Instance
	for i := range instances {
		inst := launcher.Instance{Index: i}
		for g := range gpusEach {
			inst.GPUUUIDs = append(inst.GPUUUIDs, fmt.Sprintf("GPU-%d", i*gpusEach+g))
		}
		insts = append(insts, inst)
	}
	return Point{Size: instances * gpusEach, Spec: launcher.Spec{Instances: insts}, GPUs: instances * gpusEach, Instances: instances, GPUsPerInstance: gpusEach}
}

// P1–P3: what one run gave.
func TestRunPoint(t *testing.T) {
	metric, err := scaling.NewMetric(`throughput: ([0-9.]+)`, "last")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		run      standIn
		metric   *scaling.Metric
		figure   float64 // 0: none; -1: 1/wall
		code     int
		noMetric string
	}{
		{"P1: could not start", standIn{err: errors.New("fork: no")}, metric, 0, 2, "fork: no"},
		{"P1: failed, with its last lines", standIn{lines: []string{"0: out of memory"}, code: 3}, metric, 0, 3, "exit status 3; its last lines:\n  0: out of memory"},
		{"P1: stopped", standIn{lines: []string{"0: throughput: 5"}, stop: true}, metric, 0, 130, "exit status 130"},
		{"P2: the metric's figure", standIn{lines: []string{"0: throughput: 5", "1: throughput: 7", "0: throughput: 6"}}, metric, 6, 0, ""},
		{"P2: no match", standIn{lines: []string{"0: done"}}, metric, 0, 0, "never matched"},
		{"P3: 1/wall", standIn{}, nil, -1, 0, ""},
	} {
		c := Config{Metric: tc.metric, launch: tc.run.launch}
		r := c.runPoint(point(2, 1))
		switch {
		case r.ExitCode != tc.code || !strings.Contains(r.NoMetric, tc.noMetric) || (tc.noMetric == "") != (r.NoMetric == ""):
			t.Errorf("%s: exit %d, no metric %q; want %d, %q", tc.name, r.ExitCode, r.NoMetric, tc.code, tc.noMetric)
		case tc.figure == 0 && r.Metric != nil, tc.figure != 0 && r.Metric == nil:
			t.Errorf("%s: figure %v, want %v", tc.name, r.Metric, tc.figure)
		case tc.figure > 0 && *r.Metric != tc.figure, tc.figure < 0 && *r.Metric != 1/r.WallSeconds:
			t.Errorf("%s: figure %v, want %v (wall %v)", tc.name, *r.Metric, tc.figure, r.WallSeconds)
		}
	}
}

// gpuUse: the mean utilisation over the instances that were sampled, the
// peak memory over all the point's GPUs; nothing when none was.
func TestGPUUse(t *testing.T) {
	insts := point(2, 2).Spec.Instances
	util, mem := gpuUse([]launcher.Outcome{{GPUUtilMean: 80, GPUMemPeak: 4 << 30}, {GPUUtilMean: -1}}, insts)
	if util == nil || *util != 80 || *mem != 1<<30 {
		t.Errorf("util %v, mem %v; want 80 over the sampled instance, 4 GiB over 4 GPUs", util, mem)
	}
	if util, mem := gpuUse([]launcher.Outcome{{GPUUtilMean: -1}, {GPUUtilMean: -1}}, insts); util != nil || mem != nil {
		t.Errorf("nothing sampled: %v, %v", util, mem)
	}
	// two instances on one GPU: how busy it was, taking turns (each its
	// own 30) and under MPS (each given the GPU's 60) alike (GPUBusy)
	shared := []launcher.Instance{{Index: 0, GPUUUIDs: []string{"GPU-0"}}, {Index: 1, GPUUUIDs: []string{"GPU-0"}}}
	for _, o := range [][]launcher.Outcome{
		{{GPUUtilMean: 30, GPUUtilSource: "processes"}, {GPUUtilMean: 30, GPUUtilSource: "processes"}},
		{{GPUUtilMean: 60, GPUUtilSource: "gpu"}, {GPUUtilMean: 60, GPUUtilSource: "gpu"}},
	} {
		got := -1.0 // not measured
		if util, _ := gpuUse(o, shared); util != nil {
			got = *util
		}
		if got != 60 {
			t.Errorf("two on one GPU, %s: GPU%% %v, want 60", o[0].GPUUtilSource, got)
		}
	}
}

// The rounds: every size once per round, in order; --halt stops at the
// first failure, and says so.
func TestRun(t *testing.T) {
	var order []int
	launch := func(spec launcher.Spec) (launcher.Result, error) {
		order = append(order, len(spec.Instances))
		code := 0
		if len(spec.Instances) == 4 {
			code = 1
		}
		return standIn{code: code}.launch(spec)
	}
	for _, halt := range []bool{false, true} {
		order = nil
		var said strings.Builder
		c := Config{Axis: scaling.ByInstances, Command: []string{"./app"}, Repeat: 2, Threshold: 0.6, Halt: halt, Say: &said, launch: launch}
		st := Run(c, []Point{point(1, 1), point(2, 1), point(4, 1), point(8, 1)})
		want, runs := "1 2 4 8 1 2 4 8", 2
		if halt {
			want, runs = "1 2 4", 1
		}
		if got := strings.Trim(fmt.Sprint(order), "[]"); got != want || len(st.Points[0].Runs) != runs || st.By != "instances" || st.Repeat != 2 {
			t.Errorf("halt %v: ran %s, want %s; %d runs of the first size", halt, got, want, len(st.Points[0].Runs))
		}
		if !strings.Contains(said.String(), "gpulaunch scale: -n 4, run 1 of 2: no figure: exit status 1") ||
			!strings.Contains(said.String(), "gpulaunch scale: -n 2, run 1 of 2: ") || strings.Contains(said.String(), "--halt") != halt {
			t.Errorf("halt %v: said\n%s", halt, said.String())
		}
	}
}

// P3, P4: a packing run's figure is its instances over its wall time
// without a metric, the sum of their last matches with one; each
// instance keeps its own figure (its 1/wall, or its last match), GPU%
// and GPU memory.
func TestRunPointPacking(t *testing.T) {
	launch := func(spec launcher.Spec) (launcher.Result, error) {
		fmt.Fprintln(spec.Stdout, "0: throughput: 5")
		fmt.Fprintln(spec.Stdout, "1: throughput: 7")
		var res launcher.Result
		for i := range spec.Instances {
			res.Outcomes = append(res.Outcomes, launcher.Outcome{Index: i, Wall: time.Duration(i+1) * 500 * time.Millisecond, GPUUtilMean: float64(20 + 50*i), GPUMemPeak: uint64(i+1) << 30})
		}
		return res, nil
	}
	metric, err := scaling.NewMetric(`throughput: ([0-9.]+)`, "sum")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		metric *scaling.Metric
		figure float64
		each   [2]float64
	}{{"P3: instances over the wall time", nil, -1, [2]float64{2, 1}}, {"P4: each one's last match", metric, 12, [2]float64{5, 7}}} {
		c := Config{Axis: scaling.ByPerGPU, Metric: tc.metric, launch: launch}
		p := point(2, 1)
		p.PerGPU, p.Mode = 2, scaling.Turns
		r := c.runPoint(p)
		if tc.figure < 0 {
			tc.figure = 2 / r.WallSeconds
		}
		if r.Metric == nil || *r.Metric != tc.figure || len(r.Each) != 2 {
			t.Fatalf("%s: figure %v, each %+v; want %v", tc.name, r.Metric, r.Each, tc.figure)
		}
		for i, e := range r.Each {
			if e.Instance != i || *e.Metric != tc.each[i] || *e.GPUUtil != float64(20+50*i) || *e.GPUMemPeak != float64(uint64(i+1)<<30) {
				t.Errorf("%s: instance %d: %v %v %v", tc.name, i, *e.Metric, *e.GPUUtil, *e.GPUMemPeak)
			}
		}
	}
}

// P1: a failed packing run's last lines show its failing instance's
// error, though the others went on printing after it (issue 36's review:
// at 4 per GPU instance 9's "CUDA out of memory" was pushed out of the
// run's last 20 lines); instances gpulaunch stopped for its sake are not
// the failing ones.
func TestRunPointFailingLines(t *testing.T) {
	launch := func(spec launcher.Spec) (launcher.Result, error) {
		fmt.Fprintln(spec.Stdout, "9: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB")
		for step := range 10 {
			for i := range spec.Instances {
				if i != 9 {
					fmt.Fprintf(spec.Stdout, "%d: step %d\n", i, step)
				}
			}
		}
		var res launcher.Result
		for i := range spec.Instances {
			o := launcher.Outcome{Index: i, GPUUtilMean: -1}
			switch {
			case i == 9:
				o.Code = 1
			case i == 3: // stopped by --wait once 9 failed: not its fault
				o.Code, o.Signal, o.EndedBy = -1, 15, job.EndedWait
			}
			res.Outcomes = append(res.Outcomes, o)
		}
		return res, nil
	}
	p := point(32, 1)
	p.PerGPU, p.Mode = 4, scaling.Turns
	r := Config{Axis: scaling.ByPerGPU, launch: launch}.runPoint(p)
	lines := strings.Split(r.NoMetric, "\n")
	if r.ExitCode == 0 || len(lines) != 21 || lines[1] != "  9: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB" ||
		lines[2] != "  13: step 9" || lines[20] != "  31: step 9" {
		t.Errorf("exit %d; no figure because\n%s\nwant instance 9's error first, then the run's last 19 lines", r.ExitCode, r.NoMetric)
	}
}
