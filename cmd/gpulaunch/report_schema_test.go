package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/report"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// validateAgainstSchema fails t unless data, JSON that gpulaunch wrote, is
// valid against docs/NAME.schema.json (NAME: report, scale, info, plan,
// status). Every test that makes gpulaunch write JSON calls it, so that a
// nil slice written as null, or a field the schema does not know, fails
// the test of the run that wrote it.
func validateAgainstSchema(t *testing.T, name string, data []byte) {
	t.Helper()
	errs, err := schemaErrors(name, data)
	if err != nil {
		t.Fatalf("%s JSON: %v\n%s", name, err, data)
	}
	if len(errs) > 0 {
		t.Fatalf("does not match docs/%s.schema.json:\n  %s\n%s", name, strings.Join(errs, "\n  "), data)
	}
}

// validateFileAgainstSchema is validateAgainstSchema of a file gpulaunch wrote.
func validateFileAgainstSchema(t *testing.T, name, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("gpulaunch wrote no %s JSON: %v", name, err)
	}
	validateAgainstSchema(t, name, data)
}

// schemaErrors are the ways data breaks docs/NAME.schema.json; err when
// data is not one JSON document or the schema cannot be read.
func schemaErrors(name string, data []byte) (errs []string, err error) {
	s, err := readSchema(name)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON document")
	}
	c := schemaCheck{root: s}
	c.check(s, v, "$")
	return c.errs, nil
}

func readSchema(name string) (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", name+".schema.json"))
	if err != nil {
		return nil, err
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("docs/%s.schema.json: %w", name, err)
	}
	return s, nil
}

// schemaCheck validates against the subset of JSON Schema (2020-12) the
// docs' schemas use. A keyword outside it is an error, not ignored: a
// schema must never seem to forbid what this validator lets through.
type schemaCheck struct {
	root map[string]any
	errs []string
}

// schemaKeywords are the keywords check implements (the first five are
// annotations: nothing to check).
var schemaKeywords = []string{"$schema", "$id", "title", "description", "$comment", "$defs",
	"$ref", "type", "enum", "const", "minimum", "required", "properties", "additionalProperties", "items"}

func (c *schemaCheck) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *schemaCheck) check(schema map[string]any, v any, at string) {
	for k := range schema {
		if !slices.Contains(schemaKeywords, k) {
			c.fail("%s: the schema uses %q, which this validator does not implement", at, k)
		}
	}
	if ref, ok := schema["$ref"].(string); ok {
		c.check(c.resolve(ref, at), v, at)
	}
	if t, ok := schema["type"]; ok && !typeAllowed(t, v) {
		c.fail("%s: %s, want %v", at, jsonType(v), t)
		return
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return sameJSON(e, v) }) {
		c.fail("%s: %v not in %v", at, v, enum)
	}
	if want, ok := schema["const"]; ok && !sameJSON(want, v) {
		c.fail("%s: %v, want %v", at, v, want)
	}
	if min, ok := schema["minimum"].(float64); ok {
		if x, isNum := v.(float64); isNum && x < min {
			c.fail("%s: %v below the minimum %v", at, x, min)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		c.object(schema, v, at)
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range v {
				c.check(items, x, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
}

func (c *schemaCheck) object(schema map[string]any, v map[string]any, at string) {
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if _, ok := v[r.(string)]; !ok {
				c.fail("%s: missing %q", at, r)
			}
		}
	}
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p, ok := props[k].(map[string]any); ok {
			c.check(p, v[k], at+"."+k)
			continue
		}
		switch extra := schema["additionalProperties"].(type) {
		case bool:
			if !extra {
				c.fail("%s: unexpected %q", at, k)
			}
		case map[string]any:
			c.check(extra, v[k], at+"."+k)
		}
	}
}

// resolve finds a local reference, "#/$defs/NAME".
func (c *schemaCheck) resolve(ref, at string) map[string]any {
	defs, _ := c.root["$defs"].(map[string]any)
	s, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	if !strings.HasPrefix(ref, "#/$defs/") || !ok {
		c.fail("%s: $ref %q names no definition in $defs", at, ref)
		return map[string]any{}
	}
	return s
}

