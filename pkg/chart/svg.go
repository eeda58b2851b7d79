package chart

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// cm is a centimetre in pt, the unit of the canvas.
const cm = 72 / 2.54

// rgb is a colour.
type rgb struct{ R, G, B uint8 }

func (c rgb) String() string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

var (
	black     = rgb{0, 0, 0}
	white     = rgb{255, 255, 255}
	gridGrey  = rgb{225, 225, 225}
	threshRed = rgb{214, 39, 40}
)

// stroke is how a line is drawn: its colour, its width in pt, and its
// dashes (on, off, … in pt; none for a solid line).
type stroke struct {
	Colour rgb
	Width  float64
	Dashes []float64
}

func (s stroke) style() string {
	st := fmt.Sprintf("fill:none;stroke:%s;stroke-width:%s", s.Colour, num(s.Width))
	if len(s.Dashes) > 0 {
		var d []string
		for _, x := range s.Dashes {
			d = append(d, num(x))
		}
		st += ";stroke-dasharray:" + strings.Join(d, ",")
	}
	return st
}

// point is a place on the canvas, in pt from its top left corner.
type point struct{ X, Y float64 }

// canvas is an SVG document being written: its size in pt, and its
// elements so far. Its user unit is the pt, so that sizes read as a
// typesetter's.
type canvas struct {
	W, H  float64
	b     strings.Builder
	clips int // clip paths defined so far, which name the next one
}

func newCanvas(w, h float64) *canvas {
	c := &canvas{W: w, H: h}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%spt" height="%spt" viewBox="0 0 %s %s">`+"\n", num(w), num(h), num(w), num(h))
	// white, not transparent: a viewer in dark mode would draw black
	// text on black
	c.fill(box{0, 0, w, h}, white, 1)
	return c
}

// fill paints b in col, of the opacity given (1: opaque).
func (c *canvas) fill(b box, col rgb, opacity float64) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" style="fill:%s;fill-opacity:%s;stroke:none"/>`+"\n",
		num(b.X), num(b.Y), num(b.W), num(b.H), col, num(opacity))
}

// num is a coordinate as the SVG writes it: to 1/100 pt, which no
// screen or printer resolves, and the same each time.
func num(x float64) string {
	s := fmt.Sprintf("%.2f", x)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// path draws a polyline through pts; close joins its ends.
func (c *canvas) path(s stroke, close bool, pts ...point) {
	if len(pts) < 2 {
		return
	}
	var d strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%s,%s ", cmd, num(p.X), num(p.Y))
	}
	if close {
		d.WriteString("Z")
	}
	fmt.Fprintf(&c.b, `<path d="%s" style="%s"/>`+"\n", strings.TrimSpace(d.String()), s.style())
}

// line draws a straight line from a to b.
func (c *canvas) line(s stroke, a, b point) { c.path(s, false, a, b) }

// dot draws a filled circle of radius r at p.
func (c *canvas) dot(p point, r float64, fill rgb) {
	fmt.Fprintf(&c.b, `<circle cx="%s" cy="%s" r="%s" style="fill:%s;stroke:none"/>`+"\n", num(p.X), num(p.Y), num(r), fill)
}

// Text anchors: where x is on a text.
const (
	atStart  = "start"
	atMiddle = "middle"
	atEnd    = "end"
)

// text writes s in f with its baseline at y, anchored at x; a text whose
// middle is to be at y is written with y + 0.35 em (the x-height's middle
// in a sans font, where no baseline attribute works in every viewer).
func (c *canvas) text(f face, x, y float64, anchor, s string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="%s" style="font-family:%s;font-size:%spx;fill:#000000">%s</text>`+"\n",
		num(x), num(y), anchor, f.family(), num(f.Size), escape(s))
}

// upText writes s turned a quarter left, centred on x, y: a y axis's
// label.
func (c *canvas) upText(f face, x, y float64, s string) {
	fmt.Fprintf(&c.b, `<g transform="translate(%s,%s) rotate(-90)">`, num(x), num(y))
	c.text(f, 0, 0, atMiddle, s)
	c.b.WriteString("</g>\n")
}

func escape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// clip starts a group drawn only inside the rectangle at p, w by h; end
// it with endGroup.
func (c *canvas) clip(p point, w, h float64) {
	c.clips++
	fmt.Fprintf(&c.b, `<clipPath id="clip%d"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath>`+"\n", c.clips, num(p.X), num(p.Y), num(w), num(h))
	fmt.Fprintf(&c.b, `<g clip-path="url(#clip%d)">`+"\n", c.clips)
}

func (c *canvas) endGroup() { c.b.WriteString("</g>\n") }

// Glyphs: the marks of the events strip, each within radius r of its
// place, stroked (not filled) so that two at one place both show.
const (
	triangleGlyph = "triangle"
	crossGlyph    = "cross"
	ringGlyph     = "ring"
)

// glyph draws the glyph named kind in col at p, r in radius.
func (c *canvas) glyph(kind string, p point, r float64, col rgb) {
	s := stroke{Colour: col, Width: 1}
	switch kind {
	case triangleGlyph:
		h := r * math.Sqrt(3) / 2
		c.path(s, true, point{p.X, p.Y - r}, point{p.X + h, p.Y + r/2}, point{p.X - h, p.Y + r/2})
	case crossGlyph:
		d := r / math.Sqrt2
		c.line(s, point{p.X - d, p.Y - d}, point{p.X + d, p.Y + d})
		c.line(s, point{p.X - d, p.Y + d}, point{p.X + d, p.Y - d})
	case ringGlyph:
		// a polygon of 16 sides: at 3 pt, a circle to the eye, and a
		// path whose points a reader of the SVG can take the box of
		var pts []point
		for k := range 16 {
			a := 2 * math.Pi * float64(k) / 16
			pts = append(pts, point{p.X + r*math.Cos(a), p.Y + r*math.Sin(a)})
		}
		c.path(s, true, pts...)
	}
}

// writeTo ends the document and writes it to w.
func (c *canvas) writeTo(w io.Writer) error {
	_, err := io.WriteString(w, c.b.String()+"</svg>\n")
	return err
}
