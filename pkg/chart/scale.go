package chart

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Study is what the picture of a scaling study shows.
type Study struct {
	Title     string
	By        string  // what the x axis counts: "GPUs (one process)", "GPUs (one instance each)"
	Threshold float64 // the efficiency that is worth it
	Points    []StudyPoint
	Verdict   string
	// Figure is what the speedup is of, with its unit: "the figure
	// (samples/s)", "1/wall time".
	Figure string
	// GPUNote says why GPU use was not measured; "" when it was.
	GPUNote string
	// Packing: a packing study (instances per GPU), whose points each
	// have a Mode; its picture is the speedup over one per GPU and the
	// GPU use, a line per mode, with no ideal and no efficiency.
	Packing bool
}

// StudyPoint is one size: nil where the point gave no figure.
type StudyPoint struct {
	GPUs                       int
	Speedup, Ideal, Efficiency *float64
	// SpeedupLow and SpeedupHigh are the runs' spread.
	SpeedupLow, SpeedupHigh *float64
	// Util is how busy each GPU was, the mean over the GPUs, in percent
	// (study.GPUBusy): not an instance's own figure.
	Util   *float64
	Status string
	// Mode is a packing study's line the point is on: "taking turns",
	// "under MPS".
	Mode string
}

// StudySVG draws a study: the speedup against the ideal, the parallel
// efficiency against the threshold, and the mean GPU utilisation, each
// against the GPU count, the verdict below.
func StudySVG(s Study, w io.Writer) error {
	c := newCanvas(24*cm, 30*cm)
	top := titleLines(c, s.Title)
	var charts []xyChart
	if s.Packing {
		charts = packingCharts(s)
	} else {
		charts = studyCharts(s)
	}
	left := yAxisRoom(charts...)
	for i, b := range stack(box{4, top, c.W - 4, c.H - 2.2*cm - top}, len(charts), 0.8*cm) {
		drawChart(c, charts[i], b, left)
	}
	y := c.H - 1.4*cm
	for _, line := range studyFoot(s) {
		for _, part := range wrap(legendFace, line, c.W-2*cm) {
			c.text(legendFace, cm, y, atStart, part)
			y += 1.4 * legendFace.Size
		}
	}
	return c.writeTo(w)
}

// studyFoot is the verdict, and the points without a figure.
func studyFoot(s Study) []string {
	lines := []string{"verdict: " + s.Verdict}
	var missing []string
	for _, p := range s.Points {
		switch {
		case p.Speedup != nil:
		case s.Packing:
			missing = append(missing, fmt.Sprintf("%d per GPU %s: %s", p.GPUs, p.Mode, p.Status))
		default:
			missing = append(missing, fmt.Sprintf("%d GPU(s): %s", p.GPUs, p.Status))
		}
	}
	if len(missing) > 0 {
		lines = append(lines, "no figure: "+strings.Join(missing, ", "))
	}
	return lines
}

// The study's series: measured points are dotted, the ideal dashed, and
// the threshold a thin red dash.
var (
	idealDashes     = []float64{6, 4}
	thresholdStroke = stroke{Colour: threshRed, Width: 1, Dashes: []float64{3, 3}}
)

const studyDot = 3.5

