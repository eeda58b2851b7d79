package chart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Run is what a picture of a run shows.
type Run struct {
	Title     string // the command and where and when it ran
	Instances []Instance
	// Summary is the summary table, one line per row, already aligned
	// (it is drawn in a monospace font); a line wider than the column
	// beside the panels is wrapped.
	Summary []string
	// GPUNote says why GPU use was not measured ("" when it was, or
	// telemetry was off).
	GPUNote string
}

// Instance is one instance's timeline.
type Instance struct {
	Label string // "instance 3"
	// T, GPUUtil, GPUMem, CPU and RSS are its samples: seconds since the
	// start, percent, bytes, percent of one CPU, bytes; a figure below 0
	// was not measured.
	T, GPUUtil, GPUMem, CPU, RSS []float64
	// GPUUtilSource says whose use GPUUtil is: "processes" (its own
	// processes'), "gpu" (its GPU's, whoever used it), "" (unknown: a
	// report of a gpulaunch before it, or no sample).
	GPUUtilSource string
	Events        []Event
}

// Event is a start, an exit or a warning, at T seconds.
type Event struct {
	T    float64
	Kind string // "start", "exit", "warning"
}

// eventGlyphs mark the events in the events strip; eventKinds is the
// order they are drawn and listed in (a map's would change the SVG from
// one drawing to the next).
var (
	eventGlyphs = map[string]string{"start": triangleGlyph, "exit": crossGlyph, "warning": ringGlyph}
	eventKinds  = []string{"start", "exit", "warning"}
)

// A panel is one measure over time.
type panel struct {
	Title, YLabel string
	// of picks the measure's series from an instance.
	of func(Instance) []float64
	// bytes: the axis is in a byte unit; else percent.
	bytes bool
}

// is: p is q (a panel holds a function, which Go cannot compare).
func (p panel) is(q panel) bool { return p.Title == q.Title }

var (
	gpuUtilPanel = panel{"GPU utilisation", "GPU utilisation (%)", func(in Instance) []float64 { return in.GPUUtil }, false}
	gpuMemPanel  = panel{"GPU memory of each instance's processes", "GPU memory", func(in Instance) []float64 { return in.GPUMem }, true}
	cpuPanel     = panel{"CPU use of each instance's process tree", "CPU (% of one CPU)", func(in Instance) []float64 { return in.CPU }, false}
	rssPanel     = panel{"Resident memory of each instance's process tree", "RSS", func(in Instance) []float64 { return in.RSS }, true}
)

// runPanels is which panels a run's picture has, in order:
//  1. GPU utilisation and GPU memory, when some instance has a measured
//     GPU point; a run whose GPU use was not measured (a node file,
//     Intel, no NVML) leaves them out rather than drawing them empty, and
//     the picture says why (runNote).
//  2. CPU % and RSS, when some instance has a point: the sampler measures
//     them on every node.
//  3. With no point at all (telemetry off, or a run shorter than one
//     sample), the GPU utilisation panel alone, empty, so that the
//     events still have a time axis.
func runPanels(r Run) []panel {
	var out []panel
	if anyMeasured(r, gpuUtilPanel) || anyMeasured(r, gpuMemPanel) {
		out = append(out, gpuUtilPanel, gpuMemPanel)
	}
	if anyMeasured(r, cpuPanel) || anyMeasured(r, rssPanel) {
		out = append(out, cpuPanel, rssPanel)
	}
	if len(out) == 0 {
		out = []panel{gpuUtilPanel}
	}
	return out
}

// anyMeasured: some instance has a measured point of p's series.
func anyMeasured(r Run, p panel) bool {
	for _, in := range r.Instances {
		for _, y := range p.of(in) {
			if y >= 0 {
				return true
			}
		}
	}
	return false
}

// runNote is the line under the title naming what the panels leave out
// (rule 1 of runPanels); "" when nothing is.
func runNote(r Run, panels []panel) string {
	if panels[0].is(gpuUtilPanel) || !hasSamples(r) {
		return ""
	}
	why := strings.TrimPrefix(r.GPUNote, "no GPU telemetry: ")
	if why == "" {
		why = "no GPU sample"
	}
	return "GPU use not measured (" + why + "): CPU and resident memory shown"
}

func hasSamples(r Run) bool {
	for _, in := range r.Instances {
		if len(in.T) > 0 {
			return true
		}
	}
	return false
}

// Layout of a run's picture, in centimetres: each panel's height, and
// the events strip's row per instance (its glyphs 3 pt in radius need
// about 0.35 cm each to stay apart).
const (
	panelHeight = 7.0
	eventRow    = 0.42
)

// runDims is the canvas of a picture of n instances and np panels, in
// pt: tall enough for the panels, the events strip, and a legend whose
// lines never overlap.
func runDims(n, np int) (float64, float64) {
	h := 3 + eventRow*float64(n+1) + panelHeight*float64(np)
	return 30 * cm, math.Max(h, 10+0.6*float64(n)) * cm
}

