package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validate checks a decoded JSON value against the subset of JSON Schema
// docs/report.schema.json uses: type (one or a list), enum, required,
// properties, additionalProperties false, items.
func validate(schema map[string]any, v any, at string) []string {
	var errs []string
	if t, ok := schema["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			return []string{fmt.Sprintf("%s: %s, want %v", at, jsonType(v), types)}
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		errs = append(errs, fmt.Sprintf("%s: %v not in %v", at, v, enum))
	}
	switch v := v.(type) {
	case map[string]any:
		for _, r := range asList(schema["required"]) {
			if _, ok := v[r]; !ok {
				errs = append(errs, fmt.Sprintf("%s: missing %q", at, r))
			}
		}
		props, _ := schema["properties"].(map[string]any)
		for k, x := range v {
			p, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					errs = append(errs, fmt.Sprintf("%s: unexpected %q", at, k))
				}
				continue
			}
			errs = append(errs, validate(p, x, at+"."+k)...)
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range v {
				errs = append(errs, validate(items, x, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func asList(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	return loadSchemaNamed(t, "report.schema.json")
}

// loadSchemaNamed reads docs/NAME.
func loadSchemaNamed(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The validator itself must reject what the schema forbids.
func TestSchemaValidatorRejects(t *testing.T) {
	s := loadSchema(t)
	for name, doc := range map[string]string{
		"missing field":    `{"schema_version": 1}`,
		"wrong type":       `{"schema_version": "1", "host": "", "command": [], "started": "", "wall_seconds": 0, "exit_code": 0, "monitor_interval_seconds": 0, "plan": {}, "instances": [], "warnings": []}`,
		"unexpected field": `{"schema_version": 1, "host": "", "command": [], "started": "", "wall_seconds": 0, "exit_code": 0, "monitor_interval_seconds": 0, "plan": {"gpu_backend": "", "request": {"instances": 1, "gpus_per_instance": 1, "cpus_per_instance": 0, "mem_policy": "", "share_gpus": false}, "allowed_cpus": "", "slots": [], "locality": 1, "warnings": null}, "instances": [], "warnings": [], "extra": 1}`,
	} {
		var v any
		json.Unmarshal([]byte(doc), &v)
		if errs := validate(s, v, "$"); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A simulated run's report validates against the documented schema and
// holds the use the fake apps declared, and the launch verification flags.
func TestRunReportMatchesSchema(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	script := `case $GPULAUNCH_INSTANCE in 0) m=own;; 1) m=other;; *) m=none;; esac; exec "$0" gltest-helper gpu-use $m 60 1024 800ms`
	cmd := gpulaunch(t, "-n", "3", "--simulate", "dgx-h100", "--gpu-visibility", "all", "--monitor-interval", "100ms", "--report", file, "--", "sh", "-c", script, os.Args[0])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if errs := validate(loadSchema(t), v, "$"); len(errs) > 0 {
		t.Fatalf("report does not match docs/report.schema.json:\n%s\n%s", strings.Join(errs, "\n"), b)
	}
	var r runReport
	json.Unmarshal(b, &r)
	i0 := r.Instances[0]
	if i0.GPUUtilPeak != 60 || i0.GPUUtilMean == nil || *i0.GPUUtilMean <= 0 || i0.GPUMemPeak != 1024<<20 || len(i0.Warnings) != 0 {
		t.Errorf("instance 0 declared 60%% and 1 GiB on its own GPU: %+v", i0)
	}
	if !strings.Contains(strings.Join(r.Instances[1].Warnings, " "), "not its own") {
		t.Errorf("instance 1 on another GPU is not flagged: %q", r.Instances[1].Warnings)
	}
	if !strings.Contains(strings.Join(r.Instances[2].Warnings, " "), "no process of it used its GPU") {
		t.Errorf("GPU-idle instance 2 is not flagged: %q", r.Instances[2].Warnings)
	}
	if len(r.Plan.Slots) != 3 || r.ExitCode != 0 || len(r.Warnings) < 2 {
		t.Errorf("plan slots %d, exit %d, warnings %q", len(r.Plan.Slots), r.ExitCode, r.Warnings)
	}
}
