package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
)

// FileFor's rules: a node's own file over several nodes, a directory
// that cannot take it refused.
func TestFileFor(t *testing.T) {
	dir := t.TempDir()
	names := instance.Names{Host: "n2", NodeIndex: 1}
	for _, tc := range []struct {
		name, pattern string
		multiNode     bool
		want, wantErr string
	}{
		{"no --report", "", false, "", ""},
		{"1: one node writes the pattern", filepath.Join(dir, "r.json"), false, filepath.Join(dir, "r.json"), ""},
		{"1: over nodes, the host before the extension", filepath.Join(dir, "r.json"), true, filepath.Join(dir, "r.n2.json"), ""},
		{"2: a missing directory is refused", filepath.Join(dir, "none", "r.json"), false, "", "nothing was started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FileFor(tc.pattern, names, tc.multiNode)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("FileFor = %q, %v; want %q, error with %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// Over several nodes a report name must differ per node, whatever else
// its pattern expands.
func TestReportPathPerNode(t *testing.T) {
	names := instance.Names{JobID: "7", Host: "n2", NodeIndex: 1}
	for pattern, want := range map[string]string{
		"run.json":        "run.n2.json",
		"run-%j.json":     "run-7.n2.json",
		"run-%N.json":     "run-n2.json",
		"r/%2n-%j.json":   "r/01-7.json",
		"report":          "report.n2",
		"run-%j-%N.json":  "run-7-n2.json",
		"run-%%N-%j.json": "run-%N-7.n2.json",
	} {
		got, err := Path(pattern, names, true)
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", pattern, got, err, want)
		}
	}
	if got, _ := Path("run-%j.json", names, false); got != "run-7.json" {
		t.Errorf("one node: %q", got)
	}
}