// studyCharts makes the three panels on one x axis of GPU counts, a
// tick at every size, a failed one too. Their legends go where their
// lines are not: the speedup starts low on the left, efficiency and
// utilisation start high.
func studyCharts(s Study) []xyChart {
	x := "GPUs"
	if s.By != "" {
		x = s.By
	}
	// the figure and its unit in the title: an axis label that long
	// would be taller than the panel
	title := "Speedup"
	if s.Figure != "" {
		title = "Speedup of " + s.Figure + " over the smallest size"
	}
	axis := xyChart{XLabel: x, XPad: 8}
	for _, p := range s.Points {
		axis.XTicks = append(axis.XTicks, tick{float64(p.GPUs), fmt.Sprint(p.GPUs)})
	}
	if n := len(axis.XTicks); n > 0 {
		axis.XMin, axis.XMax = axis.XTicks[0].Value, axis.XTicks[n-1].Value
	}
	speed, eff, util := axis, axis, axis
	speed.Title, speed.YLabel, speed.Legend = title, "speedup over the smallest size (×)", legendTopLeft
	eff.Title, eff.YLabel, eff.Legend, eff.YMax = "Parallel efficiency", "efficiency (%)", legendBottomLeft, 110
	util.Title, util.YLabel, util.Legend, util.YMax = "GPU utilisation", "mean GPU utilisation (%)", legendBottomLeft, 105
	var measured, ideal, effs, utils []xy
	var high []float64
	for _, p := range s.Points {
		g := float64(p.GPUs)
		if p.Speedup != nil {
			measured, ideal = append(measured, xy{g, *p.Speedup}), append(ideal, xy{g, *p.Ideal})
			effs = append(effs, xy{g, 100 * *p.Efficiency})
			high = append(high, *p.Speedup, *p.Ideal)
			if p.SpeedupLow != nil && p.SpeedupHigh != nil {
				speed.Bars = append(speed.Bars, errorBar{g, *p.SpeedupLow, *p.SpeedupHigh})
				high = append(high, *p.SpeedupHigh)
			}
		}
		if p.Util != nil {
			utils = append(utils, xy{g, *p.Util})
		}
	}
	speed.YMax, speed.BarColour = math.Max(1.08*maxOf(high), 1), palette[0]
	speed.Series = studySeries(series{Name: "measured (median of the runs)", Stroke: seriesStroke(0), Dot: studyDot}, measured)
	ideal0 := series{Name: "ideal", Stroke: seriesStroke(7)}
	ideal0.Stroke.Dashes = idealDashes
	speed.Series = append(speed.Series, studySeries(ideal0, ideal)...)
	eff.Series = studySeries(series{Name: "efficiency", Stroke: seriesStroke(0), Dot: studyDot}, effs)
	if n := len(axis.XTicks); n > 0 {
		th := series{Name: "threshold " + pct(s.Threshold), Stroke: thresholdStroke,
			Segments: [][]xy{{{axis.XMin, 100 * s.Threshold}, {axis.XMax, 100 * s.Threshold}}}}
		eff.Series = append(eff.Series, th)
	}
	util.Series = studySeries(series{Name: "mean GPU utilisation", Stroke: seriesStroke(2), Dot: studyDot}, utils)
	if len(utils) == 0 {
		util.Note = wrap(labelFace, utilNote(s), 12*cm)
	}
	return []xyChart{speed, eff, util}
}

// studySeries is s through pts, or nothing (no line, no legend entry)
// when no point has a figure.
func studySeries(s series, pts []xy) []series {
	if len(pts) == 0 {
		return nil
	}
	s.Segments = [][]xy{pts}
	return []series{s}
}

// utilNote is what an empty utilisation panel says instead of nothing.
func utilNote(s Study) string {
	if s.GPUNote != "" {
		return "GPU use not measured: " + s.GPUNote
	}
	return "no size measured any GPU use"
}

// packingCharts are a packing study's two panels on one x axis of
// instances per GPU (StudyPoint.GPUs), a tick at every size: the speedup
// over the baseline and how busy each GPU was, each a line per mode in
// the order the points first name it (a mode's line starts where it was
// measured: MPS has no size of one per GPU, which shares nothing).
func packingCharts(s Study) []xyChart {
	axis := xyChart{XLabel: s.By, XPad: 8}
	if axis.XLabel == "" {
		axis.XLabel = "instances per GPU"
	}
	seen := map[int]bool{}
	var modes []string
	for _, p := range s.Points {
		if !seen[p.GPUs] {
			seen[p.GPUs] = true
			axis.XTicks = append(axis.XTicks, tick{float64(p.GPUs), fmt.Sprint(p.GPUs)})
		}
		if !slices.Contains(modes, p.Mode) {
			modes = append(modes, p.Mode)
		}
	}
	slices.SortFunc(axis.XTicks, func(a, b tick) int { return cmp.Compare(a.Value, b.Value) })
	if n := len(axis.XTicks); n > 0 {
		axis.XMin, axis.XMax = axis.XTicks[0].Value, axis.XTicks[n-1].Value
	}
	title := "Speedup over the baseline"
	if s.Figure != "" {
		title = "Speedup of " + s.Figure + " over the baseline"
	}
	speed, util := axis, axis
	speed.Title, speed.YLabel, speed.Legend = title, "speedup (×)", legendTopLeft
	util.Title, util.YLabel, util.Legend, util.YMax = "GPU utilisation", "each GPU's, mean over the GPUs (%)", legendBottomLeft, 105
	high := []float64{1}
	anyUtil := false
	for i, m := range modes {
		var sp, ut []xy
		for _, p := range s.Points {
			if p.Mode != m {
				continue
			}
			if p.Speedup != nil {
				sp = append(sp, xy{float64(p.GPUs), *p.Speedup})
				high = append(high, *p.Speedup)
			}
			if p.Util != nil {
				ut = append(ut, xy{float64(p.GPUs), *p.Util})
			}
		}
		anyUtil = anyUtil || len(ut) > 0
		speed.Series = append(speed.Series, studySeries(series{Name: m, Stroke: seriesStroke(i), Dot: studyDot}, sp)...)
		util.Series = append(util.Series, studySeries(series{Name: m, Stroke: seriesStroke(i), Dot: studyDot}, ut)...)
	}
	speed.YMax = 1.08 * maxOf(high)
	if !anyUtil {
		util.Note = wrap(labelFace, utilNote(s), 12*cm)
	}
	return []xyChart{speed, util}
}