func typeAllowed(t any, v any) bool {
	var types []string
	switch t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	}
	got := jsonType(v)
	return slices.Contains(types, got) || (got == "integer" && slices.Contains(types, "number"))
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
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

// The validator rejects what each schema forbids, and a schema keyword it
// does not implement.
func TestSchemaValidatorRejects(t *testing.T) {
	short := `{"schema_version": 1, "host": "", "command": [], "started": "", "wall_seconds": 0, "exit_code": 0, "monitor_interval_seconds": 0,
		"plan": {"gpu_backend": "", "request": {"instances": 1, "gpus_per_instance": 1, "cpus_per_instance": 0, "mem_policy": "preferred", "share_gpus": false},
		"allowed_cpus": "", "slots": [], "locality": 1, "warnings": []},
		"launch": {"node": 0, "nodes": 1, "world_size": 1, "node_from": "", "hosts": [], "rendezvous": null}, "instances": [], "warnings": []}`
	if errs, err := schemaErrors("report", []byte(short)); err != nil || len(errs) > 0 {
		t.Fatalf("a valid report is refused: %v %q", err, errs)
	}
	for _, tc := range []struct{ name, schema, doc string }{
		{"missing field", "report", `{"schema_version": 1}`},
		{"wrong type", "report", strings.Replace(short, `"schema_version": 1`, `"schema_version": "1"`, 1)},
		{"unexpected field", "report", strings.TrimSuffix(short, "}") + `, "extra": 1}`},
		{"null for a list", "report", strings.Replace(short, `"instances": []`, `"instances": null`, 1)},
		{"a series of nulls", "report", strings.Replace(short, `"instances": []`, `"instances": [{"instance": 0, "rank": 0, "host": "", "pid": 1, "gpus": [], "cpus": "",
			"wall_seconds": 0, "exit_code": 0, "signal": "", "ended_by": "", "restarts": 0, "gpu_util_mean_pct": null, "gpu_util_peak_pct": 0,
			"gpu_mem_peak_bytes": 0, "rss_peak_bytes": 0, "cpu_seconds": 0, "warnings": [],
			"series": {"t_seconds": null, "gpu_util_pct": null, "gpu_mem_bytes": null, "cpu_pct": null, "rss_bytes": null}}]`, 1)},
		{"not in the enum", "scale", `{"schema_version": 1, "command": [], "host": "", "started": "", "by": "nodes", "ddp": false, "weak": false, "metric": null,
			"efficiency_threshold": 0.6, "repeat": 1, "points": [], "verdict": "", "interrupted": false}`},
		{"a point without its list of runs", "scale", `{"schema_version": 1, "command": [], "host": "", "started": "", "by": "gpus", "ddp": false, "weak": false, "metric": null,
			"efficiency_threshold": 0.6, "repeat": 1, "points": [{"gpus": 1, "instances": 1, "gpus_per_instance": 1, "runs": null, "status": "not run",
			"metric_median": null, "metric_min": null, "metric_max": null, "speedup": null, "ideal_speedup": null, "efficiency": null,
			"gpu_util_mean_pct": null, "gpu_mem_per_gpu_bytes": null}], "verdict": "", "interrupted": true}`},
		{"two documents", "report", short + short},
		{"info without its GPUs", "info", `{"gpu_backend": "sysfs", "gpus": null, "gpu_reason": "", "devices_constrained": false, "cpus": "0-1", "step_cpus": "",
			"mem_nodes": "0", "slurm": {"node_id": 0, "proc_id": 0, "local_id": 0, "gpus_on_node": -1}, "warnings": [],
			"topology": {"cpus": "0-1", "sockets": 1, "numa_nodes": [0], "threads_per_core": 1}}`},
		{"a GPU in a plan without its PCI address", "plan", `{"gpu_backend": "", "request": {"instances": 1, "gpus_per_instance": 1, "cpus_per_instance": 0,
			"mem_policy": "preferred", "share_gpus": false}, "allowed_cpus": "0-1", "locality": 1, "warnings": [],
			"slots": [{"instance": 0, "gpus": [{"uuid": "GPU-1", "index": 0, "minor": 0, "numa_node": 0, "local_cpus": "0-1"}], "cpus": "0-1", "local_cpus": 2, "mem_policy": "preferred", "mem_nodes": "0"}]}`},
		{"a status with a state gpulaunch has not", "status", `{"run": {"pid": 1, "host": "h", "command": [], "started": "", "monitor_interval": "2s", "finished": false},
			"taken": "", "instances": [{"instance": 0, "rank": 0, "state": "sleeping", "pid": 2, "gpus": "", "cpus": "0", "restarts": 0, "started": "", "wall_ns": 0,
			"cpu_pct": 0, "cpu_seconds": 0, "rss_bytes": 0, "peak_rss_bytes": 0, "gpu_util_pct": -1, "gpu_mem_bytes": 0, "gpu_util_mean_pct": -1, "warnings": [], "output_bytes": 0}]}`},
		{"a negative count in a queue", "status", `{"run": {"pid": 1, "host": "h", "command": [], "started": "", "monitor_interval": "2s", "finished": false},
			"taken": "", "instances": [], "queue": {"total": 3, "skipped": 0, "done": -1, "failed": 0, "running": 0, "remaining": 3, "tasks_per_second": 0}}`},
	} {
		errs, err := schemaErrors(tc.schema, []byte(tc.doc))
		if err == nil && len(errs) == 0 {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	c := schemaCheck{root: map[string]any{}}
	c.check(map[string]any{"pattern": "^a"}, "b", "$")
	if len(c.errs) == 0 {
		t.Error("a keyword the validator does not implement passes silently")
	}
	c = schemaCheck{root: map[string]any{}}
	c.check(map[string]any{"$ref": "#/$defs/none"}, "b", "$")
	if len(c.errs) == 0 {
		t.Error("a $ref to nothing passes")
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
	validateAgainstSchema(t, "report", b)
	var r report.Run
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

// Runs of every shape write a report valid against its schema: one too
// short to sample (its series empty lists, not null), a failed one, a
// queue, one without GPUs, one without telemetry, one on a node file,
// instances ended by -K and by --timeout, and one restarted.
func TestReportOfEveryShapeMatchesSchema(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "lines")
	os.WriteFile(lines, []byte("a\nb\nc\n"), 0o644)
	commands := filepath.Join(dir, "commands")
	os.WriteFile(commands, []byte("echo a\necho b\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		exit int
	}{
		{"a tasks file, no command", []string{"--tasks", commands, "-n", "2", "-G", "0"}, 0},
		{"short", []string{"-n", "2", "--simulate", "dgx-h100", "--", "true"}, 0},
		{"failed", []string{"-n", "2", "--simulate", "dgx-h100", "--", "false"}, 1},
		{"queue", []string{"--each-line", lines, "--simulate", "lumi-g", "--", "echo"}, 0},
		{"failed queue", []string{"--each-line", lines, "-n", "2", "-G", "0", "--", "false"}, 3}, // GNU parallel's: the failed tasks
		{"no GPU", []string{"-n", "2", "-G", "0", "--", "true"}, 0},
		{"telemetry off", []string{"-n", "1", "--simulate", "aurora", "--monitor-interval", "0", "--", "true"}, 0},
		{"node file", []string{"-n", "2", "--node-file", nodeFile(t, 2), "--", "true"}, 0},
		{"killed by -K", []string{"-n", "2", "-G", "0", "-K", "--", "sh", "-c", `[ "$GPULAUNCH_INSTANCE" = 0 ] && exit 3; exec sleep 30`}, 3},
		{"timed out", []string{"-n", "1", "-G", "0", "--timeout", "300ms", "--", "sleep", "30"}, 128 + 15},
		{"restarted", []string{"-n", "1", "-G", "0", "--restarts", "2", "--", "false"}, 1},
		{"GPUs shared, taking turns", []string{"-n", "4", "-O", "--node-file", nodeFile(t, 2), "--share-gpus", "--", "true"}, 0},
		{"a group's root cause", []string{"-n", "2", "-G", "0", "--ddp", "--", "sh", "-c", torchRecord}, 2},
		{"a group's failure without an error file", []string{"-n", "2", "-G", "0", "--ddp", "--", "sh", "-c", `[ "$RANK" = 1 ] && kill -SEGV $$; exec sleep 30`}, 128 + 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			cmd := gpulaunch(t, append([]string{"--report", file}, tc.args...)...)
			// TMPDIR of its own: a failed group's error files are kept there
			cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+t.TempDir(), "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if exitStatus(err) != tc.exit {
				t.Fatalf("exit %v, want %d\n%s", err, tc.exit, out)
			}
			validateFileAgainstSchema(t, "report", file)
		})
	}
}

// A run ended by Ctrl-C still writes a valid report: exit 130, its
// instances ended by the signal.
func TestInterruptedRunReportMatchesSchema(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "run.json")
	cmd := gpulaunch(t, "-n", "2", "-G", "0", "--monitor-interval", "50ms", "--report", file, "--",
		"sh", "-c", `touch "$1/up.$GPULAUNCH_INSTANCE"; exec sleep 60`, "app", dir)
	cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+t.TempDir())
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both instances running", func() bool {
		up, _ := filepath.Glob(filepath.Join(dir, "up.*"))
		return len(up) == 2
	})
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); exitStatus(err) != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, out.String())
	}
	validateFileAgainstSchema(t, "report", file)
	var r report.Run
	b, _ := os.ReadFile(file)
	json.Unmarshal(b, &r)
	if r.ExitCode != 130 || len(r.Instances) != 2 || r.Instances[0].EndedBy != string(job.EndedSignalled) {
		t.Errorf("exit %d, instances %+v", r.ExitCode, r.Instances)
	}
}

