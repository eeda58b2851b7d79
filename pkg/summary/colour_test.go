//go:build linux

package summary

import "testing"

// Rules of UseColour, each by its number.
func TestUseColourRules(t *testing.T) {
	for _, tc := range []struct {
		rule     string
		terminal bool
		env      map[string]string
		want     bool
	}{
		{"1: NO_COLOR set", true, map[string]string{"NO_COLOR": "1"}, false},
		{"1: NO_COLOR empty counts as unset", true, map[string]string{"NO_COLOR": ""}, true},
		{"2: TERM=dumb", true, map[string]string{"TERM": "dumb"}, false},
		{"3: a terminal", true, map[string]string{"TERM": "xterm"}, true},
		{"3: not a terminal", false, map[string]string{"TERM": "xterm"}, false},
	} {
		if got := UseColour(tc.terminal, tc.env); got != tc.want {
			t.Errorf("%s: colour %v, want %v", tc.rule, got, tc.want)
		}
	}
}
