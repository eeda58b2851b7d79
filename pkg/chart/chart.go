package chart

import (
	"fmt"
	"math"
)

// palette tells up to ten series apart (Tableau's ten, which stay
// distinct for the colour-blind more than most); beyond ten a series
// repeats a colour with a dash.
var palette = []rgb{
	{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189},
	{140, 86, 75}, {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
}

// seriesStroke is series i's line.
func seriesStroke(i int) stroke {
	s := stroke{Colour: palette[i%len(palette)], Width: 1.5}
	if i >= len(palette) {
		s.Dashes = []float64{5, 3}
	}
	return s
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

// maxOf is the largest finite value of xs, and 0 for none.
func maxOf(xs ...[]float64) float64 {
	m := 0.0
	for _, s := range xs {
		for _, x := range s {
			if !math.IsInf(x, 0) && !math.IsNaN(x) {
				m = math.Max(m, x)
			}
		}
	}
	return m
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// titleLines writes title centred at the top of c, wrapped to its width
// less 2 cm, and returns where what is under it may start.
func titleLines(c *canvas, title string) float64 {
	y := 22.0
	for i, line := range wrap(titleFace, title, c.W-2*cm) {
		if i > 0 {
			y += 1.2 * titleFace.Size
		}
		c.text(titleFace, c.W/2, y, atMiddle, line)
	}
	return y + 18
}
