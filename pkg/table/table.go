package table

import (
	"io"
	"strings"
	"unicode/utf8"
)

// A Column of a table that Fit may shorten.
type Column struct {
	Name  string
	Cells []string
	Kinds []Kind // how each cell is painted
	// Drop is the column's turn to be left out of a table too wide, 1
	// first; 0: never left out.
	Drop int
}

// Kind is how a cell is painted.
type Kind int

const (
	Plain Kind = iota
	Fail       // a failure's cell
	Warn       // a warning's cell
)

// Add appends a cell of kind k.
func (c *Column) Add(cell string, k Kind) {
	c.Cells, c.Kinds = append(c.Cells, cell), append(c.Kinds, k)
}

// Shown says whether the column is shown: Fit has not left it out.
func (c *Column) Shown() bool { return c.Drop >= 0 }

// width is the column's: its widest cell or its name.
func (c *Column) width() int {
	w := utf8.RuneCountInString(c.Name)
	for _, s := range c.Cells {
		w = max(w, utf8.RuneCountInString(s))
	}
	return w
}

// columnGap is the spaces between two columns.
const columnGap = 2

// Width is the width of the columns shown, their gaps included.
func Width(cols []*Column) int {
	w := 0
	for _, c := range cols {
		if c.Shown() {
			w += c.width() + columnGap
		}
	}
	return w - columnGap
}

// Fit makes cols fit width characters (a terminal's, or a tmux pane's:
// a wrapped row pushes the rows below out of a pane, the exits among
// them). Its rules, in order, each applied only while the table is still
// too wide:
//  1. width 0 (not a terminal): the table is left whole.
//  2. GPU addresses lose the PCI domain "0000:" (18:00.0 for
//     0000:18:00.0), as nvidia-smi shows them.
//  3. Columns are left out in the order of their Drop, 1 first (the live
//     table: CPUS, PID, GPU MEM, RSS, CPU%, RESTARTS, WALL, GPU); those
//     with Drop 0 — the instance, its task or rank, STATE, GPU% and LAST
//     EXIT — stay.
//  4. The widest of what is left, LAST EXIT's "(who ended it)" among them,
//     is cut with "…" to fit, down to 8 characters a column.
//
// A left-out column has Drop -1.
func Fit(cols []*Column, width int) {
	if width <= 0 || Width(cols) <= width {
		return
	}
	if g := Find(cols, "GPU"); g != nil {
		for i, s := range g.Cells {
			g.Cells[i] = shortPCI(s)
		}
	}
	for turn := 1; Width(cols) > width; turn++ {
		c := nextToDrop(cols, turn)
		if c == nil {
			break
		}
		c.Drop = -1
	}
	for Width(cols) > width {
		c := widest(cols)
		if c == nil || c.width() <= 8 {
			return
		}
		w := c.width()
		cut := max(w-(Width(cols)-width), 8, utf8.RuneCountInString(c.Name))
		if cut >= w {
			return
		}
		for i, s := range c.Cells {
			c.Cells[i] = CutLine(s, cut)
		}
	}
}

// Find is the column shown named name; nil when there is none.
func Find(cols []*Column, name string) *Column {
	for _, c := range cols {
		if c.Name == name && c.Shown() {
			return c
		}
	}
	return nil
}

// nextToDrop is the column whose turn it is, or the next one's; nil when
// only those that stay are left.
func nextToDrop(cols []*Column, turn int) *Column {
	var next *Column
	for _, c := range cols {
		if c.Drop >= turn && (next == nil || c.Drop < next.Drop) {
			next = c
		}
	}
	return next
}

// widest is the widest column still shown.
func widest(cols []*Column) *Column {
	var w *Column
	for _, c := range cols {
		if c.Shown() && (w == nil || c.width() > w.width()) {
			w = c
		}
	}
	return w
}

// shortPCI drops the PCI domain 0000 from each address of a GPU cell.
func shortPCI(cell string) string {
	parts := strings.Split(cell, ",")
	for i, p := range parts {
		parts[i] = strings.TrimPrefix(p, "0000:")
	}
	return strings.Join(parts, ",")
}

// CutLine cuts s to width characters, its end "…"; width 0 or less: no
// limit.
func CutLine(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// Painter paints a failure's and a warning's cell (summary.Paint).
type Painter interface {
	Fail(s string) string
	Warn(s string) string
}

// Write writes the columns shown, padded to their widths and painted
// after the padding, so that escape codes never shift a column.
func Write(w io.Writer, cols []*Column, paint Painter) {
	var shown []*Column
	for _, c := range cols {
		if c.Shown() {
			shown = append(shown, c)
		}
	}
	if len(shown) == 0 {
		return
	}
	var b strings.Builder
	row := func(cell func(c *Column) (string, Kind)) {
		for i, c := range shown {
			s, k := cell(c)
			pad := c.width() - utf8.RuneCountInString(s)
			switch k {
			case Fail:
				s = paint.Fail(s)
			case Warn:
				s = paint.Warn(s)
			}
			b.WriteString(s)
			if i < len(shown)-1 {
				b.WriteString(strings.Repeat(" ", pad+columnGap))
			}
		}
		b.WriteByte('\n')
	}
	row(func(c *Column) (string, Kind) { return c.Name, Plain })
	for r := range shown[0].Cells {
		row(func(c *Column) (string, Kind) { return c.Cells[r], c.Kinds[r] })
	}
	io.WriteString(w, b.String())
}
