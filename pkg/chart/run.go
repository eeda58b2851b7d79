package chart

import (
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
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
	Events                       []Event
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
	eventGlyphs = map[string]draw.GlyphDrawer{"start": draw.TriangleGlyph{}, "exit": draw.CrossGlyph{}, "warning": draw.RingGlyph{}}
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

// runDims is the canvas of a picture of n instances and np panels: tall
// enough for the panels, the events strip, and a legend whose lines never
// overlap.
func runDims(n, np int) (vg.Length, vg.Length) {
	h := 3 + eventRow*float64(n+1) + panelHeight*float64(np)
	return 30 * vg.Centimeter, vg.Length(math.Max(h, 10+0.6*float64(n))) * vg.Centimeter
}

// RunSVG draws r: an events strip with one row per instance (its starts,
// exits and warnings), then each panel of runPanels over time, one
// colour per instance; the legend and the summary table on the right.
func RunSVG(r Run, w io.Writer) error {
	panels := runPanels(r)
	width, height := runDims(len(r.Instances), len(panels))
	c := vgsvg.New(width, height)
	dc := draw.New(c)
	plots, xDiv, err := runPlots(r, panels)
	if err != nil {
		return err
	}
	title := textStyle(sans, 14)
	title.XAlign = draw.XCenter
	dc.FillText(title, vg.Point{X: width / 2, Y: height - vg.Points(16)}, r.Title)
	top := height - 1.4*vg.Centimeter
	if note := runNote(r, panels); note != "" {
		sty := textStyle(sans, 11)
		for _, line := range wrap(sty, note, 0.6*width) {
			dc.FillText(sty, vg.Point{X: vg.Centimeter, Y: top}, line)
			top -= 1.3 * sty.Font.Size
		}
		top -= 0.2 * vg.Centimeter
	}
	strip := vg.Length(eventRow*float64(len(r.Instances)+1)) * vg.Centimeter
	left := draw.Crop(dc, 0, -0.36*width, 0, -(height - top + strip))
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Centimeter, PadTop: vg.Points(4), PadLeft: vg.Points(4)}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, left)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	data := plots[0].DataCanvas(canvases[0][0])
	drawEvents(dc, r.Instances, func(t float64) vg.Length { return data.X(plots[0].X.Norm(t / xDiv)) }, data.Min.X, data.Max.X, top)
	right := draw.Crop(dc, 0.66*width, -vg.Centimeter/2, vg.Centimeter, -1.6*vg.Centimeter)
	drawLegend(right, r.Instances)
	drawTable(right, r.Summary, len(r.Instances))
	_, err = c.WriteTo(w)
	return err
}

// runPlots makes the panels on one time axis from the start, in the time
// unit it returns the divisor of; a line is broken where its figure was
// not measured.
func runPlots(r Run, panels []panel) ([]*plot.Plot, float64, error) {
	var all []float64
	for _, in := range r.Instances {
		all = append(all, in.T...)
		for _, e := range in.Events {
			all = append(all, e.T)
		}
	}
	end := maxOf(all)
	unit, div := timeUnit(end)
	var plots []*plot.Plot
	for _, pn := range panels {
		var ys [][]float64
		for _, in := range r.Instances {
			ys = append(ys, pn.of(in))
		}
		top, yDiv := maxOf(ys...), 1.0
		yLabel := pn.YLabel
		p := newPlot(pn.Title, "time since the start ("+unit+")", yLabel)
		if pn.bytes {
			var u string
			u, yDiv = byteUnit(top)
			p.Y.Label.Text = yLabel + " (" + u + ")"
		}
		p.Y.Min, p.Y.Max = 0, math.Max(1.12*top/yDiv, 1) // room above the highest line
		if pn.is(gpuUtilPanel) {
			p.Y.Max = 105
		}
		p.X.Min, p.X.Max = 0, end/div
		for i, in := range r.Instances {
			for _, seg := range measured(in.T, pn.of(in), div, yDiv) {
				if err := addLine(p, seg, i); err != nil {
					return nil, 0, err
				}
			}
		}
		plots = append(plots, p)
	}
	return plots, div, nil
}

