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
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Run is what a picture of a run shows.
type Run struct {
	Title     string // the command and where and when it ran
	Instances []Instance
	// Summary is the summary table, one line per row, already aligned
	// (it is drawn in a monospace font).
	Summary []string
}

// Instance is one instance's timeline.
type Instance struct {
	Label string // "instance 3"
	// T, GPUUtil and GPUMem are its samples: seconds since the start,
	// percent, bytes; a GPU figure below 0 was not measured.
	T, GPUUtil, GPUMem []float64
	Events             []Event
}

// Event is a start, an exit or a warning, at T seconds.
type Event struct {
	T    float64
	Kind string // "start", "exit", "warning"
}

// eventGlyphs mark the events on the utilisation panel; eventKinds is
// the order they are drawn and listed in (a map's would change the SVG
// from one drawing to the next).
var (
	eventGlyphs = map[string]draw.GlyphDrawer{"start": draw.TriangleGlyph{}, "exit": draw.CrossGlyph{}, "warning": draw.RingGlyph{}}
	eventKinds  = []string{"start", "exit", "warning"}
)

// RunSVG draws r: each instance's GPU utilisation (top) and GPU memory
// (bottom) over time, one colour per instance, its starts, exits and
// warnings marked above the utilisation; the legend and the summary
// table on the right.
func RunSVG(r Run, w io.Writer) error {
	width, height := dims(len(r.Instances))
	c := vgsvg.New(width, height)
	dc := draw.New(c)
	util, mem, err := runPlots(r)
	if err != nil {
		return err
	}
	left := draw.Crop(dc, 0, -0.36*width, 0, -vg.Centimeter)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter, PadTop: vg.Points(4), PadLeft: vg.Points(4)}
	canvases := plot.Align([][]*plot.Plot{{util}, {mem}}, tiles, left)
	util.Draw(canvases[0][0])
	mem.Draw(canvases[1][0])
	title := textStyle(sans, 14)
	title.XAlign = draw.XCenter
	dc.FillText(title, vg.Point{X: width / 2, Y: height - vg.Points(16)}, r.Title)
	right := draw.Crop(dc, 0.66*width, -vg.Centimeter/2, vg.Centimeter, -1.6*vg.Centimeter)
	drawLegend(right, r.Instances)
	drawTable(right, r.Summary, len(r.Instances))
	_, err = c.WriteTo(w)
	return err
}

// runPlots makes the two panels; a line is broken where its GPU was not
// measured.
func runPlots(r Run) (util, mem *plot.Plot, err error) {
	var all []float64
	for _, in := range r.Instances {
		all = append(all, in.T...)
		for _, e := range in.Events {
			all = append(all, e.T)
		}
	}
	end := maxOf(all)
	unit, div := timeUnit(end)
	var mems [][]float64
	for _, in := range r.Instances {
		mems = append(mems, in.GPUMem)
	}
	topMem := maxOf(mems...)
	mUnit, mDiv := byteUnit(topMem)
	util = newPlot("GPU utilisation", "time since the start ("+unit+")", "GPU utilisation (%)")
	util.Y.Min, util.Y.Max = 0, 110
	mem = newPlot("GPU memory of each instance's processes", "time since the start ("+unit+")", "GPU memory ("+mUnit+")")
	mem.Y.Min, mem.Y.Max = 0, math.Max(1.12*topMem/mDiv, 1) // room above the highest line
	// one time axis for both panels, from the start
	for _, p := range []*plot.Plot{util, mem} {
		p.X.Min, p.X.Max = 0, end/div
	}
	for i, in := range r.Instances {
		for _, seg := range measured(in.T, in.GPUUtil, div, 1) {
			if err := addLine(util, seg, i); err != nil {
				return nil, nil, err
			}
		}
		for _, seg := range measured(in.T, in.GPUMem, div, mDiv) {
			if err := addLine(mem, seg, i); err != nil {
				return nil, nil, err
			}
		}
		if err := addEvents(util, in.Events, div, i); err != nil {
			return nil, nil, err
		}
	}
	return util, mem, nil
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

// addEvents marks instance i's events along the top of the utilisation
// panel, each kind with its glyph, staggered by instance so that eight
// instances' exits at one moment stay apart.
func addEvents(p *plot.Plot, events []Event, div float64, i int) error {
	for _, kind := range eventKinds {
		var xys plotter.XYs
		for _, e := range events {
			if e.Kind == kind {
				xys = append(xys, plotter.XY{X: e.T / div, Y: 102 + float64(i%8)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: palette[i%len(palette)], Radius: vg.Points(3), Shape: eventGlyphs[kind]}
		p.Add(s)
	}
	return nil
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

// drawTable writes the summary below the legend of n instances.
func drawTable(c draw.Canvas, rows []string, n int) {
	sty := textStyle(mono, 8)
	lineH := 1.35 * sty.Font.Size
	y := c.Max.Y - vg.Length(n+3)*1.3*vg.Points(10) - 2*lineH
	for _, row := range rows {
		// SVG folds runs of spaces into one: the columns keep their
		// places with no-break spaces
		c.FillText(sty, vg.Point{X: c.Min.X, Y: y}, strings.ReplaceAll(row, " ", "\u00a0"))
		y -= lineH
	}
}

// RunHTML writes r as one self-contained page for a browser: the picture
// inline, and below it the summary again as text, to copy from.
func RunHTML(r Run, w io.Writer) error {
	var svg strings.Builder
	if err := RunSVG(r, &svg); err != nil {
		return err
	}
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n", html.EscapeString(r.Title))
	fmt.Fprint(w, "<style>body{font-family:sans-serif;margin:1em}pre{font-size:12px}</style></head><body>\n")
	fmt.Fprintf(w, "<h1>%s</h1>\n", html.EscapeString(r.Title))
	io.WriteString(w, svgBody(svg.String()))
	fmt.Fprintf(w, "\n<pre>%s</pre>\n</body></html>\n", html.EscapeString(strings.Join(r.Summary, "\n")))
	return nil
}

// svgBody is an SVG document without its XML prolog, to be inlined.
func svgBody(doc string) string {
	if i := strings.Index(doc, "<svg"); i >= 0 {
		return doc[i:]
	}
	return doc
}
