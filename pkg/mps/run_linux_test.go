package mps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// R1–R6: what Prepare refuses, in its order, and what it decides.
func TestPrepare(t *testing.T) {
	private := t.TempDir()
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	long := filepath.Join(private, strings.Repeat("d", 100))
	// /bin/false is a control program that answers no ask (E3): no MPS
	// of the job's at the default directory
	node := func(env map[string]string, control, parent string) Node {
		return Node{Env: env, Control: control, Parent: parent, UID: os.Getuid()}
	}
	for _, tc := range []struct {
		name     string
		n        Node
		vendor   gpu.Vendor
		want     string // "" accepted
		existing string // the job's MPS's pipe directory, when accepted
	}{
		{"R1: the plan must suit MPS", node(nil, "/bin/false", private), gpu.AMD, "MPS is NVIDIA's, and these GPUs are amd", ""},
		{"R2: GPULAUNCH_MPS_WAIT is a duration", node(map[string]string{WaitEnv: "soon"}, "/bin/false", private), gpu.NVIDIA, "GPULAUNCH_MPS_WAIT=soon: how long an MPS daemon has to come up is a duration, e.g. 300s; nothing was started", ""},
		{"R3: the job's own, without the control program", node(map[string]string{"CUDA_MPS_PIPE_DIRECTORY": "/site/mps"}, "", long), gpu.NVIDIA, "", "/site/mps"},
		{"R4: no control program, no MPS of the job's", node(nil, "", private), gpu.NVIDIA, "nvidia-cuda-mps-control is not on PATH, and the job has no MPS of its own", ""},
		{"R5: a directory others may enter", node(nil, "/bin/false", open), gpu.NVIDIA, "the MPS pipe directories would go in " + open + ", which is not private", ""},
		{"R6: a directory too deep", node(nil, "/bin/false", long), gpu.NVIDIA, "too long for MPS's Unix sockets", ""},
		{"R6: a directory not made yet, short", node(nil, "/bin/false", filepath.Join(private, "new")), gpu.NVIDIA, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Prepare(context.Background(), plan(4, 2, 1), tc.vendor, Settings{On: true}, tc.n)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Prepare = %v, want %q", err, tc.want)
			}
			if err != nil {
				if !strings.HasSuffix(err.Error(), "; nothing was started") {
					t.Errorf("the refusal does not say nothing was started: %v", err)
				}
				return
			}
			got := ""
			if r.Existing != nil {
				got = r.Existing.PipeDir
			}
			if got != tc.existing || len(r.Shares) != 2 {
				t.Errorf("the job's MPS at %q, want %q; %d shares", got, tc.existing, len(r.Shares))
			}
		})
	}
}

// What each instance is told: its GPU's daemon's directories and share
// (T3), under the job's MPS no directory and no share (T2) — the
// memory limit either way.
func TestClientEnvs(t *testing.T) {
	r := &Run{Settings: Settings{On: true, MemLimit: "10G"}, Shares: Shares(plan(5, 4, 1))}
	d := &Daemons{list: []*Daemon{{GPU: "GPU-a", PipeDir: "/r/0/pipe", LogDir: "/r/0/log"}}}
	envs := r.ClientEnvs(d)
	want := "CUDA_MPS_PIPE_DIRECTORY=/r/0/pipe CUDA_MPS_LOG_DIRECTORY=/r/0/log CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10G"
	if len(envs) != 2 || strings.Join(envs[0], " ") != want || strings.Join(envs[4], " ") != want {
		t.Errorf("under the run's daemons: %v, want instances 0 and 4 told %q, the others nothing", envs, want)
	}
	r.Existing = &Existing{PipeDir: "/site/mps"}
	envs = r.ClientEnvs(nil)
	if len(envs) != 5 || strings.Join(envs[1], " ") != "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10G" {
		t.Errorf("under the job's MPS: %v", envs)
	}
}

// RemoveStaleDirs removes the directory of a gpulaunch that is gone, and
// leaves this one's, a running one's and what is no run's.
func TestRemoveStaleDirs(t *testing.T) {
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dirs := map[string]bool{ // name: stays
		runDirPrefix(gone.Process.Pid) + "1": false,
		runDirPrefix(os.Getpid()) + "1":      true,
		runDirPrefix(os.Getppid()) + "1":     true,
		"mps-abc-1":                          true,
		"other":                              true,
	}
	for name := range dirs {
		if err := os.Mkdir(filepath.Join(parent, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	RemoveStaleDirs(parent)
	for name, stays := range dirs {
		if _, err := os.Stat(filepath.Join(parent, name)); (err == nil) != stays {
			t.Errorf("%s: stays %v, want %v (pid %s gone)", name, err == nil, stays, strconv.Itoa(gone.Process.Pid))
		}
	}
	dir, err := NewRunDir(filepath.Join(parent, "new"))
	if err != nil || !strings.HasPrefix(filepath.Base(dir), runDirPrefix(os.Getpid())) {
		t.Errorf("NewRunDir = %q, %v", dir, err)
	}
}

// NodeOf finds the control program on gpulaunch's PATH, or says there is
// none, and hands the environment on as a sorted list too.
func TestNodeOf(t *testing.T) {
	dir := t.TempDir()
	control := filepath.Join(dir, "nvidia-cuda-mps-control")
	if err := os.WriteFile(control, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := NodeOf(sched.Env{"PATH": dir, "A": "1"}, "/run/x", 7)
	if n.Control != control || n.Parent != "/run/x" || n.UID != 7 || strings.Join(n.BaseEnv, " ") != "A=1 PATH="+dir {
		t.Errorf("NodeOf = %+v", n)
	}
	if n := NodeOf(sched.Env{"PATH": t.TempDir()}, "/run/x", 7); n.Control != "" {
		t.Errorf("no control program on PATH, got %q", n.Control)
	}
}
