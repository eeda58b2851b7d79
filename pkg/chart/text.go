package chart

import (
	"strings"
	"unicode/utf8"
)

// face is a font at a size (in pt): what a text is measured and drawn
// in. The picture names font families, not font files: the viewer draws
// with its own Liberation Sans, Arial or Helvetica, which share their
// advance widths (Liberation was made metric-compatible with Arial, and
// Arial with Helvetica), and their mono fonts are 0.6 em a character.
type face struct {
	Mono bool
	Size float64
}

// The faces of the pictures: titles, axis labels, tick labels, legends,
// notes, the events strip, and the summary table (mono, so that its
// columns stay aligned).
var (
	titleFace  = face{Size: 14}
	panelFace  = face{Size: 13}
	labelFace  = face{Size: 11}
	tickFace   = face{Size: 9}
	legendFace = face{Size: 10}
	eventFace  = face{Size: 8}
	tableFace  = face{Mono: true, Size: 8}
)

// family is the CSS font-family list a face is drawn in.
func (f face) family() string {
	if f.Mono {
		return "Liberation Mono,DejaVu Sans Mono,Courier New,monospace"
	}
	return "Liberation Sans,Arial,Helvetica,sans-serif"
}

// sansWidths are the advance widths of Liberation Sans's printable ASCII
// characters, ' ' to '~', in thousandths of an em (the AFM widths of
// Helvetica, which Arial and Liberation Sans match). Checked against the
// font itself (Liberation Sans 2, as Gonum's plot library parsed it when
// it drew these pictures): every one within 0.24/1000 em.
var sansWidths = [95]uint16{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // space to /
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, // 0 to ?
	1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, // @ to O
	667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, // P to _
	333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, // ` to o
	556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // p to ~
}

// sansWidth is one character's advance in thousandths of an em: the
// table's for ASCII, a space's for a no-break space, the font's for '×',
// and a digit's (the width of most letters) for any other.
func sansWidth(r rune) float64 {
	switch {
	case r >= ' ' && r <= '~':
		return float64(sansWidths[r-' '])
	case r == '\u00a0':
		return 278
	case r == '×':
		return 584
	}
	return 556
}

// width is how wide s is drawn in f, in pt.
func (f face) width(s string) float64 {
	if f.Mono {
		return 0.6 * f.Size * float64(utf8.RuneCountInString(s))
	}
	w := 0.0
	for _, r := range s {
		w += sansWidth(r)
	}
	return w * f.Size / 1000
}

// wrap breaks s at spaces into lines no wider than width in f, a word
// wider than that alone on its line, cut; the lines after the first are
// indented by two spaces, so that they read as one entry.
func wrap(f face, s string, width float64) []string {
	if f.width(s) <= width {
		return []string{s}
	}
	var lines []string
	cur := ""
	for _, word := range strings.Split(s, " ") {
		next := cur + " " + word
		if cur == "" {
			next = word
		}
		if f.width(next) <= width || cur == "" {
			cur = next
			continue
		}
		lines = append(lines, cur)
		cur = "  " + word
	}
	lines = append(lines, cur)
	for i, l := range lines {
		for f.width(l) > width && len(l) > 1 {
			_, n := utf8.DecodeLastRuneInString(l)
			l = l[:len(l)-n]
		}
		lines[i] = l
	}
	return lines
}