// A queue over two nodes: each node's status while it runs, and the
// report each node writes (its host in the name), are valid.
func TestQueueOverTwoNodesReportsMatchSchema(t *testing.T) {
	qn := newQueueNodes(t, 2, 6)
	report := filepath.Join(qn.dir, "run.json")
	holder, hout := qn.start(0, qn.keys, "--report", report)
	node, nout := qn.start(1, qn.keys, "--report", report)
	waitFor(t, "node 1 to join", func() bool { return strings.Contains(hout.String(), "node 1 (node1) joined the queue") })
	for i, node := range []*exec.Cmd{holder, node} {
		var out []byte
		waitFor(t, "a node's status with its queue", func() bool {
			st := exec.Command(os.Args[0], "status", "--json", "--pid", strconv.Itoa(node.Process.Pid))
			st.Env = qn.env(i, qn.keys)
			var err error
			out, err = st.Output()
			return err == nil && strings.Contains(string(out), `"queue"`)
		})
		validateAgainstSchema(t, "status", out)
	}
	qn.release()
	qn.succeeded("holder", holder, hout)
	qn.succeeded("node 1", node, nout)
	for _, host := range []string{"node0", "node1"} {
		validateFileAgainstSchema(t, "report", filepath.Join(qn.dir, "run."+host+".json"))
	}
}

