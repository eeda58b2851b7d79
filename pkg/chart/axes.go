package chart

import (
	"math"
	"strconv"
)

// tick is a labelled place on an axis.
type tick struct {
	Value float64
	Label string
}

// niceTicks are the ticks of an axis from lo to hi, by these rules:
//  1. The step is 1, 2 or 5 × 10^k: the one nearest to a fifth of the
//     range, "nearest" by Heckbert's thresholds ("Nice numbers for graph
//     labels", Graphics Gems, 1990): a fifth's leading figure below 1.5
//     rounds to 1, below 3 to 2, below 7 to 5, else to 10. An axis has 3
//     to 8 ticks, which its labels read at a glance.
//  2. The ticks are the multiples of the step from lo to hi, a millionth
//     of a step beyond either end counted in (floating point puts 0.3 at
//     0.30000000000000004).
//  3. A label has as many decimals as the step has, none for a whole
//     step, so that the labels of one axis line up.
//  4. An empty range (hi ≤ lo) has one tick, at lo.
func niceTicks(lo, hi float64) []tick {
	if !(hi > lo) {
		return []tick{{lo, formatTick(lo, 0)}}
	}
	step := niceStep((hi - lo) / 5)
	dec := stepDecimals(step)
	var out []tick
	for k := math.Ceil(lo/step - 1e-6); k*step <= hi+1e-6*step; k++ {
		v := k * step
		out = append(out, tick{v, formatTick(v, dec)})
	}
	return out
}

// niceStep is rule 1: raw rounded to 1, 2 or 5 × 10^k.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch lead := raw / mag; {
	case lead < 1.5:
		return mag
	case lead < 3:
		return 2 * mag
	case lead < 7:
		return 5 * mag
	}
	return 10 * mag
}

// stepDecimals is rule 3: the decimals a step of 1, 2 or 5 × 10^k needs.
func stepDecimals(step float64) int {
	return max(0, -int(math.Floor(math.Log10(step)+1e-9)))
}

