package scaling

import (
	"math"
	"strings"
	"testing"
)

// pack is a packing point: k per GPU in mode, on 8 GPUs of 80 GiB, its
// runs giving figs.
func pack(k int, mode Mode, figs ...float64) Point {
	return Point{GPUs: 8, Instances: 8 * k, GPUsPerInstance: 1, PerGPU: k, Mode: mode, GPUMemTotal: ptr(80 << 30), Runs: runs(figs...)}
}

// K1–K4: a packing study's speedups over one per GPU, its best packing
// and its verdict, by rule. The figures of the H200's 256×256 matmuls
// (gpu-h200.md): one alone 46,843/s, 4 taking turns 71,420/s, 4 under
// MPS 203,210/s.
func TestAnalysePacking(t *testing.T) {
	for _, tc := range []struct {
		name    string
		points  []Point
		speedup []float64 // per point; NaN: none
		verdict string
	}{
		{"K2, K4: the H200's matmuls, MPS best", []Point{pack(1, Turns, 46843), pack(4, Turns, 71420), pack(4, MPS, 203210)},
			[]float64{1, 1.525, 4.338}, "4 per GPU under MPS: 4.3× one per GPU; it is the largest size tried: more per GPU may gain more"},
		{"K3: within 5% of the best, fewer per GPU wins", []Point{pack(1, Turns, 100), pack(2, Turns, 150), pack(2, MPS, 290), pack(4, Turns, 160), pack(4, MPS, 300)},
			[]float64{1, 1.5, 2.9, 1.6, 3}, "2 per GPU under MPS: 2.9× one per GPU"},
		{"K3: at one count, taking turns before MPS", []Point{pack(1, Turns, 100), pack(2, Turns, 200), pack(2, MPS, 204), pack(4, Turns, 150)},
			[]float64{1, 2, 2.04, 1.5}, "2 per GPU taking turns: 2.0× one per GPU"},
		{"K4: one per GPU is best", []Point{pack(1, Turns, 100), pack(2, Turns, 96), pack(2, MPS, 103)},
			[]float64{1, .96, 1.03}, "one per GPU is best: no packing gained more than 5% over it (the most: 2 per GPU under MPS, 1.03×)"},
		{"K2: the smallest size taking turns is the baseline", []Point{pack(2, Turns, 100), pack(2, MPS, 250), pack(4, Turns, 110)},
			[]float64{1, 2.5, 1.1}, "2 per GPU under MPS: 2.5× 2 per GPU taking turns"},
		{"K2: no size taking turns gave a figure", []Point{pack(1, Turns), pack(2, MPS, 250)},
			[]float64{math.NaN(), math.NaN()}, "no size taking turns gave a figure: nothing to compare with"},
		{"K4: nothing gave a figure", []Point{pack(1, Turns), pack(2, MPS)},
			[]float64{math.NaN(), math.NaN()}, "no point gave a figure"},
		{"K4: only the baseline", []Point{pack(1, Turns, 5), pack(2, MPS)},
			[]float64{1, math.NaN()}, "only one per GPU gave a figure: nothing to compare"},
	} {
		st := Study{By: ByPerGPU.By, Repeat: 1, Points: tc.points}
		st.Analyse()
		for i, p := range st.Points {
			got := math.NaN()
			if p.Speedup != nil {
				got = *p.Speedup
			}
			if math.IsNaN(got) != math.IsNaN(tc.speedup[i]) || math.Abs(got-tc.speedup[i]) > 0.001 {
				t.Errorf("%s: point %d speedup %v, want %v", tc.name, i, got, tc.speedup[i])
			}
			if p.Ideal != nil || p.Efficiency != nil {
				t.Errorf("%s: point %d has an ideal %v and efficiency %v: a packing has none", tc.name, i, p.Ideal, p.Efficiency)
			}
		}
		if !strings.HasPrefix(st.Verdict, tc.verdict) {
			t.Errorf("%s: verdict %q, want %q", tc.name, st.Verdict, tc.verdict)
		}
	}
}

// K1: each instance's own figure is its median over the runs, its GPU%
// their mean, its memory their peak; the headroom is the GPU's memory
// less k times the largest instance's peak, said in the verdict.
func TestPackingInstances(t *testing.T) {
	inst := func(i int, fig, util, mem float64) InstanceFigure {
		return InstanceFigure{Instance: i, Metric: ptr(fig), GPUUtil: ptr(util), GPUMemPeak: ptr(mem)}
	}
	p := pack(2, MPS)
	p.Runs = []Run{
		{Metric: ptr(30), Each: []InstanceFigure{inst(0, 10, 20, 1<<30), inst(1, 20, 70, 2<<30)}},
		{Metric: ptr(34), Each: []InstanceFigure{inst(0, 12, 30, 1<<30), inst(1, 22, 60, 3<<30)}},
		{Metric: ptr(32), Each: []InstanceFigure{inst(0, 14, 25, 1<<30), inst(1, 18, 65, 2<<30)}},
	}
	st := Study{By: ByPerGPU.By, Repeat: 3, Points: []Point{pack(1, Turns, 10, 10, 10), p}}
	st.Analyse()
	got := st.Points[1]
	if len(got.Each) != 2 || *got.Each[0].Metric != 12 || *got.Each[1].Metric != 20 || *got.Each[0].GPUUtil != 25 || *got.Each[1].GPUUtil != 65 ||
		*got.Each[1].GPUMemPeak != 3<<30 {
		t.Fatalf("each instance: %+v", got.Each)
	}
	if *got.InstanceMemPeak != 3<<30 || *got.Headroom != 74<<30 {
		t.Errorf("peak %v, headroom %v; want 3 GiB and 80 - 2×3 GiB", *got.InstanceMemPeak, *got.Headroom)
	}
	if want := "2 per GPU under MPS: 3.2× one per GPU, leaving 74.0 GiB of each GPU's memory"; !strings.HasPrefix(st.Verdict, want) {
		t.Errorf("verdict %q, want %q", st.Verdict, want)
	}
	var b strings.Builder
	st.WriteTable(&b)
	for _, want := range []string{"PER GPU  MODE", "GPU% (each GPU)", "HEADROOM/GPU", "alone", "under MPS", "16 (12..20)", "runs/s, instances/wall", "3.0 GiB", "74.0 GiB", "3.20"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	pic := st.Picture("")
	if !pic.Packing || len(pic.Points) != 2 || pic.Points[1].GPUs != 2 || pic.Points[1].Mode != "under MPS" || pic.By != "instances per GPU" {
		t.Errorf("picture: %+v", pic)
	}
	svg, err := st.SVG("")
	if err != nil || !strings.Contains(string(svg), "under MPS") || strings.Contains(string(svg), "Parallel efficiency") {
		t.Errorf("SVG: %v\n%.300s", err, svg)
	}
}
