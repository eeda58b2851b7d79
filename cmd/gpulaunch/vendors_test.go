package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reports runs the report helper as n instances with args and the
// environment extra, and returns what each instance saw.
func reports(t *testing.T, n int, extra []string, args ...string) []map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r")
	cmd := gpulaunch(t, append(append([]string{"-n", fmt.Sprint(n)}, args...), helperArgs("report", out)...)...)
	cmd.Env = append(cmd.Env, extra...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	reps := make([]map[string]string, n)
	for i := range reps {
		b, err := os.ReadFile(fmt.Sprintf("%s.%d", out, i))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &reps[i]); err != nil {
			t.Fatal(err)
		}
	}
	return reps
}

// gpuVars are the variables of every vendor that select GPUs, as an
// instance saw them.
func gpuVars(rep map[string]string) string {
	var out []string
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK"} {
		if v, ok := rep["env:"+k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return strings.Join(out, " ")
}

// A run on LUMI's node: each instance is told its own GCD through
// ROCR_VISIBLE_DEVICES alone, whatever stale lists it inherited (Slurm
// writes its list into every vendor's variable; HIP would apply its own
// inside ROCR's and could leave none).
func TestRunOnLUMIGivesEachInstanceItsGCD(t *testing.T) {
	stale := []string{"ROCR_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "GPU_DEVICE_ORDINAL=0"}
	for _, ids := range []string{"uuid", "index"} {
		reps := reports(t, 8, stale, "--simulate", "lumi-g", "--gpu-ids", ids)
		for i, rep := range reps {
			want := fmt.Sprintf("ROCR_VISIBLE_DEVICES=%d", i)
			if ids == "uuid" {
				want = "ROCR_VISIBLE_DEVICES=" + rep["env:GPULAUNCH_GPUS"]
				if !strings.HasPrefix(rep["env:GPULAUNCH_GPUS"], "GPU-") {
					t.Errorf("instance %d: GPULAUNCH_GPUS %q is not a ROCm UUID", i, rep["env:GPULAUNCH_GPUS"])
				}
			}
			if got := gpuVars(rep); got != want {
				t.Errorf("--gpu-ids %s: instance %d sees %q, want %q alone", ids, i, got, want)
			}
		}
	}
}

// A run on Aurora's node: each instance gets its own tile as Level Zero
// numbers devices in the hierarchy the job chose, with PCI order on.
func TestRunOnAuroraMasksEachInstance(t *testing.T) {
	every := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}
	for _, tc := range []struct {
		hierarchy string
		jobMask   string // the job's ZE_AFFINITY_MASK; empty masks nothing
		n         int
		args      []string
		want      []string
	}{
		{"", "", 12, nil, every},
		{"FLAT", "", 12, nil, every},
		{"COMPOSITE", "", 12, nil, []string{"0.0", "0.1", "1.0", "1.1", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1"}},
		{"COMPOSITE", "", 6, []string{"-G", "2"}, []string{"0", "1", "2", "3", "4", "5"}},
		{"COMBINED", "", 2, []string{"-G", "2"}, []string{"0,1", "6,7"}},
		// the job's own mask: instances are told their devices among all
		{"FLAT", "4,5,9,11", 4, nil, []string{"4", "5", "9", "11"}},
		{"COMPOSITE", "1,4.1", 3, nil, []string{"1.0", "1.1", "4.1"}},
	} {
		extra := []string{"ZE_AFFINITY_MASK=" + tc.jobMask, "ZE_ENABLE_PCI_ID_DEVICE_ORDER=0"}
		if tc.hierarchy != "" {
			extra = append(extra, "ZE_FLAT_DEVICE_HIERARCHY="+tc.hierarchy)
		}
		reps := reports(t, tc.n, extra, append([]string{"--simulate", "aurora"}, tc.args...)...)
		for i, rep := range reps {
			want := "ZE_AFFINITY_MASK=" + tc.want[i]
			if got := gpuVars(rep); got != want || rep["env:ZE_ENABLE_PCI_ID_DEVICE_ORDER"] != "1" {
				t.Errorf("%s mask %q %v: instance %d sees %q (PCI order %q), want %q", tc.hierarchy, tc.jobMask, tc.args, i, got,
					rep["env:ZE_ENABLE_PCI_ID_DEVICE_ORDER"], want)
			}
		}
	}
}

// A node file describes AMD and Intel GPUs too, and binding is applied
// for real; GPU use that cannot be measured is said so in the report,
// not shown as idle.
func TestRunOnVendorNodeFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{`{"vendor": "amd", "gpus": [{"pci": "c1:00.0", "device": "/dev/null"}, {"pci": "c6:00.0", "device": "/dev/null"}]}`,
			[]string{"ROCR_VISIBLE_DEVICES=0", "ROCR_VISIBLE_DEVICES=1"}},
		{`{"vendor": "intel", "gpus": [{"pci": "18:00.0", "tiles": 2, "device": "/dev/null"}]}`,
			[]string{"ZE_AFFINITY_MASK=0", "ZE_AFFINITY_MASK=1"}},
	} {
		file, report := filepath.Join(dir, "node.json"), filepath.Join(dir, "run.json")
		if err := os.WriteFile(file, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		reps := reports(t, 2, nil, "--node-file", file, "--gpu-ids", "index", "--monitor-interval", "10ms", "--report", report)
		for i, rep := range reps {
			if got := gpuVars(rep); got != tc.want[i] {
				t.Errorf("%s: instance %d sees %q, want %q", tc.doc, i, got, tc.want[i])
			}
			if rep["Cpus_allowed_list"] != rep["env:GPULAUNCH_CPUS"] {
				t.Errorf("instance %d: bound to %q, told %q", i, rep["Cpus_allowed_list"], rep["env:GPULAUNCH_CPUS"])
			}
		}
		var r struct {
			GPUTelemetry string `json:"gpu_telemetry"`
		}
		b, _ := os.ReadFile(report)
		if err := json.Unmarshal(b, &r); err != nil || !strings.HasPrefix(r.GPUTelemetry, "no GPU telemetry: ") {
			t.Errorf("report gpu_telemetry %q (%v), want why GPU use was not measured", r.GPUTelemetry, err)
		}
	}
}