// `gpulaunch report` draws run reports only: a scaling study, a plan, an
// info or a status document is refused in one line that says what it is
// and where its picture comes from; exit 2, nothing written.
func TestReportRefusesOtherJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		return p
	}
	plan, _, _ := runCLI(t, nil, "plan", "--simulate", "dgx-h100", "-n", "2", "--json")
	info, _, _ := runCLI(t, nil, "info", "--simulate", "dgx-h100", "--json")
	study := `{"schema_version": 1, "command": ["app"], "host": "h", "started": "2026-01-01T00:00:00Z", "by": "gpus", "ddp": false, "weak": false, "metric": null,
		"efficiency_threshold": 0.6, "repeat": 1, "points": [], "verdict": "", "interrupted": false}`
	status := `{"run": {"pid": 1, "host": "h", "command": ["app"], "started": "2026-01-01T00:00:00Z", "monitor_interval": "2s", "finished": false},
		"taken": "2026-01-01T00:00:00Z", "instances": []}`
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"a scaling study", write("study.json", study), []string{"study.json is a scaling study", "gpulaunch scale", "--svg"}},
		{"a plan", write("plan.json", plan), []string{"plan.json is a plan", "plan --json"}},
		{"an info", write("info.json", info), []string{"info.json is", "info --json"}},
		{"a status", write("status.json", status), []string{"status.json is", "status --json"}},
		{"other JSON", write("other.json", `{"name": "x"}`), []string{"other.json is not a gpulaunch run report", "--report FILE"}},
		{"a list", write("list.json", `[1, 2]`), []string{"list.json is not a gpulaunch run report"}},
		{"broken JSON", write("broken.json", "{\n  \"schema_version\": 1,\n  oops\n}"), []string{"broken.json is not a gpulaunch run report", "broken.json:3:3: invalid character"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "x.svg")
			_, stderr, code := runCLI(t, nil, "report", tc.file, "--svg", out)
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: ") {
				t.Fatalf("exit %d, want 2 and one error line: %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%q lacks %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a picture was written")
			}
		})
	}
}

