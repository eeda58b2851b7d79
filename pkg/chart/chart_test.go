package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

// sampleRun is 8 instances over 10 minutes: ramps, a restart, a gap
// without telemetry, exits at one moment.
func sampleRun() Run {
	var r Run
	r.Title = "gpulaunch -n 8 -- python train.py   on gpu07, 2026-11-23 18:00 UTC"
	for i := range 8 {
		in := Instance{Label: fmt.Sprintf("instance %d (0000:%02x:00.0)", i, 0x18+i)}
		for k := 0; k <= 300; k++ {
			t := float64(2 * k)
			util := 60 + 30*math.Sin(t/60+float64(i)) + float64(i)
			if i == 3 && k > 100 && k < 120 {
				util = -1
			}
			in.T, in.GPUUtil, in.GPUMem = append(in.T, t), append(in.GPUUtil, util), append(in.GPUMem, float64(k)*1e8*(1+float64(i)/8))
		}
		in.Events = []Event{{0, "start"}, {600, "exit"}}
		if i == 5 {
			in.Events = append(in.Events, Event{200, "exit"}, Event{201, "start"}, Event{300, "warning"})
		}
		r.Instances = append(r.Instances, in)
	}
	r.Summary = []string{"INSTANCE  EXIT  WALL   GPU% MEAN/PEAK  GPU MEM", "0         0     600s   61/91           38.1 GiB"}
	return r
}

// wellFormed parses an SVG document whole.
func wellFormed(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := d.Token(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
	}
}

// A run's picture is an SVG with one legend entry per instance and the
// summary, and its HTML page holds the same picture and the table.
func TestRunSVG(t *testing.T) {
	r := sampleRun()
	var svg bytes.Buffer
	if err := RunSVG(r, &svg); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg.Bytes())
	for i := range 8 {
		if n := strings.Count(svg.String(), fmt.Sprintf(">instance %d (", i)); n != 1 {
			t.Errorf("legend entry of instance %d: %d", i, n)
		}
	}
	for _, want := range []string{"GPU utilisation (%)", "time since the start (s)", "GPU memory (GiB)", "GPU%\u00a0MEAN/PEAK"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("no %q", want)
		}
	}
	if out := os.Getenv("CHART_OUT"); out != "" {
		os.WriteFile(out+"/run.svg", svg.Bytes(), 0o644)
	}
	var page bytes.Buffer
	if err := RunHTML(r, &page); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(page.String(), "<!DOCTYPE html>") || !strings.Contains(page.String(), "<svg") || strings.Contains(page.String(), "<?xml") {
		t.Errorf("page:\n%.300s", page.String())
	}
}

// The same run draws the same SVG, so that a picture kept in a
// repository (docs/report-example.svg) changes only when the run does.
func TestRunSVGIsStable(t *testing.T) {
	var first, again bytes.Buffer
	if err := RunSVG(sampleRun(), &first); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again.Reset()
		if err := RunSVG(sampleRun(), &again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), again.Bytes()) {
			t.Fatal("two drawings of one run differ")
		}
	}
}

// A run with no GPU telemetry and no samples still draws.
func TestRunSVGWithoutSamples(t *testing.T) {
	var svg bytes.Buffer
	r := Run{Title: "true", Instances: []Instance{{Label: "instance 0: no samples"}}}
	if err := RunSVG(r, &svg); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg.Bytes())
}

func fp(x float64) *float64 { return &x }

// A study's picture: three panels, a legend each, the verdict.
func TestStudySVG(t *testing.T) {
	s := Study{Title: "gpulaunch scale -G 1,2,4,8 -- ./amdahl", By: "GPUs (one process)", Threshold: 0.6,
		Verdict: "beyond 4 GPU(s) efficiency drops below 60% (59% at 8): 4 GPU(s) is the efficient size"}
	for _, g := range []int{1, 2, 4, 8} {
		sp := 1 / (0.1 + 0.9/float64(g))
		s.Points = append(s.Points, StudyPoint{GPUs: g, Speedup: fp(sp), Ideal: fp(float64(g)), Efficiency: fp(sp / float64(g)),
			SpeedupLow: fp(sp * 0.97), SpeedupHigh: fp(sp * 1.02), Util: fp(95 - 5*float64(g)), Status: "ok"})
	}
	s.Points = append(s.Points, StudyPoint{GPUs: 16, Status: "failed"})
	var svg bytes.Buffer
	if err := StudySVG(s, &svg); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg.Bytes())
	for _, want := range []string{"Speedup", "Parallel efficiency", "GPU utilisation", "threshold 60%", "ideal", "efficient size", "16 GPU(s): failed"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("no %q", want)
		}
	}
	if out := os.Getenv("CHART_OUT"); out != "" {
		os.WriteFile(out+"/study.svg", svg.Bytes(), 0o644)
	}
}
