package tmux

import (
	"reflect"
	"testing"
)

// The top pane has room for its whole last frame after the run: the
// header, the command, the column names, every row, a warning, the
// "has finished" line and tmux's notice of the dead pane; never more
// than half the window.
func TestTopPaneHeight(t *testing.T) {
	for _, tc := range []struct{ n, window, want int }{
		{8, 40, 16}, {1, 40, 9}, {16, 40, 20}, {1, 6, 5},
	} {
		if got := TopPaneHeight(tc.n, tc.window); got != tc.want {
			t.Errorf("%d instances in a window of %d lines: %d, want %d", tc.n, tc.window, got, tc.want)
		}
	}
}

// Grid's rules, by number.
func TestGrid(t *testing.T) {
	for _, tc := range []struct {
		rule string
		n    int
		want []Split
	}{
		{"1: one instance: its pane alone", 1, nil},
		{"1, 2: two instances side by side", 2, []Split{{Of: 0, Dir: "-h", Size: "50%", Instance: 1}}},
		{"1, 2, 3: four instances in two rows of two, the rows first", 4, []Split{
			{Of: 0, Dir: "-v", Size: "50%", Instance: 2},
			{Of: 0, Dir: "-h", Size: "50%", Instance: 1}, {Of: 2, Dir: "-h", Size: "50%", Instance: 3}}},
		{"3: five instances: rows of three then two, each share even", 5, []Split{
			{Of: 0, Dir: "-v", Size: "50%", Instance: 3},
			{Of: 0, Dir: "-h", Size: "66%", Instance: 1}, {Of: 1, Dir: "-h", Size: "50%", Instance: 2},
			{Of: 3, Dir: "-h", Size: "50%", Instance: 4}}},
	} {
		if got := Grid(tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.rule, got, tc.want)
		}
	}
}
