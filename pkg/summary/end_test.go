package summary

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
)

// End's rules 3 and 4 for a run of instances: srun's status, the table
// on gpulaunch's own stderr (its warnings only with -q), the line placing
// this node's ranks over several nodes.
func TestEndOfARunOfInstances(t *testing.T) {
	insts := []launcher.Instance{{Index: 0, Rank: 4}, {Index: 1, Rank: 5}}
	res := launcher.Result{Outcomes: []launcher.Outcome{{Index: 0, Code: 3}, {Index: 1}}}
	two := nodegroup.NodeGroup{Host: "n2", Rank: 1, Size: 2, PerNode: 2}
	for _, tc := range []struct {
		name    string
		quiet   bool
		group   nodegroup.NodeGroup
		want    []string
		notWant []string
	}{
		{"3: the table, srun's status", false, nodegroup.Local(2, "n1"), []string{"INSTANCE"}, []string{"node 1 of 2"}},
		{"3: over nodes, this node's ranks first", false, two, []string{"n2: node 1 of 2, ranks 4..5 of 4", "INSTANCE"}, nil},
		{"3: -q: no table", true, two, nil, []string{"INSTANCE", "node 1 of 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			e := End{Console: NewConsole(&b, &b, false), Stderr: &b, Quiet: tc.quiet, Instances: insts, Result: res, Group: tc.group}
			if code := e.Write(); code != 3 {
				t.Errorf("status %d, want srun's 3", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("%q in:\n%s", w, b.String())
				}
			}
		})
	}
}
