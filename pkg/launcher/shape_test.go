//go:build linux

package launcher

import (
	"strings"
	"testing"
)

// S1-S3, by rule.
func TestShape(t *testing.T) {
	for _, tc := range []struct {
		rule         string
		gpus, per, n int
		err          string
	}{
		{"S1: one instance per GPU", 4, 1, 4, ""},
		{"S1: one instance per -G GPUs, the rest unused", 5, 2, 2, ""},
		{"S1: no GPU to give: -n is required", 0, 1, 0, "-n N is required: the allocation has 0 GPU(s) (no GPU)"},
		{"S1: fewer GPUs than one instance takes", 1, 2, 0, "-n N is required"},
		{"S1: -G 0 gives no instance count", 4, 0, 0, "-n N is required"},
	} {
		n, err := AutoInstances(tc.gpus, tc.per, "no GPU")
		if n != tc.n || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %d, %v; want %d, %q", tc.rule, n, err, tc.n, tc.err)
		}
	}
	for _, tc := range []struct {
		rule          string
		auto          bool
		granted, here int
		queue, same   bool
	}{
		{"S2: -n on the command line", false, -1, 4, false, true},
		{"S2: the scheduler granted every node this node's GPUs", true, 4, 4, false, true},
		{"S2: the scheduler did not say", true, -1, 4, false, false},
		{"S2: another count granted", true, 8, 4, false, false},
		{"S2: a queue's holder checks its nodes", true, -1, 4, true, true},
	} {
		if got := SameNEverywhere(tc.auto, tc.granted, tc.here, tc.queue); got != tc.same {
			t.Errorf("%s: %v, want %v", tc.rule, got, tc.same)
		}
	}
	for _, tc := range []struct {
		rule   string
		p      Policy
		nodes  int
		refuse bool
	}{
		{"S3: a group's restarts over several nodes", Policy{DDP: true, Restarts: 2}, 2, true},
		{"S3: on one node", Policy{DDP: true, Restarts: 2}, 1, false},
		{"S3: no restarts", Policy{DDP: true}, 4, false},
		{"S3: instances restart alone", Policy{Restarts: 2}, 4, false},
	} {
		err := tc.p.CheckNodes(tc.nodes)
		if (err != nil) != tc.refuse {
			t.Errorf("%s: %v", tc.rule, err)
		}
	}
	if err := (Policy{DDP: true, Restarts: 3}).CheckNodes(2); err == nil || !strings.HasPrefix(err.Error(), "--ddp --restarts 3 on 2 nodes: ") {
		t.Errorf("S3's message: %v", err)
	}
}
