package summary

import (
	"strings"
	"testing"
)

// A console without a progress line writes straight through; with one,
// the line's last counts are left on screen once, at Done.
func TestConsole(t *testing.T) {
	var out, errs strings.Builder
	plain := NewConsole(&out, &errs, false)
	if plain.Stdout != &out || plain.Stderr != &errs || plain.Progress != nil {
		t.Fatal("a console without a progress line wraps its streams")
	}
	plain.Done()
	c := NewConsole(&out, &errs, true)
	if c.Progress == nil {
		t.Fatal("no progress line")
	}
	c.Done()
	after := errs.String()
	if !strings.HasSuffix(after, "\n") {
		t.Fatalf("Done left %q, want the counts on their own line", after)
	}
	c.Done()
	if errs.String() != after {
		t.Fatal("a second Done drew the line again")
	}
}
