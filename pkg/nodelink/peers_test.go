package nodelink

import (
	"strings"
	"testing"
	"time"
)

// The holder's status messages to the other nodes stay at 2,000 a second
// in all however many nodes there are: twice a second each up to 1,000
// nodes, less often beyond.
func TestStatusEveryKeepsTheHoldersMessagesBounded(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		want  time.Duration
	}{
		{2, 500 * time.Millisecond},
		{1000, 500 * time.Millisecond},
		{4000, 2 * time.Second},
		{10000, 5 * time.Second},
	} {
		every := StatusEvery(tc.nodes)
		if every != tc.want {
			t.Errorf("%d nodes: every %s, want %s", tc.nodes, every, tc.want)
		}
		if perSecond := float64(tc.nodes) / every.Seconds(); perSecond > 2000 {
			t.Errorf("%d nodes: %.0f status messages a second", tc.nodes, perSecond)
		}
	}
}

// Groups.Note names the relays' nodes, and nothing without a tree.
func TestGroupsNote(t *testing.T) {
	if n := (Groups{Nodes: 100}).Note(); n != "" {
		t.Errorf("no tree: %q", n)
	}
	if n := (Groups{Nodes: 1000, Size: 32}).Note(); !strings.Contains(n, "in groups of 32 behind relays (nodes 1, 33, 65, …") {
		t.Errorf("a tree: %q", n)
	}
}

// JoinWait: unset is two minutes, a positive duration is taken, anything
// else refused naming the variable.
func TestJoinWait(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 2 * time.Minute, "10m": 10 * time.Minute, "90s": 90 * time.Second} {
		if got, err := JoinWait(v); err != nil || got != want {
			t.Errorf("%q: %s %v, want %s", v, got, err, want)
		}
	}
	for _, v := range []string{"10", "-1m", "0s", "soon"} {
		if _, err := JoinWait(v); err == nil || !strings.Contains(err.Error(), "GPULAUNCH_JOIN_WAIT="+v+": ") {
			t.Errorf("%q: %v, want a refusal", v, err)
		}
	}
}