// The run picture's columns: the panels in the left 64 %, the legend and
// the summary table from 66 % to 0.5 cm from the right edge.
const (
	panelsWidth = 0.64
	rightColumn = 0.66
)

// RunSVG draws r: an events strip with one row per instance (its starts,
// exits and warnings), then each panel of runPanels over time, one
// colour per instance; the legend and the summary table on the right.
func RunSVG(r Run, w io.Writer) error {
	panels := runPanels(r)
	width, height := runDims(len(r.Instances), len(panels))
	c := newCanvas(width, height)
	top := titleLines(c, r.Title)
	rightTop := math.Max(1.6*cm, top)
	if note := runNote(r, panels); note != "" {
		for _, line := range wrap(labelFace, note, 0.6*width) {
			c.text(labelFace, cm, top, atStart, line)
			top += 1.3 * labelFace.Size
		}
		top += 0.2 * cm
	}
	strip := eventRow * float64(len(r.Instances)+1) * cm
	charts := runCharts(r, panels)
	left := yAxisRoom(charts...)
	slots := stack(box{4, top + strip, panelsWidth * width, height - top - strip - 0.3*cm}, len(charts), cm)
	var first frame
	for i, ch := range charts {
		f := drawChart(c, ch, slots[i], left)
		if i == 0 {
			first = f
		}
	}
	_, div := timeUnit(runEnd(r))
	drawEvents(c, r.Instances, first, div, top)
	right := box{rightColumn * width, rightTop, width - 0.5*cm - rightColumn*width, height - rightTop}
	drawLegend(c, r, right)
	drawTable(c, r.Summary, len(r.Instances), right)
	return c.writeTo(w)
}

// stack divides b into n boxes one above the other, gap apart.
func stack(b box, n int, gap float64) []box {
	h := (b.H - gap*float64(n-1)) / float64(n)
	var out []box
	for i := range n {
		out = append(out, box{b.X, b.Y + float64(i)*(h+gap), b.W, h})
	}
	return out
}

// runCharts makes the panels on one time axis from the start, in the
// unit timeUnit picks; a line is broken where its figure was not
// measured.
func runCharts(r Run, panels []panel) []xyChart {
	end := runEnd(r)
	unit, div := timeUnit(end)
	var charts []xyChart
	for _, pn := range panels {
		var ys [][]float64
		for _, in := range r.Instances {
			ys = append(ys, pn.of(in))
		}
		top, yDiv := maxOf(ys...), 1.0
		ch := xyChart{Title: pn.Title, XLabel: "time since the start (" + unit + ")", YLabel: pn.YLabel, XMax: end / div}
		if pn.is(gpuUtilPanel) {
			ch.Title = gpuUtilTitle(r)
		}
		if pn.bytes {
			var u string
			u, yDiv = byteUnit(top)
			ch.YLabel += " (" + u + ")"
		}
		ch.YMax = math.Max(1.12*top/yDiv, 1) // room above the highest line
		if pn.is(gpuUtilPanel) {
			ch.YMax = 105
		}
		for i, in := range r.Instances {
			ch.Series = append(ch.Series, series{Stroke: seriesStroke(i), Segments: measured(in.T, pn.of(in), div, yDiv)})
		}
		charts = append(charts, ch)
	}
	return charts
}

// gpuUtilTitle is the GPU utilisation panel's title, which says whose
// use its lines are, by the instances' sources. The rules:
//  1. Every instance's its own processes': "… of each instance's own
//     processes (SM %)".
//  2. Every instance's its GPU's: "… of each instance's GPU, whoever used
//     it".
//  3. Some of each: both named, the legend marking the GPU's (legendLabel).
//  4. No source known (a report of a gpulaunch before it): the plain
//     title.
func gpuUtilTitle(r Run) string {
	procs, gpus := sourceCounts(r)
	switch {
	case procs > 0 && gpus == 0:
		return gpuUtilPanel.Title + " of each instance's own processes (SM %)"
	case gpus > 0 && procs == 0:
		return gpuUtilPanel.Title + " of each instance's GPU, whoever used it"
	case gpus > 0:
		return gpuUtilPanel.Title + ": each instance's own processes', or its GPU's where the legend says"
	}
	return gpuUtilPanel.Title
}

// sourceCounts counts the instances whose GPU% is their processes' and
// those whose is their GPU's.
func sourceCounts(r Run) (procs, gpus int) {
	for _, in := range r.Instances {
		switch in.GPUUtilSource {
		case "processes":
			procs++
		case "gpu":
			gpus++
		}
	}
	return procs, gpus
}

