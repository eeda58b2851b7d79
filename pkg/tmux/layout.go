package tmux

import "fmt"

// MaxPanes: more panes than this do not fit a window readably;
// `gpulaunch top` and `logs -f` serve larger runs.
const MaxPanes = 16

// TopPaneHeight is the top pane's height in lines, for n instances in a
// window of window lines: its table (a header, the command, the column
// names, a row per instance, a line of warnings), then top's "has
// finished" and room for tmux's notice of the dead pane (remain-on-exit),
// which tmux writes after a line feed on the pane's last line, scrolling
// the pane by one (the header goes, seen in an 80x40 tmux; the rows and
// their exits stay); at most half the window.
func TopPaneHeight(n, window int) int {
	return max(5, min(n+8, window/2))
}

// Split is one split-window of Grid: the pane of instance Of is split in
// Dir ("-v": a pane below, "-h": a pane beside), the new pane, Size of
// it, showing instance Instance.
type Split struct {
	Of       int
	Dir      string
	Size     string
	Instance int
}

// Grid is how the area of instance 0's pane becomes n panes, in the order
// the splits are made. Its rules:
//  1. The panes are laid out row by row, cols = ⌈√n⌉ to a row, so that
//     the panes are numbered in instance order.
//  2. The rows are made first, each by splitting the row above's first
//     pane; then each row's panes, each by splitting the row's last.
//  3. Each split gives the new pane its share of what is left (a
//     percentage), so that rows and columns come out even.
func Grid(n int) []Split {
	cols := 1
	for cols*cols < n {
		cols++
	}
	rows := (n + cols - 1) / cols
	var splits []Split
	for r := 1; r < rows; r++ {
		splits = append(splits, Split{Of: (r - 1) * cols, Dir: "-v", Size: fmt.Sprintf("%d%%", 100*(rows-r)/(rows-r+1)), Instance: r * cols})
	}
	for r := range rows {
		inRow := min(cols, n-r*cols)
		for c := 1; c < inRow; c++ {
			i := r*cols + c
			splits = append(splits, Split{Of: i - 1, Dir: "-h", Size: fmt.Sprintf("%d%%", 100*(inRow-c)/(inRow-c+1)), Instance: i})
		}
	}
	return splits
}
