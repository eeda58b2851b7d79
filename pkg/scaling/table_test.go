package scaling

import (
	"encoding/json"
	"strings"
	"testing"
)

// The table: a row per size with "-" for what it lacks, the unit in the
// METRIC header (none: no "()"), the verdict; the figure as a run's line
// says it.
func TestWriteTable(t *testing.T) {
	mem := 1.5 * (1 << 30)
	st := Study{By: "gpus", Repeat: 2, Threshold: 0.6, Metric: &MetricInfo{Unit: "samples/s"}, Points: []Point{
		{GPUs: 1, Instances: 1, GPUsPerInstance: 1, Runs: []Run{{Metric: ptr(100), GPUMemPerGPU: &mem}, {Metric: ptr(110), GPUMemPerGPU: &mem}}},
		{GPUs: 2, Instances: 1, GPUsPerInstance: 2, Runs: []Run{{ExitCode: 1}, {ExitCode: 1}}},
	}}
	st.Analyse()
	var b strings.Builder
	st.WriteTable(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i, want := range [][]string{
		{"GPUS", "INSTANCES", "METRIC (samples/s)", "MIN..MAX", "GPU MEM/GPU", "STATUS"},
		{"1×1", "105", "100..110", "1.00", "100%", "1.5 GiB", "ok"},
		{"1×2", "-  ", "failed"},
		{"verdict: only 1 GPU(s) gave a figure"},
	} {
		for _, w := range want {
			if i >= len(lines) || !strings.Contains(lines[i], w) {
				t.Errorf("line %d lacks %q:\n%s", i, w, b.String())
			}
		}
	}
	if st.Whole() || st.ExitStatus() != 1 {
		t.Errorf("a study with a failed size: whole %v, exit %d", st.Whole(), st.ExitStatus())
	}
	if got := st.FigureString(12.5); got != "12.5 samples/s" {
		t.Errorf("FigureString = %q", got)
	}
	st.Metric = nil
	b.Reset()
	st.WriteTable(&b)
	if !strings.Contains(b.String(), "METRIC (runs/s, 1/wall)") || st.FigureString(0.25) != "0.25 runs/s" {
		t.Errorf("without --metric:\n%s%s", b.String(), st.FigureString(0.25))
	}
	st.Metric = &MetricInfo{}
	b.Reset()
	st.WriteTable(&b)
	if !strings.Contains(b.String(), "METRIC  ") || strings.Contains(b.String(), "()") {
		t.Errorf("no --unit:\n%s", b.String())
	}
}

// The exit status: 130 interrupted, 1 when a size ran fewer rounds or
// gave no figure, 0 when whole.
func TestExitStatus(t *testing.T) {
	whole := Study{Repeat: 1, Points: []Point{{GPUs: 1, Runs: runs(1)}, {GPUs: 2, Runs: runs(2)}}}
	short := Study{Repeat: 2, Points: []Point{{GPUs: 1, Runs: runs(1)}}}
	stopped := whole
	stopped.Interrupted = true
	for _, tc := range []struct {
		name string
		st   Study
		want int
	}{{"whole", whole, 0}, {"a round short", short, 1}, {"interrupted", stopped, 130}} {
		tc.st.Analyse()
		if got := tc.st.ExitStatus(); got != tc.want {
			t.Errorf("%s: ExitStatus = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The picture: the sizes by what the study counts, and the speedup's
// band from the runs' spread — reversed for a figure where lower is
// better.
func TestPicture(t *testing.T) {
	for _, tc := range []struct {
		name   string
		st     Study
		by     string
		lo, hi float64
	}{
		{"by GPUs, a throughput", Study{By: "gpus", Metric: &MetricInfo{Unit: "img/s"}, Points: []Point{{GPUs: 1, Instances: 1, Runs: runs(10)}, {GPUs: 2, Instances: 1, Runs: runs(16, 20, 24)}}},
			"GPUs (one process)", 1.6, 2.4},
		{"by instances, a time", Study{By: "instances", Metric: &MetricInfo{LowerIsBetter: true}, Points: []Point{{GPUs: 1, Instances: 1, Runs: runs(10)}, {GPUs: 2, Instances: 2, Runs: runs(4, 5, 10)}}},
			"GPUs (one instance each)", 1, 2.5},
		{"instances taking turns", Study{By: "instances", Points: []Point{{GPUs: 1, Instances: 1, Runs: runs(10)}, {GPUs: 1, Instances: 2, Runs: runs(15, 20, 25)}}},
			"instances (taking turns on the GPUs)", 1.5, 2.5},
	} {
		tc.st.Analyse()
		pic := tc.st.Picture("")
		last := pic.Points[len(pic.Points)-1]
		if pic.By != tc.by || last.SpeedupLow == nil || *last.SpeedupLow != tc.lo || *last.SpeedupHigh != tc.hi {
			t.Errorf("%s: by %q, band %v..%v, want %q %v..%v", tc.name, pic.By, last.SpeedupLow, last.SpeedupHigh, tc.by, tc.lo, tc.hi)
		}
	}
}

// The files: the JSON ends with a newline and reads back; the SVG is
// the picture's.
func TestStudyFiles(t *testing.T) {
	st := Study{By: "gpus", Repeat: 1, Threshold: 0.6, Points: []Point{{GPUs: 1, Instances: 1, Runs: runs(10)}, {GPUs: 2, Instances: 1, Runs: runs(18)}}}
	st.Analyse()
	data, err := st.JSON()
	var back Study
	if err != nil || !strings.HasSuffix(string(data), "}\n") || json.Unmarshal(data, &back) != nil || back.Verdict != st.Verdict {
		t.Errorf("JSON: %v\n%s", err, data)
	}
	svg, err := st.SVG("no GPU backend")
	if err != nil || !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), "no GPU backend") {
		t.Errorf("SVG: %v\n%.300s", err, svg)
	}
}
