package scaling

import (
	"encoding/json"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/chart"
)

// Picture is what chart draws of the analysed study: speedup against
// ideal (with the spread of its runs), efficiency and GPU use by size.
// gpuNote says why GPU use was not measured ("" when it was).
func (s *Study) Picture(gpuNote string) chart.Study {
	if s.By == ByPerGPU.By {
		return s.packingPicture(gpuNote)
	}
	by := "GPUs (one process)"
	switch {
	case s.By == ByInstances.By && s.Shared():
		by = "instances (taking turns on the GPUs)"
	case s.By == ByInstances.By:
		by = "GPUs (one instance each)"
	}
	pic := chart.Study{Title: "gpulaunch scale: " + strings.Join(s.Command, " "), By: by, Threshold: s.Threshold, Verdict: s.Verdict,
		Figure: "1/wall time", GPUNote: gpuNote}
	if m := s.Metric; m != nil {
		pic.Figure = "the figure"
		if m.Unit != "" {
			pic.Figure += " (" + m.Unit + ")"
		}
	}
	for _, p := range s.Points {
		sp := chart.StudyPoint{GPUs: s.Size(p), Speedup: p.Speedup, Ideal: p.Ideal, Efficiency: p.Efficiency, Util: p.GPUUtil, Status: p.Status}
		if p.Speedup != nil && p.Min != nil {
			lo, hi := *p.Speedup**p.Min / *p.Median, *p.Speedup**p.Max / *p.Median
			if s.lowerBetter() {
				lo, hi = *p.Speedup**p.Median / *p.Max, *p.Speedup**p.Median / *p.Min
			}
			sp.SpeedupLow, sp.SpeedupHigh = &lo, &hi
		}
		pic.Points = append(pic.Points, sp)
	}
	return pic
}

// packingPicture is a packing study's picture: the speedup over the
// baseline (K2) and how busy each GPU was (the point's GPU%, not the
// instances' own figures) against the instances per GPU, a line per mode.
func (s *Study) packingPicture(gpuNote string) chart.Study {
	pic := chart.Study{Title: "gpulaunch scale --per-gpu: " + strings.Join(s.Command, " "), By: "instances per GPU", Verdict: s.Verdict,
		Figure: "instances/wall time", GPUNote: gpuNote, Packing: true}
	if m := s.Metric; m != nil {
		pic.Figure = "the summed figure"
		if m.Unit != "" {
			pic.Figure += " (" + m.Unit + ")"
		}
	}
	for _, p := range s.Points {
		mode := "taking turns"
		if p.Mode == MPS {
			mode = "under MPS"
		}
		pic.Points = append(pic.Points, chart.StudyPoint{GPUs: p.PerGPU, Speedup: p.Speedup, Util: p.GPUUtil, Status: p.Status, Mode: mode})
	}
	return pic
}

// SVG is the study's picture (Picture) as an SVG file's bytes.
func (s *Study) SVG(gpuNote string) ([]byte, error) {
	var b strings.Builder
	if err := chart.StudySVG(s.Picture(gpuNote), &b); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// JSON is the study as its JSON file's bytes (docs/scale.schema.json),
// indented, with a final newline.
func (s *Study) JSON() ([]byte, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	return append(data, '\n'), err
}
