package chart

import (
	"fmt"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
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
}

// StudyPoint is one size: nil where the point gave no figure.
type StudyPoint struct {
	GPUs                       int
	Speedup, Ideal, Efficiency *float64
	// SpeedupLow and SpeedupHigh are the runs' spread.
	SpeedupLow, SpeedupHigh *float64
	Util                    *float64 // mean GPU utilisation, percent
	Status                  string
}

// StudySVG draws a study: the speedup against the ideal, the parallel
// efficiency against the threshold, and the mean GPU utilisation, each
// against the GPU count, the verdict below.
func StudySVG(s Study, w io.Writer) error {
	width, height := 24*vg.Centimeter, 30*vg.Centimeter
	c := vgsvg.New(width, height)
	dc := draw.New(c)
	plots, err := studyPlots(s)
	if err != nil {
		return err
	}
	body := draw.Crop(dc, 0, 0, 2.2*vg.Centimeter, -1.2*vg.Centimeter)
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadY: 0.8 * vg.Centimeter, PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{{plots[0]}, {plots[1]}, {plots[2]}}, tiles, body)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	title := textStyle(sans, 14)
	title.XAlign = draw.XCenter
	dc.FillText(title, vg.Point{X: width / 2, Y: height - vg.Points(16)}, s.Title)
	foot := textStyle(sans, 10)
	y := 1.4 * vg.Centimeter
	for _, line := range studyFoot(s) {
		dc.FillText(foot, vg.Point{X: vg.Centimeter, Y: y}, line)
		y -= 1.4 * foot.Font.Size
	}
	_, err = c.WriteTo(w)
	return err
}

// studyFoot is the verdict, and the points without a figure.
func studyFoot(s Study) []string {
	lines := []string{"verdict: " + s.Verdict}
	var missing []string
	for _, p := range s.Points {
		if p.Speedup == nil {
			missing = append(missing, fmt.Sprintf("%d GPU(s): %s", p.GPUs, p.Status))
		}
	}
	if len(missing) > 0 {
		lines = append(lines, "no figure: "+strings.Join(missing, ", "))
	}
	return lines
}

// studyPlots makes the three panels, on one x axis of GPU counts.
func studyPlots(s Study) ([]*plot.Plot, error) {
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
	speed := newPlot(title, x, "speedup over the smallest size (×)")
	eff := newPlot("Parallel efficiency", x, "efficiency (%)")
	util := newPlot("GPU utilisation", x, "mean GPU utilisation (%)")
	var ticks []plot.Tick
	var measured, ideal, effs, utils plotter.XYs
	var spread plotter.XYs
	var low, high []float64
	for _, p := range s.Points {
		g := float64(p.GPUs)
		ticks = append(ticks, plot.Tick{Value: g, Label: fmt.Sprint(p.GPUs)})
		if p.Speedup != nil {
			measured = append(measured, plotter.XY{X: g, Y: *p.Speedup})
			ideal = append(ideal, plotter.XY{X: g, Y: *p.Ideal})
			effs = append(effs, plotter.XY{X: g, Y: 100 * *p.Efficiency})
		}
		if p.SpeedupLow != nil && p.SpeedupHigh != nil && p.Speedup != nil {
			spread = append(spread, plotter.XY{X: g, Y: *p.Speedup})
			low, high = append(low, *p.Speedup-*p.SpeedupLow), append(high, *p.SpeedupHigh-*p.Speedup)
		}
		if p.Util != nil {
			utils = append(utils, plotter.XY{X: g, Y: *p.Util})
		}
	}
	for _, p := range []*plot.Plot{speed, eff, util} {
		// one x axis for the three panels: every size, a failed one too
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		if len(ticks) > 0 {
			p.X.Min, p.X.Max = ticks[0].Value, ticks[len(ticks)-1].Value
		}
		p.X.Padding = vg.Points(8)
	}
	// legends where the lines are not: the speedup starts low on the left,
	// efficiency and utilisation start high
	speed.Legend.Top, speed.Legend.Left = true, true
	eff.Legend.Left, util.Legend.Left = true, true
	eff.Y.Min, eff.Y.Max, util.Y.Min, util.Y.Max, speed.Y.Min = 0, 110, 0, 105, 0
	if err := addSeries(speed, "measured (median of the runs)", measured, 0, true); err != nil {
		return nil, err
	}
	if err := addSeries(speed, "ideal", ideal, 7, false); err != nil {
		return nil, err
	}
	if len(spread) > 0 {
		bars, err := plotter.NewYErrorBars(errorPoints{spread, low, high})
		if err != nil {
			return nil, err
		}
		bars.LineStyle.Color = palette[0]
		speed.Add(bars)
	}
	if err := addSeries(eff, "efficiency", effs, 0, true); err != nil {
		return nil, err
	}
	if err := addThreshold(eff, s); err != nil {
		return nil, err
	}
	if err := addSeries(util, "mean GPU utilisation", utils, 2, true); err != nil {
		return nil, err
	}
	if len(utils) == 0 {
		if err := addNote(util, utilNote(s), ticks); err != nil {
			return nil, err
		}
	}
	return []*plot.Plot{speed, eff, util}, nil
}

// utilNote is what an empty utilisation panel says instead of nothing.
func utilNote(s Study) string {
	if s.GPUNote != "" {
		return "GPU use not measured: " + s.GPUNote
	}
	return "no size measured any GPU use"
}

// addNote writes note in the middle of p's data area, whose x axis has
// ticks, wrapped to about half the panel's width.
func addNote(p *plot.Plot, note string, ticks []plot.Tick) error {
	x := 0.0
	if len(ticks) > 0 {
		x = (ticks[0].Value + ticks[len(ticks)-1].Value) / 2
	}
	sty := textStyle(sans, 11)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: 50}}, Labels: []string{strings.Join(wrap(sty, note, 12*vg.Centimeter), "\n")}})
	if err != nil {
		return err
	}
	l.TextStyle = []text.Style{sty}
	p.Add(l)
	return nil
}

// addSeries draws xys on p as a line, with points when marked, in
// palette colour k; the ideal is dashed.
func addSeries(p *plot.Plot, name string, xys plotter.XYs, k int, marked bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.LineStyle = seriesStyle(k)
	if !marked {
		l.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	pts, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	pts.GlyphStyle = draw.GlyphStyle{Color: palette[k], Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// addThreshold draws the efficiency below which a size is not worth it.
func addThreshold(p *plot.Plot, s Study) error {
	if len(s.Points) == 0 {
		return nil
	}
	first, last := float64(s.Points[0].GPUs), float64(s.Points[len(s.Points)-1].GPUs)
	l, err := plotter.NewLine(plotter.XYs{{X: first, Y: 100 * s.Threshold}, {X: last, Y: 100 * s.Threshold}})
	if err != nil {
		return err
	}
	l.LineStyle = draw.LineStyle{Color: color.RGBA{214, 39, 40, 255}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("threshold %s", pct(s.Threshold)), l)
	return nil
}

// errorPoints are points with their spread below and above.
type errorPoints struct {
	plotter.XYs
	low, high []float64
}

func (e errorPoints) YError(i int) (float64, float64) { return e.low[i], e.high[i] }
