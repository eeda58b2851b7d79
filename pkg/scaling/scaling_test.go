package scaling

import (
	"math"
	"strings"
	"testing"
)

// amdahl is the speedup of a code with serial fraction f on g GPUs.
func amdahl(f float64, g int) float64 { return 1 / (f + (1-f)/float64(g)) }

func runs(figs ...float64) []Run {
	var out []Run
	for _, f := range figs {
		out = append(out, Run{Metric: ptr(f)})
	}
	return out
}

func TestAnalyse(t *testing.T) {
	failed := []Run{{ExitCode: 1}}
	noMetric := []Run{{NoMetric: "never matched"}}
	cases := []struct {
		name    string
		study   Study
		speedup []float64 // per point; NaN: none
		eff     []float64
		status  []string
		verdict string
	}{
		{"Amdahl, serial fraction 0.1: strong scaling",
			Study{Threshold: 0.6, Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Runs: runs(1000)}, {GPUs: 2, Runs: runs(1000 * amdahl(.1, 2))},
				{GPUs: 4, Runs: runs(1000 * amdahl(.1, 4))}, {GPUs: 8, Runs: runs(1000 * amdahl(.1, 8))}}},
			[]float64{1, 1.818, 3.077, 4.706}, []float64{1, .909, .769, .588}, []string{"ok", "ok", "ok", "ok"},
			"beyond 4 GPU(s) efficiency drops below 60% (59% at 8): 4 GPU(s) is the efficient size"},
		{"the median of the runs, and a failed run is not a figure",
			Study{Threshold: 0.6, Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Runs: append(runs(90, 100, 110), Run{ExitCode: 2})}, {GPUs: 2, Runs: runs(150, 210, 190)}}},
			[]float64{1, 1.9}, []float64{1, .95}, []string{"ok", "ok"},
			"scales to 2 GPU(s): efficiency 95% at 2 (at least 60% at every size)"},
		{"a failed baseline: the next point is the baseline",
			Study{Threshold: 0.6, Points: []Point{{GPUs: 1, Runs: failed}, {GPUs: 2, Runs: runs(1)}, {GPUs: 4, Runs: runs(1.8)}}},
			[]float64{math.NaN(), 1, 1.8}, []float64{math.NaN(), 1, .9}, []string{"failed", "ok", "ok"}, "scales to 4"},
		{"no metric is not zero",
			Study{Threshold: 0.6, Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Runs: runs(10)}, {GPUs: 2, Runs: noMetric}}},
			[]float64{1, math.NaN()}, []float64{1, math.NaN()}, []string{"ok", "no metric"}, "only 1 GPU(s) gave a figure"},
		{"slower with more GPUs",
			Study{Threshold: 0.5, Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Runs: runs(10)}, {GPUs: 2, Runs: runs(15)}, {GPUs: 4, Runs: runs(12)}}},
			[]float64{1, 1.5, 1.2}, []float64{1, .75, .3}, []string{"ok", "ok", "ok"},
			"beyond 2 GPU(s) efficiency drops below 50% (30% at 4): 2 GPU(s) is the efficient size; 4 GPU(s) are slower than 2 (speedup 1.20 against 1.50), 20% less"},
		{"a time, lower is better",
			Study{Threshold: 0.6, Metric: &MetricInfo{LowerIsBetter: true}, Points: []Point{{GPUs: 1, Runs: runs(100)}, {GPUs: 4, Runs: runs(30)}}},
			[]float64{1, 3.333}, []float64{1, .833}, []string{"ok", "ok"}, "scales to 4"},
		{"weak scaling of the wall time: the ideal is flat",
			Study{Threshold: 0.6, Weak: true, Points: []Point{{GPUs: 1, Runs: runs(1 / 10.0)}, {GPUs: 8, Runs: runs(1 / 12.5)}}},
			[]float64{1, .8}, []float64{1, .8}, []string{"ok", "ok"}, "scales to 8 GPU(s): efficiency 80% at 8 (at least 60% at every size)"},
		{"weak scaling of a throughput: the ideal grows",
			Study{Threshold: 0.6, Weak: true, Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Runs: runs(100)}, {GPUs: 8, Runs: runs(720)}}},
			[]float64{1, 7.2}, []float64{1, .9}, []string{"ok", "ok"}, "scales to 8"},
		{"interrupted in its first run", Study{Threshold: 0.6, Points: []Point{{GPUs: 1, Runs: runs(1)}, {GPUs: 2, Runs: []Run{{Interrupted: true, ExitCode: 130}}}}},
			[]float64{1, math.NaN()}, []float64{1, math.NaN()}, []string{"ok", "interrupted"}, "only 1"},
		{"interrupted in its first size: the sizes after it never ran",
			Study{Threshold: 0.6, Points: []Point{{GPUs: 1, Runs: []Run{{Interrupted: true, ExitCode: 130}}}, {GPUs: 2}, {GPUs: 4}}},
			[]float64{math.NaN(), math.NaN(), math.NaN()}, []float64{math.NaN(), math.NaN(), math.NaN()}, []string{"interrupted", "not run", "not run"}, "no point gave a figure"},
		{"rule 1: interrupted in round 2 of 2: the size stopped is interrupted, with round 1's figure",
			Study{Threshold: 0.6, Repeat: 2, Interrupted: true, Points: []Point{{GPUs: 1, Runs: append(runs(10), Run{Interrupted: true, ExitCode: 130})}, {GPUs: 2, Runs: runs(19)}}},
			[]float64{1, 1.9}, []float64{1, .95}, []string{"interrupted", "ok"}, "the study was interrupted: the figures are those of the runs that finished"},
		{"rule 3: instances taking turns on one GPU: the ideal is the instances",
			Study{Threshold: 0.6, By: "instances", Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Instances: 1, GPUsPerInstance: 1, Runs: runs(100)},
				{GPUs: 1, Instances: 2, GPUsPerInstance: 1, Runs: runs(190)}, {GPUs: 1, Instances: 4, GPUsPerInstance: 1, Runs: runs(300)}}},
			[]float64{1, 1.9, 3}, []float64{1, .95, .75}, []string{"ok", "ok", "ok"}, "scales to 4 instance(s): efficiency 75% at 4"},
		{"rule 3: instances of a GPU each: counted in GPUs as before",
			Study{Threshold: 0.6, By: "instances", Points: []Point{{GPUs: 1, Instances: 1, GPUsPerInstance: 1, Runs: runs(1)}, {GPUs: 2, Instances: 2, GPUsPerInstance: 1, Runs: runs(1.9)}}},
			[]float64{1, 1.9}, []float64{1, .95}, []string{"ok", "ok"}, "scales to 2 GPU(s)"},
		{"stopped by --halt at a failed size", Study{Threshold: 0.6, Points: []Point{{GPUs: 1, Runs: runs(1)}, {GPUs: 2, Runs: failed}, {GPUs: 4}}},
			[]float64{1, math.NaN(), math.NaN()}, []float64{1, math.NaN(), math.NaN()}, []string{"ok", "failed", "not run"}, "only 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.study
			s.Analyse()
			for i, p := range s.Points {
				if p.Runs == nil {
					t.Errorf("point %d: runs nil, written as null: want a list, empty when none ran", i)
				}
				if p.Status != tc.status[i] || !near(p.Speedup, tc.speedup[i]) || !near(p.Efficiency, tc.eff[i]) {
					t.Errorf("point %d (%d GPUs): %s, speedup %v, efficiency %v; want %s %.3f %.3f", i, p.GPUs, p.Status, val(p.Speedup), val(p.Efficiency),
						tc.status[i], tc.speedup[i], tc.eff[i])
				}
			}
			if !strings.Contains(s.Verdict, tc.verdict) {
				t.Errorf("verdict %q, want %q", s.Verdict, tc.verdict)
			}
		})
	}
}

