package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// oneGPUNode writes a topology file of one GPU of compute capability cc
// on a driver of CUDA cuda (either "" : not said), for the MPS client
// limit's rules (mps.ClientLimit).
func oneGPUNode(t *testing.T, cuda, cc string) string {
	t.Helper()
	node := map[string]any{
		"name":       "one",
		"cpu_layout": map[string]int{"sockets": 1, "numa_per_socket": 1, "cores_per_numa": 4, "threads_per_core": 1},
		"gpus":       []map[string]any{{"pci": "0000:01:00.0", "numa": 0, "compute_capability": cc}},
	}
	if cuda != "" {
		node["cuda_version"] = cuda
	}
	data, err := json.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "one.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// The MPS client limit per GPU, as `plan --mps` and `scale --per-gpu
// --mps` apply it from the node's driver (its CUDA version), its GPUs
// (their compute capability) and the environment (mps.ClientLimit
// L1–L5): the most each accepts, and one more refused with the number
// and the fix. One rule for both: the study's F7 and the run's M4.
func TestMPSClientLimitByRule(t *testing.T) {
	app := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(app, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	conn8 := sched.Env{"CUDA_DEVICE_MAX_CONNECTIONS": "8"}
	for _, tc := range []struct {
		name   string
		env    sched.Env
		node   string // --simulate
		most   int    // instances per GPU accepted
		per    int    // GPUs of the node
		reason string // in the refusal of one more
		fix    string
	}{
		{"L2: CUDA 13.1 serves 60", nil, oneGPUNode(t, "13.1", "9.0"), 60, 1, "at most 60 clients on it (CUDA 13.1, Volta or later", "put at most 60 instances on each GPU"},
		{"L2: CUDA 13.0 serves 48", nil, oneGPUNode(t, "13.0", "9.0"), 48, 1, "at most 48 clients on it (CUDA 13.0, Volta or later", "or drop --mps and let them take turns (--share-gpus)"},
		{"L1: a Pascal GPU serves 16", nil, oneGPUNode(t, "12.4", "6.0"), 16, 1, "at most 16 clients on it (compute capability 6.0, before Volta", "put at most 16 instances on each GPU"},
		{"L3: a driver that does not say its CUDA, the lower 48", nil, oneGPUNode(t, "", "9.0"), 48, 1, "the driver's CUDA version unknown, so taken as 13.0 or earlier", "put at most 48"},
		{"L5: CSCS's 8 connections on a DGX H100 (CUDA 12.4): 12", conn8, "dgx-h100", 12, 8, "at most 12 clients on it (CUDA 12.4, Volta or later, and CUDA_DEVICE_MAX_CONNECTIONS=8", "or lower CUDA_DEVICE_MAX_CONNECTIONS"},
		{"L5: 8 connections on CUDA 13.1: 15", conn8, oneGPUNode(t, "13.1", "9.0"), 15, 1, "at most 15 clients on it", "or lower CUDA_DEVICE_MAX_CONNECTIONS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := func(k int) (string, int) {
				_, stderr, code := runCLI(t, tc.env, "plan", "--simulate", tc.node, "-n", strconv.Itoa(k*tc.per), "-O", "--mps", "--json")
				return stderr, code
			}
			if stderr, code := plan(tc.most); code != 0 {
				t.Errorf("plan --mps at %d per GPU: exit %d, %s", tc.most, code, stderr)
			}
			stderr, code := plan(tc.most + 1)
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.reason) || !strings.Contains(stderr, tc.fix) {
				t.Errorf("plan --mps at %d per GPU: exit %d, %q; want one line with %q and %q", tc.most+1, code, stderr, tc.reason, tc.fix)
			}
			// the study refuses the same size, by the same rule, before
			// anything starts
			_, stderr, code = runCLI(t, tc.env, "scale", "--simulate", tc.node, "--per-gpu", "1,"+strconv.Itoa(tc.most+1), "--mps", "--", app)
			if want := "--per-gpu " + strconv.Itoa(tc.most+1) + " --mps: MPS serves at most " + strconv.Itoa(tc.most) + " clients per GPU here"; code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("scale --per-gpu 1,%d --mps: exit %d, %q; want %q", tc.most+1, code, stderr, want)
			}
		})
	}
}

// The driver's CUDA version and each GPU's compute capability come
// through NVML's adapter (here go-nvml's mock of a DGX H100 and B200,
// pkg/nvml) into `info --json`.
func TestInfoCUDAVersion(t *testing.T) {
	for _, tc := range []struct{ node, cuda, cc string }{{"dgx-h100", "12.4", "9.0"}, {"dgx-b200", "12.8", "10.0"}} {
		stdout, stderr, code := runCLI(t, nil, "info", "--simulate", tc.node, "--json")
		var info struct {
			CUDA string `json:"cuda_version"`
			GPUs []struct {
				CC string `json:"compute_capability"`
			} `json:"gpus"`
		}
		if err := json.Unmarshal([]byte(stdout), &info); code != 0 || err != nil {
			t.Fatalf("info --simulate %s: exit %d, %v, %s", tc.node, code, err, stderr)
		}
		if info.CUDA != tc.cuda || len(info.GPUs) != 8 || info.GPUs[7].CC != tc.cc {
			t.Errorf("info --simulate %s: CUDA %q, GPUs %+v; want CUDA %s, compute capability %s", tc.node, info.CUDA, info.GPUs, tc.cuda, tc.cc)
		}
	}
}