// info --json and plan --json, for nodes of every vendor, MIG devices,
// Intel tiles, a node file, no GPU at all and a Slurm step, are valid
// against docs/info.schema.json and docs/plan.schema.json; so is a run's
// --dry-run --json.
func TestInfoAndPlanJSONMatchSchemas(t *testing.T) {
	dir := t.TempDir()
	mig := filepath.Join(dir, "mig.json")
	os.WriteFile(mig, []byte(`{"name": "mig-node", "cpu_layout": {"sockets": 2, "numa_per_socket": 1, "cores_per_numa": 4, "threads_per_core": 2},
		"gpus": [{"pci": "0000:18:00.0", "numa": 0, "memory_mib": 81559},
		{"pci": "0000:9a:00.0", "numa": null, "mig": [{"uuid": "MIG-11111111-1111-1111-1111-111111111111", "name": "1g.10gb", "memory_mib": 9856},
		{"uuid": "MIG-22222222-2222-2222-2222-222222222222", "name": "1g.10gb", "memory_mib": 9856}]}]}`), 0o644)
	step := sched.Env{"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "vm", "SLURM_LOCALID": "1", "SLURM_STEP_TASKS_PER_NODE": "2",
		"SLURM_STEP_NODELIST": "vm", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "0,1", "SLURM_STEP_GPUS": "0,1"}
	var nodes [][]string
	for _, n := range []string{"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "perlmutter-gpu", "lumi-g", "mi300a", "aurora"} {
		nodes = append(nodes, []string{"--simulate", n})
	}
	nodes = append(nodes, []string{"--simulate", mig}, []string{"--node-file", nodeFile(t, 2)})
	for _, node := range nodes {
		for _, tc := range []struct {
			schema     string
			args, tail []string
		}{
			{"info", []string{"info", "--json"}, nil},
			{"plan", []string{"plan", "--json", "-n", "2"}, nil},
			{"plan", []string{"plan", "--json", "-n", "1", "-G", "2", "--mem-bind", "none"}, nil},
			{"plan", []string{"plan", "--json", "-n", "2", "-G", "0", "-c", "1"}, nil},
			{"plan", []string{"plan", "--json", "-n", "4", "--share-gpus", "-O"}, nil},
			{"plan", []string{"--dry-run", "--json", "-n", "2"}, []string{"--", "/bin/sh"}},
		} {
			args := append(append(append([]string{}, tc.args...), node...), tc.tail...)
			stdout, stderr, code := runCLI(t, nil, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) { validateAgainstSchema(t, tc.schema, []byte(stdout)) })
		}
	}
	for _, tc := range []struct {
		name, schema string
		env          sched.Env
		args         []string
	}{
		{"no GPU", "info", nil, []string{"info", "--json"}},
		{"no GPU", "plan", nil, []string{"plan", "--json", "-n", "2", "-G", "0"}},
		{"a Slurm step", "info", step, []string{"info", "--json", "--simulate", "dgx-h100"}},
		{"a Slurm step", "plan", step, []string{"plan", "--json", "-n", "2", "--simulate", "dgx-h100"}},
		{"Intel cards", "info", sched.Env{"ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"}, []string{"info", "--json", "--simulate", "aurora"}},
	} {
		t.Run(tc.name+" "+tc.schema, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.env, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			validateAgainstSchema(t, tc.schema, []byte(stdout))
		})
	}
}

