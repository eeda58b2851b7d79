package tmux

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no tmux here: rule 3 answers
	for _, tc := range []struct {
		rule, inTmux string
		n            int
		err          string
	}{
		{"1 outside tmux", "", 2, "this shell is not in tmux (TMUX is not set)"},
		{"2 too many panes", "/tmp/tmux-1/default,1,0", MaxPanes + 1, "17 panes do not fit a window (at most 16)"},
		{"3 tmux not in PATH", "/tmp/tmux-1/default,1,0", MaxPanes, "--tmux: tmux is not in PATH"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if _, err := Check(tc.inTmux, tc.n); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Check(%q, %d) = %v, want %q", tc.inTmux, tc.n, err, tc.err)
			}
		})
	}
}
