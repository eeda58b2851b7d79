//go:build linux

package report

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
)

// Read reads a --report file, refusing what is not one: another JSON
// gpulaunch writes is named, with where its own picture comes from.
// Every error is the user's to fix (a usage error), and says how.
func Read(path string) (Run, error) {
	var r Run
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("cannot read the report: %v: give the file a run's --report FILE wrote", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return r, fmt.Errorf("%s is not a gpulaunch run report (%v): give the file a run's --report FILE wrote", path, jsonerr.Explain(path, data, err))
	}
	if what, fix := jsonKind(fields); what != "" {
		return r, fmt.Errorf("%s is %s: %s", path, what, fix)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s is not a gpulaunch run report (%v): give the file a run's --report FILE wrote", path, jsonerr.Explain(path, data, err))
	}
	if r.SchemaVersion != SchemaVersion {
		return r, fmt.Errorf("%s has schema_version %d; this gpulaunch reads %d: draw it with the gpulaunch that wrote it", path, r.SchemaVersion, SchemaVersion)
	}
	return r, nil
}

// jsonKind tells a run report from the other JSON gpulaunch writes, by
// the fields only each has; what is "" for a run report, else what the
// document is, and fix where its picture comes from. The rules, in order:
//  1. A run report has "plan", "instances" and "monitor_interval_seconds".
//  2. A scaling study (scale --json) has "points" and "verdict": scale
//     draws it itself, with --svg.
//  3. A plan (plan --json) has "slots" and "request".
//  4. A node's description (info --json) has "gpu_reason" and "topology".
//  5. A live run's status (status --json) has "run" and "taken".
//  6. Anything else is not gpulaunch's.
func jsonKind(fields map[string]json.RawMessage) (what, fix string) {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := fields[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("plan", "instances", "monitor_interval_seconds"):
		return "", ""
	case has("points", "verdict"):
		return "a scaling study (gpulaunch scale --json), not a run report", "its picture is drawn by the study itself: `gpulaunch scale … --svg OUT`; `gpulaunch report` draws a run's --report FILE"
	case has("slots", "request"):
		return "a plan (gpulaunch plan --json), not a run report", "a plan has nothing run to draw; run it with --report FILE and draw that"
	case has("gpu_reason", "topology"):
		return "a node's description (gpulaunch info --json), not a run report", "it has nothing run to draw; give the file a run's --report FILE wrote"
	case has("run", "taken"):
		return "a live run's status (gpulaunch status --json), not a run report", "draw the run's own --report FILE once it has ended"
	}
	return "not a gpulaunch run report (it has no \"plan\" and \"instances\")", "give the file a run's --report FILE wrote"
}