// formatTick writes v with dec decimals; a v that rounds to zero is
// "0", never "-0".
func formatTick(v float64, dec int) string {
	if math.Abs(v) < 0.5*math.Pow(10, -float64(dec)) {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// xy is a data point.
type xy struct{ X, Y float64 }

// series is one line of a chart: its legend entry ("" for none), its
// stroke, its runs of points (a line is broken between them, where a
// figure was not measured), and the radius of a dot at each point (0 for
// none).
type series struct {
	Name     string
	Stroke   stroke
	Segments [][]xy
	Dot      float64
}

// errorBar is a point's spread: from Low to High at X.
type errorBar struct{ X, Low, High float64 }

// Where a chart's legend goes: where its lines are not.
const (
	noLegend = iota
	legendTopLeft
	legendBottomLeft
)

// xyChart is one chart: its title and axis labels, its axes' ranges, its
// x ticks (nil: niceTicks), the room in pt between the data area's sides
// and the x range's ends (so that a dot at an end stays whole), what is
// drawn on it, and where its legend goes.
type xyChart struct {
	Title, XLabel, YLabel  string
	XMin, XMax, YMin, YMax float64
	XTicks                 []tick
	XPad                   float64
	Series                 []series
	Bars                   []errorBar
	BarColour              rgb
	Note                   []string // lines centred on the data area
	Legend                 int
}

func (ch xyChart) xTicks() []tick {
	if ch.XTicks != nil {
		return ch.XTicks
	}
	return niceTicks(ch.XMin, ch.XMax)
}

// frame is where a chart's data is drawn: its data area on the canvas
// (pt) and the ranges it maps.
type frame struct {
	Left, Top, W, H        float64
	XMin, XMax, YMin, YMax float64
	XPad                   float64
}

// at is where data point (x, y) is on the canvas; an axis whose range is
// empty puts every point in its middle.
func (f frame) at(x, y float64) point {
	p := point{f.Left + f.W/2, f.Top + f.H/2}
	if f.XMax > f.XMin {
		p.X = f.Left + f.XPad + (x-f.XMin)/(f.XMax-f.XMin)*(f.W-2*f.XPad)
	}
	if f.YMax > f.YMin {
		p.Y = f.Top + f.H - (y-f.YMin)/(f.YMax-f.YMin)*f.H
	}
	return p
}

// box is a rectangle on the canvas, in pt.
type box struct{ X, Y, W, H float64 }

// A chart in its box, from the top: its title (13 pt), 9 pt of room, the
// data area, then 36 pt for the x ticks' labels and the x axis's label;
// 8 pt of room on the right for the last x tick's label.
const (
	chartTop    = 22.0
	chartBottom = 36.0
	chartRight  = 8.0
)

// yAxisRoom is the room left of the data area that charts' y axes need:
// the label turned on its side, the widest tick label, the ticks. Charts
// stacked in a column are given the widest one's, so that their data
// areas line up.
func yAxisRoom(charts ...xyChart) float64 {
	widest := 0.0
	for _, ch := range charts {
		for _, t := range niceTicks(ch.YMin, ch.YMax) {
			widest = math.Max(widest, tickFace.width(t.Label))
		}
	}
	return 4 + labelFace.Size + 6 + widest + 3 + 4
}

// frameIn is ch's frame in box b, its y axis's room left.
func frameIn(ch xyChart, b box, left float64) frame {
	return frame{Left: b.X + left, Top: b.Y + chartTop, W: b.W - left - chartRight, H: b.H - chartTop - chartBottom,
		XMin: ch.XMin, XMax: ch.XMax, YMin: ch.YMin, YMax: ch.YMax, XPad: ch.XPad}
}

// drawChart draws ch in box b, its y axis's room left, and returns its
// frame.
func drawChart(c *canvas, ch xyChart, b box, left float64) frame {
	f := frameIn(ch, b, left)
	drawAxes(c, ch, f, b)
	c.clip(point{f.Left - 5, f.Top - 5}, f.W+10, f.H+10)
	for _, s := range ch.Series {
		for _, seg := range s.Segments {
			var pts []point
			for _, d := range seg {
				pts = append(pts, f.at(d.X, d.Y))
			}
			c.path(s.Stroke, false, pts...)
			for _, p := range pts {
				if s.Dot > 0 {
					c.dot(p, s.Dot, s.Stroke.Colour)
				}
			}
		}
	}
	bar := stroke{Colour: ch.BarColour, Width: 1}
	for _, e := range ch.Bars {
		lo, hi := f.at(e.X, e.Low), f.at(e.X, e.High)
		c.line(bar, lo, hi)
		c.line(bar, point{lo.X - 3, lo.Y}, point{lo.X + 3, lo.Y})
		c.line(bar, point{hi.X - 3, hi.Y}, point{hi.X + 3, hi.Y})
	}
	c.endGroup()
	for i, line := range ch.Note {
		y := f.Top + f.H/2 + (float64(i)-float64(len(ch.Note)-1)/2)*1.3*labelFace.Size
		c.text(labelFace, f.Left+f.W/2, y+0.35*labelFace.Size, atMiddle, line)
	}
	drawChartLegend(c, ch, f)
	return f
}

// drawAxes draws ch's title, grid, axes, ticks and labels around frame f
// in box b.
func drawAxes(c *canvas, ch xyChart, f frame, b box) {
	grid, axis := stroke{Colour: gridGrey, Width: 0.5}, stroke{Colour: black, Width: 0.5}
	bottom := f.Top + f.H
	for _, t := range ch.xTicks() {
		x := f.at(t.Value, 0).X
		c.line(grid, point{x, f.Top}, point{x, bottom})
		c.line(axis, point{x, bottom}, point{x, bottom + 4})
		c.text(tickFace, x, bottom+4+tickFace.Size+1, atMiddle, t.Label)
	}
	for _, t := range niceTicks(ch.YMin, ch.YMax) {
		y := f.at(0, t.Value).Y
		c.line(grid, point{f.Left, y}, point{f.Left + f.W, y})
		c.line(axis, point{f.Left - 4, y}, point{f.Left, y})
		c.text(tickFace, f.Left-7, y+0.35*tickFace.Size, atEnd, t.Label)
	}
	c.line(axis, point{f.Left, f.Top}, point{f.Left, bottom})
	c.line(axis, point{f.Left, bottom}, point{f.Left + f.W, bottom})
	c.text(panelFace, f.Left+f.W/2, b.Y+panelFace.Size, atMiddle, ch.Title)
	c.text(labelFace, f.Left+f.W/2, bottom+30, atMiddle, ch.XLabel)
	c.upText(labelFace, b.X+4+labelFace.Size, f.Top+f.H/2, ch.YLabel)
}

// A legend's entry: 13 pt a line, its sample 20 pt long, its name 5 pt
// after it.
const (
	legendLine   = 1.3 * 10
	legendSample = 20.0
)

// drawChartLegend draws the entries of ch's named series in the corner
// of f that ch.Legend names, on white so that grid lines do not cross
// the names.
func drawChartLegend(c *canvas, ch xyChart, f frame) {
	var named []series
	widest := 0.0
	for _, s := range ch.Series {
		if s.Name != "" {
			named = append(named, s)
			widest = math.Max(widest, legendFace.width(s.Name))
		}
	}
	if ch.Legend == noLegend || len(named) == 0 {
		return
	}
	x, y := f.Left+8, f.Top+6
	h := legendLine * float64(len(named))
	if ch.Legend == legendBottomLeft {
		y = f.Top + f.H - 6 - h
	}
	c.fill(box{x - 3, y - 2, legendSample + 5 + widest + 6, h + 4}, white, 0.85)
	for i, s := range named {
		mid := y + legendLine*(float64(i)+0.5)
		c.line(s.Stroke, point{x, mid}, point{x + legendSample, mid})
		if s.Dot > 0 {
			c.dot(point{x + legendSample/2, mid}, s.Dot, s.Stroke.Colour)
		}
		c.text(legendFace, x+legendSample+5, mid+0.35*legendFace.Size, atStart, s.Name)
	}
}
