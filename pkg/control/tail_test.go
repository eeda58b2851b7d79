//go:build linux

package control

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		rule          string
		n             int
		given, follow bool
		want          int
		err           string
	}{
		{"1 negative", -1, true, true, 0, "--tail -1: cannot be negative"},
		{"2 --tail 0 without -f", 0, true, false, 0, "--tail 0 shows none of the recent output"},
		{"3 --tail 0 with -f", 0, true, true, TailNone, ""},
		{"4 the last N", 5, true, false, 5, ""},
		{"4 not given: all kept", 0, false, false, 0, ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, err := Tail(tc.n, tc.given, tc.follow)
			if (err == nil) != (tc.err == "") || err != nil && !strings.HasPrefix(err.Error(), tc.err) || got != tc.want {
				t.Fatalf("Tail(%d, %v, %v) = %d, %v; want %d, %q", tc.n, tc.given, tc.follow, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for word, want := range map[string]int{"all": launcher.AllInstances, "0": 0, "12": 12} {
		if got, err := ParseTarget(word); err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %d, %v; want %d", word, got, err, want)
		}
	}
	for _, word := range []string{"-1", "one", ""} {
		if _, err := ParseTarget(word); err == nil || !strings.Contains(err.Error(), "INSTANCE is an instance number or all") {
			t.Errorf("ParseTarget(%q) = %v: want refused", word, err)
		}
	}
}
