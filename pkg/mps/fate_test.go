package mps

import (
	"strings"
	"testing"
	"time"
)

// FaultOf's rules, each by its number, on the H200's log (one fault at
// 01:38:32.637, clients 468, 467, 466) and on a log of two faults.
func TestFaultOfRules(t *testing.T) {
	one, err := ParseStickies(strings.NewReader(h200ServerLog))
	if err != nil {
		t.Fatal(err)
	}
	two, err := ParseStickies(strings.NewReader(h200ServerLog + strings.ReplaceAll(strings.ReplaceAll(h200ServerLog, "46", "56"), ":38:", ":39:")))
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, _ := time.ParseInLocation("2006-01-02 15:04:05.000", "2026-11-27 "+s, time.Local)
		return tm
	}
	for _, tc := range []struct {
		rule     string
		stickies []Sticky
		pids     []int
		started  time.Time
		n        int // -1: none
		listed   int
	}{
		{"C1: the faulting client, listed first", one, []int{468}, at("01:38:20.000"), 0, 0},
		{"C1: a neighbour, listed after it", one, []int{100, 466}, at("01:38:20.000"), 0, 2},
		{"C1: a pid of a later fault's list is that fault's", two, []int{567}, at("01:38:40.000"), 1, 1},
		{"C1: the list names it though it started after the line's time (clocks to the millisecond)", one, []int{467}, at("01:38:33.000"), 0, 1},
		{"C2: pids not listed, the fault after its start: a client gpulaunch did not see", one, []int{999}, at("01:38:32.000"), 0, -1},
		{"C2: the fault in the millisecond it started", one, []int{999}, at("01:38:32.637").Add(400 * time.Microsecond), 0, -1},
		{"C2: the newest fault after its start", two, []int{999}, at("01:38:10.000"), 1, -1},
		{"C3: a fault before its start is an earlier one's", one, []int{999}, at("01:38:33.500"), -1, 0},
		{"C3: no fault in the log", nil, []int{468}, at("01:38:20.000"), -1, 0},
	} {
		b, ok := FaultOf(tc.stickies, tc.pids, tc.started)
		switch {
		case tc.n < 0 && ok:
			t.Errorf("%s: fault %d, want none", tc.rule, b.N)
		case tc.n >= 0 && (!ok || b.N != tc.n || b.Listed != tc.listed):
			t.Errorf("%s: %v fault %d listed %d, want fault %d listed %d", tc.rule, ok, b.N, b.Listed, tc.n, tc.listed)
		}
	}
}

// FateLine names the instances that share a fate, under MPS only.
func TestFateLine(t *testing.T) {
	s := &Sharing{Mode: "mps", GPUs: []SharedGPU{{Index: 0, Instances: []int{0, 2}}, {Index: 1, Instances: []int{1, 3}}}}
	if got := FateLine(s); !strings.Contains(got, "instances 0,2 (GPU 0); 1,3 (GPU 1) share a fate") {
		t.Errorf("under MPS: %q", got)
	}
	if got := FateLine(s); !strings.Contains(got, "the job's own MPS: gpulaunch reads none of its servers' logs and names no fault's cause") {
		t.Errorf("under the job's own MPS (no thread share of gpulaunch's): %q", got)
	}
	s.GPUs[0].Threads, s.GPUs[1].Threads = 50, 50
	if got := FateLine(s); strings.Contains(got, "the job's own MPS") {
		t.Errorf("under gpulaunch's MPS: %q", got)
	}
	s.Mode = "turns"
	if got := FateLine(s); got != "" {
		t.Errorf("taking turns: %q, want none", got)
	}
	if FateLine(nil) != "" {
		t.Error("no sharing: a line")
	}
}