// TestSlowerIsBeyondNoise: rule 5 calls a larger size slower only by more
// than slowerBy, and not when the runs' spreads overlap (issue 34: "4
// GPU(s) are slower than 2 (speedup 1.40 against 1.40)" for 0.4%).
func TestSlowerIsBeyondNoise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points []Point
		slower string // "" when the verdict must not call a size slower
	}{
		{"rule 5: 0.4% less is noise", []Point{{GPUs: 1, Runs: runs(10)}, {GPUs: 2, Runs: runs(14)}, {GPUs: 4, Runs: runs(13.944)}}, ""},
		{"rule 5: 4.9% less is noise", []Point{{GPUs: 1, Runs: runs(10)}, {GPUs: 2, Runs: runs(14)}, {GPUs: 4, Runs: runs(13.32)}}, ""},
		{"rule 5: 10% less is slower, with the figures", []Point{{GPUs: 1, Runs: runs(10)}, {GPUs: 2, Runs: runs(14)}, {GPUs: 4, Runs: runs(12.6)}},
			"4 GPU(s) are slower than 2 (speedup 1.26 against 1.40), 10% less"},
		{"rule 5: spreads that overlap are noise", []Point{{GPUs: 1, Runs: runs(10, 10, 10)}, {GPUs: 2, Runs: runs(15, 16, 20)}, {GPUs: 4, Runs: runs(12, 13, 16)}}, ""},
		{"rule 5: spreads apart are slower", []Point{{GPUs: 1, Runs: runs(10, 10, 10)}, {GPUs: 2, Runs: runs(15, 16, 17)}, {GPUs: 4, Runs: runs(12, 13, 14)}},
			"4 GPU(s) are slower than 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Study{Threshold: 0.1, Metric: &MetricInfo{}, Points: tc.points}
			s.Analyse()
			if tc.slower == "" && strings.Contains(s.Verdict, "slower") || !strings.Contains(s.Verdict, tc.slower) {
				t.Errorf("verdict %q, want %q", s.Verdict, tc.slower)
			}
		})
	}
}