// measured splits a series into the runs of points that were measured,
// scaled by xDiv and yDiv.
func measured(t, ys []float64, xDiv, yDiv float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for k := range t {
		if k >= len(ys) || ys[k] < 0 {
			if len(cur) > 0 {
				out, cur = append(out, cur), nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: t[k] / xDiv, Y: ys[k] / yDiv})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func addLine(p *plot.Plot, xys plotter.XYs, i int) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.LineStyle = seriesStyle(i)
	p.Add(l)
	return nil
}

// drawEvents draws the events strip below y top: one row per instance,
// named on the left of x0 and ruled in light grey, its events at x(t),
// each kind with its glyph in the instance's colour, the row's rule from
// x0 to x1. A row each, rather
// than glyphs offset within a panel: eight instances that start and exit
// at one moment would otherwise stack their glyphs (the offset a panel
// has room for is smaller than a glyph), and the row says whose an event
// is where colours alone are hard to tell apart.
func drawEvents(c draw.Canvas, insts []Instance, x func(float64) vg.Length, x0, x1, top vg.Length) {
	row := vg.Length(eventRow) * vg.Centimeter
	label := textStyle(sans, 8)
	label.XAlign, label.YAlign = draw.XRight, draw.YCenter
	head := textStyle(sans, 9)
	head.XAlign, head.YAlign = draw.XRight, draw.YCenter
	c.FillText(head, vg.Point{X: x0 - vg.Points(6), Y: top - row/2}, "events")
	for i, in := range insts {
		y := top - vg.Length(i+1)*row - row/2
		c.FillText(label, vg.Point{X: x0 - vg.Points(6), Y: y}, fmt.Sprint(i))
		c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 225}, Width: vg.Points(0.5)}, x0, y, x1, y)
		for _, kind := range eventKinds {
			for _, e := range in.Events {
				if e.Kind == kind {
					c.DrawGlyph(draw.GlyphStyle{Color: palette[i%len(palette)], Radius: vg.Points(3), Shape: eventGlyphs[kind]}, vg.Point{X: x(e.T), Y: y})
				}
			}
		}
	}
}

// drawLegend draws one entry per instance and one per event kind at the
// top of c.
func drawLegend(c draw.Canvas, insts []Instance) {
	l := plot.NewLegend()
	l.TextStyle = textStyle(sans, 10)
	l.Top, l.Left = true, true
	for i, in := range insts {
		sty := seriesStyle(i)
		line := &plotter.Line{LineStyle: sty}
		l.Add(in.Label, line)
	}
	for _, kind := range eventKinds {
		l.Add(kind, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3), Shape: eventGlyphs[kind]}})
	}
	l.Draw(c)
}

// drawTable writes the summary below the legend of n instances, each row
// wrapped to the width of c.
func drawTable(c draw.Canvas, rows []string, n int) {
	sty := textStyle(mono, 8)
	lineH := 1.35 * sty.Font.Size
	y := c.Max.Y - vg.Length(n+3)*1.3*vg.Points(10) - 2*lineH
	for _, row := range rows {
		for _, line := range wrap(sty, row, c.Max.X-c.Min.X) {
			// SVG folds runs of spaces into one: the columns keep their
			// places with no-break spaces
			c.FillText(sty, vg.Point{X: c.Min.X, Y: y}, strings.ReplaceAll(line, " ", "\u00a0"))
			y -= lineH
		}
	}
}

// wrap breaks s at spaces into lines no wider than width in sty, a word
// wider than that alone on its line, cut; the lines after the first are
// indented by two spaces, so that they read as one entry.
func wrap(sty text.Style, s string, width vg.Length) []string {
	if sty.Width(s) <= width {
		return []string{s}
	}
	var lines []string
	cur := ""
	for _, word := range strings.Split(s, " ") {
		next := cur + " " + word
		if cur == "" {
			next = word
		}
		if sty.Width(next) <= width || cur == "" {
			cur = next
			continue
		}
		lines = append(lines, cur)
		cur = "  " + word
	}
	lines = append(lines, cur)
	for i, l := range lines {
		for sty.Width(l) > width && len(l) > 1 {
			l = l[:len(l)-1]
		}
		lines[i] = l
	}
	return lines
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
	io.WriteString(w, svgBody(svg.String()))
	fmt.Fprint(w, "\n</body></html>\n")
	return nil
}

// svgBody is an SVG document without its XML prolog, to be inlined.
func svgBody(doc string) string {
	if i := strings.Index(doc, "<svg"); i >= 0 {
		return doc[i:]
	}
	return doc
}
