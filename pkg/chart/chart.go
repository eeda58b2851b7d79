// Package chart draws gpulaunch's pictures: a run's GPU use over time
// (`gpulaunch report FILE --svg|--html`) and a scaling study
// (`gpulaunch scale --svg`).
//
// It draws with gonum.org/v1/plot, Gonum's plotting library, rather than
// hand-written SVG: axes, ticks, legends and text measurement are the
// hard part of a readable chart and it has them, in pure Go (no cgo, as
// gpulaunch's CGO_ENABLED=0 build needs), writing SVG and PNG. go-echarts
// was the other candidate: its charts are HTML pages that load ECharts'
// JavaScript from a CDN, which compute nodes cannot reach and a report
// should not need.
//
// What it costs every gpulaunch process, pictures drawn or not (Go runs
// every linked package's init): the plot package parses its 12 embedded
// Liberation fonts at init, and it links its PDF, EPS and PNG back ends.
// Measured against the binary before pkg/chart (70b7289, 60 interleaved
// runs of `gpulaunch -n 1 -G 0 -- true` on the 2-CPU VM): 42.7 ms against
// 37.2 ms per run, 14 MiB against 10 MiB RSS, 21 MB against 13 MB on disk.
// A rank wrapper starts once per rank and an app's own start (Python and
// its imports) takes seconds, so the readable pictures are worth it.
//
// Its inputs are its own types (Run, Study), filled by the callers from
// the report and the study, so that the drawing rules do not depend on
// their JSON.
package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette tells up to ten series apart (Tableau's ten, which stay
// distinct for the colour-blind more than most); beyond ten a series
// repeats a colour with a dash.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

// seriesStyle is series i's line.
func seriesStyle(i int) draw.LineStyle {
	sty := draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.5)}
	if i >= len(palette) {
		sty.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return sty
}

// Fonts: sans for the chart, mono for tables.
var (
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}
	mono = font.Font{Typeface: "Liberation", Variant: "Mono"}
)

// newPlot is a plot with the house fonts and the given labels.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 11)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	p.Add(gridLines())
	return p
}

// textStyle is a style for free text on a canvas.
func textStyle(f font.Font, size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(f, size), Handler: plot.DefaultTextHandler}
}

// timeUnit picks the unit the time axis reads best in: seconds up to 10
// minutes, minutes up to 10 hours, then hours.
func timeUnit(span float64) (string, float64) {
	switch {
	case span <= 600:
		return "s", 1
	case span <= 36000:
		return "min", 60
	}
	return "h", 3600
}

// byteUnit picks the unit for byte figures up to max.
func byteUnit(max float64) (string, float64) {
	switch {
	case max >= 1<<30:
		return "GiB", 1 << 30
	case max >= 1<<20:
		return "MiB", 1 << 20
	}
	return "KiB", 1 << 10
}

// maxOf is the largest value of xs, and 0 for none.
func maxOf(xs ...[]float64) float64 {
	m := 0.0
	for _, s := range xs {
		for _, x := range s {
			m = math.Max(m, x)
		}
	}
	return m
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// gridLines are the plot's light grid.
func gridLines() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	return g
}
