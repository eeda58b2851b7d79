//go:build linux

package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// jsonKind's rules, each by the fields that decide it.
func TestJSONKindRules(t *testing.T) {
	for _, tc := range []struct {
		rule, doc, want string
	}{
		{"1: a run report", `{"plan": {}, "instances": [], "monitor_interval_seconds": 2, "points": []}`, ""},
		{"2: a scaling study", `{"points": [], "verdict": "", "command": []}`, "a scaling study"},
		{"3: a plan", `{"slots": [], "request": {}, "warnings": []}`, "a plan"},
		{"4: info", `{"gpus": [], "gpu_reason": "", "topology": {}}`, "info --json"},
		{"5: status", `{"run": {}, "taken": "", "instances": []}`, "status --json"},
		{"6: anything else", `{"instances": []}`, "not a gpulaunch run report"},
	} {
		var fields map[string]json.RawMessage
		json.Unmarshal([]byte(tc.doc), &fields)
		if what, fix := jsonKind(fields); !strings.Contains(what, tc.want) || (tc.want == "") != (what == "") || (what != "") == (fix == "") {
			t.Errorf("rule %s: %q, %q; want %q", tc.rule, what, fix, tc.want)
		}
	}
}