// status --json of a run (GPUs and their samples, one instance exited) and of a queue (its
// counts, each slot's task) is valid against docs/status.schema.json.
func TestStatusJSONMatchesSchema(t *testing.T) {
	t.Run("run", func(t *testing.T) {
		r := startLiveRun(t, nil, "-n", "2", "--simulate", "dgx-h100", "--monitor-interval", "50ms", "--",
			"sh", "-c", `[ "$GPULAUNCH_INSTANCE" = 0 ] && exit 3; exec sleep 60`)
		var out string
		waitFor(t, "instance 0 exited, instance 1 running", func() bool {
			var snap launcher.Snapshot
			o, _, code := r.client(t, "status", "--json", "--pid", r.pid())
			if code != 0 || json.Unmarshal([]byte(o), &snap) != nil || len(snap.Instances) != 2 {
				return false
			}
			out = o
			// sampled: its GPU's last sample (gpu_samples) is in the JSON too
			return snap.Instances[0].State == launcher.StateExited && snap.Instances[1].State == launcher.StateRunning && len(snap.Instances[1].GPUSamples) == 1
		})
		validateAgainstSchema(t, "status", []byte(out))
		r.cmd.Process.Signal(syscall.SIGTERM)
		r.wait(t)
	})
	t.Run("queue", func(t *testing.T) {
		dir := t.TempDir()
		lines := filepath.Join(dir, "lines")
		os.WriteFile(lines, []byte("1\n2\n3\n"), 0o644)
		r := startLiveRun(t, nil, "--each-line", lines, "-n", "2", "-G", "0", "--", "sh", "-c", `while [ ! -e "$1/go" ]; do sleep 0.01; done`, "task", dir)
		var out string
		waitFor(t, "both slots running a task", func() bool {
			var snap launcher.Snapshot
			o, _, code := r.client(t, "status", "--json", "--pid", r.pid())
			if code != 0 || json.Unmarshal([]byte(o), &snap) != nil || snap.Queue == nil || snap.Queue.Running != 2 {
				return false
			}
			out = o
			return true
		})
		validateAgainstSchema(t, "status", []byte(out))
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
		if code := r.wait(t); code != 0 {
			t.Errorf("the queue exited %d", code)
		}
	})
}

// exec writes no JSON: --json there is refused, not ignored (a script
// that asks for JSON must not parse a text slot).
func TestExecRefusesJSON(t *testing.T) {
	env := sched.Env{"OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
	stdout, stderr, code := runCLI(t, env, "exec", "--json", "-G", "0", "--dry-run")
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: unknown flag: --json") || !strings.Contains(stderr, "exec --help") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// --log-format json: every log line on stderr is one JSON object with a
// level and a message (a run with a warning and a restart, a queue); what
// is not a log line is the summary table, never a console log line.
func TestLogFormatJSONLinesParse(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "lines")
	os.WriteFile(lines, []byte("1\n2\n3\n"), 0o644)
	consoleLine := regexp.MustCompile(`^(DEBUG|INFO|WARN|ERROR)\s`)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"-n", "2", "--simulate", "dgx-h100", "--restarts", "1", "--", "sh", "-c", `[ "$GPULAUNCH_INSTANCE" = 0 ] && exit 3; exit 0`}},
		{"queue", []string{"--each-line", lines, "-n", "2", "-G", "0", "--", "sh", "-c", `exit $(($1 % 2))`, "task"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := gpulaunch(t, append([]string{"--log-format", "json", "-v"}, tc.args...)...)
			cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+t.TempDir())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cmd.Run()
			logs := 0
			for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if consoleLine.MatchString(l) {
					t.Errorf("a console log line under --log-format json: %q", l)
				}
				if !strings.HasPrefix(l, "{") {
					continue
				}
				var entry map[string]any
				if err := json.Unmarshal([]byte(l), &entry); err != nil || entry["level"] == nil || entry["msg"] == nil {
					t.Errorf("a log line is not a JSON object with level and msg (%v): %q", err, l)
				}
				logs++
			}
			if logs < 4 {
				t.Errorf("%d JSON log lines; want the starts and exits at least:\n%s", logs, stderr.String())
			}
		})
	}
}