func near(x *float64, want float64) bool {
	if math.IsNaN(want) {
		return x == nil
	}
	return x != nil && math.Abs(*x-want) < 0.001
}

func val(x *float64) any {
	if x == nil {
		return nil
	}
	return *x
}

func TestMetric(t *testing.T) {
	lines := map[int][]string{
		0: {"epoch 1 throughput: 100.0 samples/s", "noise", "epoch 2 throughput: 1,200 samples/s"},
		1: {"epoch 1 throughput: 50 samples/s"},
	}
	for _, tc := range []struct {
		expr, of string
		want     float64
		why      string
	}{
		{`throughput: ([0-9.,]+)`, "last", 1200, ""},
		{`throughput: ([0-9.,]+)`, "mean", 650, ""},
		{`throughput: ([0-9.,]+)`, "sum", 1250, ""},
		{`[0-9.,]+ samples/s`, "last", 0, "not a number"}, // no group: the whole match, "1,200 samples/s"
		{`latency: ([0-9.]+)`, "last", 0, "never matched"},
		{`(epoch \d+)`, "last", 0, "not a number"},
	} {
		m, err := NewMetric(tc.expr, tc.of)
		if err != nil {
			t.Fatal(err)
		}
		r := m.NewReading()
		for i := 0; i < 2; i++ {
			for _, l := range lines[i] {
				r.Line(i, l)
			}
		}
		got, why := r.Figure()
		if got != tc.want || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%s of %q: %v %q, want %v %q", tc.of, tc.expr, got, why, tc.want, tc.why)
		}
	}
	for expr, want := range map[string]string{"": "is empty", "  ": "is empty", "(": "not a regex", "(a)(b)": "has 2 groups"} {
		if _, err := NewMetric(expr, "last"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--metric %q: %v, want %q", expr, err, want)
		}
	}
}

func TestSizes(t *testing.T) {
	if got, err := Sizes("-G", "8,1,4,2", 8); err != nil || len(got) != 4 || got[0] != 1 || got[3] != 8 {
		t.Errorf("%v %v", got, err)
	}
	for list, want := range map[string]string{"": "not a count", "0,1": "not a count", "1,x": "not a count", "2,2": "2 twice", "1.5": "not a count", "+2": "not a count",
		// bounded before any size is planned (issue 34): 2^31, 2^63-1, 10^11, past int64
		"1,2147483648": "2147483648 is too large: a size is 1..1024", "9223372036854775807": "too large", "1,99999999999": "too large",
		"99999999999999999999": "99999999999999999999 is too large", "1025": "too large"} {
		if _, err := Sizes("-G", list, 1024); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", list, err, want)
		}
	}
}

// Rule 5: a size past which more is slower is not the efficient one,
// whatever its efficiency, and the verdict's percents are the table's
// (issue 34's sweep: "4 GPU(s) is the efficient size; 4 GPU(s) are
// slower than 2", and 44% in the table beside "45%" in the verdict).
func TestVerdictNeverContradictsItself(t *testing.T) {
	s := Study{Threshold: 0.4, Metric: &MetricInfo{}, Points: []Point{{GPUs: 1, Runs: runs(100)}, {GPUs: 2, Runs: runs(190)},
		{GPUs: 4, Runs: runs(178)}, {GPUs: 8, Runs: runs(170)}}}
	s.Analyse()
	if want := "beyond 2 GPU(s) more is slower: 2 GPU(s) is the efficient size; 4 GPU(s) are slower than 2"; !strings.HasPrefix(s.Verdict, want) {
		t.Errorf("verdict %q, want %q…", s.Verdict, want)
	}
	for x, want := range map[float64]string{0.445: "45%", 0.0999999: "10%", 0.051: "5.1%", 0.05: "5%", 0.999999: "100%", 1.9: "190%", -0.3: "-30%"} {
		if got := Pct(x); got != want {
			t.Errorf("Pct(%v) = %q, want %q", x, got, want)
		}
	}
	one := Study{Threshold: 0.6, Points: []Point{{GPUs: 2, Runs: runs(1)}}}
	if one.Analyse(); one.Verdict != "one size, 2 GPU(s): nothing to compare" {
		t.Errorf("one size: %q", one.Verdict)
	}
}

// Metric's rule 4: a figure of 0 or less is none, with the reason (it was
// "ok" with no speedup, or gave a negative efficiency).
func TestFigureAboveZero(t *testing.T) {
	m, _ := NewMetric(`rate: (-?[0-9.]+)`, "last")
	for line, want := range map[string]string{"rate: 0": "its figure was 0", "rate: -3": "its figure was -3", "rate: 2.5": ""} {
		r := m.NewReading()
		r.Line(0, line)
		if _, why := r.Figure(); !strings.Contains(why, want) || (want == "") != (why == "") {
			t.Errorf("%q: %q, want %q", line, why, want)
		}
	}
}