// legendLabel is an instance's line of the legend: its label, and where
// the GPU panel mixes sources (gpuUtilTitle's rule 3), "GPU%: its GPU's"
// for an instance whose figure is its GPU's.
func legendLabel(r Run, in Instance) string {
	if procs, gpus := sourceCounts(r); procs > 0 && gpus > 0 && in.GPUUtilSource == "gpu" {
		return in.Label + " · GPU%: its GPU's"
	}
	return in.Label
}

// runEnd is the time of the run's last sample or event.
func runEnd(r Run) float64 {
	var all []float64
	for _, in := range r.Instances {
		all = append(all, in.T...)
		for _, e := range in.Events {
			all = append(all, e.T)
		}
	}
	return maxOf(all)
}

// measured splits a series into the runs of points that were measured
// (a figure below 0, or not finite, was not), scaled by xDiv and yDiv.
func measured(t, ys []float64, xDiv, yDiv float64) [][]xy {
	var out [][]xy
	var cur []xy
	for k := range t {
		if k >= len(ys) || !(ys[k] >= 0) || math.IsInf(ys[k], 0) || math.IsNaN(t[k]) || math.IsInf(t[k], 0) {
			if len(cur) > 0 {
				out, cur = append(out, cur), nil
			}
			continue
		}
		cur = append(cur, xy{t[k] / xDiv, ys[k] / yDiv})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// drawEvents draws the events strip from y top down: one row per
// instance, named left of the first panel's data area and ruled in light
// grey across it, its events where f puts their time, each kind with its
// glyph in the instance's colour (time in seconds, over div: the time
// axis's unit; an event at no time, not a number, is left out). A row each, rather than glyphs offset
// within a panel: eight instances that start and exit at one moment
// would otherwise stack their glyphs (the offset a panel has room for is
// smaller than a glyph), and the row says whose an event is where
// colours alone are hard to tell apart.
func drawEvents(c *canvas, insts []Instance, f frame, div, top float64) {
	row := eventRow * cm
	x0, x1 := f.Left, f.Left+f.W
	c.text(tickFace, x0-6, top+row/2+0.35*tickFace.Size, atEnd, "events")
	rule := stroke{Colour: gridGrey, Width: 0.5}
	for i, in := range insts {
		y := top + float64(i+1)*row + row/2
		c.text(eventFace, x0-6, y+0.35*eventFace.Size, atEnd, fmt.Sprint(i))
		c.line(rule, point{x0, y}, point{x1, y})
		for _, kind := range eventKinds {
			for _, e := range in.Events {
				if e.Kind == kind && !math.IsNaN(e.T) && !math.IsInf(e.T, 0) {
					c.glyph(eventGlyphs[kind], point{f.at(e.T/div, 0).X, y}, 3, palette[i%len(palette)])
				}
			}
		}
	}
}

// drawLegend draws one entry per instance and one per event kind at the
// top of b.
func drawLegend(c *canvas, r Run, b box) {
	x, y := b.X, b.Y
	insts := r.Instances
	for i, in := range insts {
		mid := y + legendLine*(float64(i)+0.5)
		c.line(seriesStroke(i), point{x, mid}, point{x + legendSample, mid})
		c.text(legendFace, x+legendSample+5, mid+0.35*legendFace.Size, atStart, legendLabel(r, in))
	}
	for k, kind := range eventKinds {
		mid := y + legendLine*(float64(len(insts)+k)+0.5)
		c.glyph(eventGlyphs[kind], point{x + legendSample/2, mid}, 3, black)
		c.text(legendFace, x+legendSample+5, mid+0.35*legendFace.Size, atStart, kind)
	}
}

// drawTable writes the summary in b below the legend of n instances,
// each row wrapped to b's width.
func drawTable(c *canvas, rows []string, n int, b box) {
	lineH := 1.35 * tableFace.Size
	y := b.Y + float64(n+3)*legendLine + 2*lineH
	for _, row := range rows {
		for _, line := range wrap(tableFace, row, b.W) {
			// SVG folds runs of spaces into one: the columns keep their
			// places with no-break spaces
			c.text(tableFace, b.X, y, atStart, strings.ReplaceAll(line, " ", "\u00a0"))
			y += lineH
		}
	}
}

// RunHTML writes r as one self-contained page for a browser: the picture
// inline, which holds the summary table, and the title. The table is not
// repeated below it: the picture's text is text, to select and copy.
func RunHTML(r Run, w io.Writer) error {
	var svg strings.Builder
	if err := RunSVG(r, &svg); err != nil {
		return err
	}
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n", html.EscapeString(r.Title))
	fmt.Fprint(w, "<style>body{font-family:sans-serif;margin:1em}</style></head><body>\n")
	fmt.Fprintf(w, "<h1>%s</h1>\n", html.EscapeString(r.Title))
	io.WriteString(w, svg.String())
	fmt.Fprint(w, "\n</body></html>\n")
	return nil
}
