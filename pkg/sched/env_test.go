package sched

import (
	"slices"
	"testing"
)

// List is the environment sorted by name, as a child is started with it.
func TestEnvList(t *testing.T) {
	got := Env{"PATH": "/bin", "A": "1=2", "Z": ""}.List()
	if want := []string{"A=1=2", "PATH=/bin", "Z="}; !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}
