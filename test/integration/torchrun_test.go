//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The same worker under Debian's torchrun (its one crash patched:
// testdata/torchrun_patched.py) and under gpulaunch --ddp, in one Slurm
// job: every variable torchrun gives a worker, gpulaunch gives with the
// same meaning, key by key and rank by rank. Where the values must
// differ, the meaning is checked: the rendezvous (torchrun's c10d store
// on localhost, gpulaunch's MASTER_ADDR and port), the error file (each
// rank's own, under attempt_0), OMP_NUM_THREADS (gpulaunch: the
// instance's CPU count, its documented choice; torchrun: 1), and NCCL's
// async error handling (torch 1.13's name; gpulaunch: torch 2.2+'s).
func TestTorchrunContract(t *testing.T) {
	dir := jobDir(t)
	copyTestdata(t, dir, "torchrun_patched.py", "worker_env.py")
	script := `#!/bin/bash
mkdir -p torchrun gpulaunch
env -0 > job.env
/usr/bin/python3 torchrun_patched.py --standalone --nproc_per_node=2 --max_restarts 1 worker_env.py torchrun || exit 10
gpulaunch -n 2 --ddp --restarts 1 -- /usr/bin/python3 worker_env.py gpulaunch || exit 11
`
	j := sbatch(t, dir, script, "--gres=gpu:2", "-c", "2")
	rec, out := j.wait(t, 3*time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	job := readEnv0(t, filepath.Join(dir, "job.env"))
	for rank := 0; rank < 2; rank++ {
		tr := readEnvJSON(t, filepath.Join(dir, "torchrun", "env."+strconv.Itoa(rank)+".json"))
		gl := readEnvJSON(t, filepath.Join(dir, "gpulaunch", "env."+strconv.Itoa(rank)+".json"))
		compared := 0
		for k, want := range tr {
			if v, inherited := job[k]; inherited && v == want || k == "_" {
				continue // the job's own, not torchrun's; "_" is the shell's last command
			}
			compared++
			if k == "NCCL_ASYNC_ERROR_HANDLING" {
				// torch 1.13's name: gpulaunch sets only the name torch
				// 2.2+ reads, as torchrun 2.x does (issue 36: the old one
				// makes torch 2.11 warn on every rank); torch < 2.2 users
				// set this one themselves (docs/multinode.md)
				if got, set := gl[k]; set || gl["TORCH_NCCL_ASYNC_ERROR_HANDLING"] != want {
					t.Errorf("rank %d: torchrun sets %s=%s; gpulaunch %q, TORCH_NCCL_ASYNC_ERROR_HANDLING=%q: want the TORCH_ name alone, %s", rank, k, want, got, gl["TORCH_NCCL_ASYNC_ERROR_HANDLING"], want)
				}
				continue
			}
			got, ok := gl[k]
			if !ok {
				t.Errorf("rank %d: torchrun sets %s=%s, gpulaunch does not", rank, k, want)
				continue
			}
			if why := sameMeaning(k, want, got, gl); why != "" {
				t.Errorf("rank %d: %s: torchrun %q, gpulaunch %q: %s", rank, k, want, got, why)
			}
		}
		if compared < 18 {
			t.Errorf("rank %d: only %d variables of torchrun's compared: %v", rank, compared, tr)
		}
	}
}

// sameMeaning says why gpulaunch's value of torchrun's variable k differs
// in meaning; "" when it does not.
func sameMeaning(k, torchrun, gpulaunch string, env map[string]string) string {
	switch k {
	case "MASTER_ADDR", "TORCHELASTIC_RUN_ID":
		if gpulaunch == "" {
			return "empty"
		}
	case "MASTER_PORT":
		if p, err := strconv.Atoi(gpulaunch); err != nil || p < 1 || p > 65535 {
			return "not a port"
		}
	case "TORCHELASTIC_ERROR_FILE":
		want := filepath.Join("attempt_0", env["LOCAL_RANK"], "error.json")
		if !strings.HasSuffix(torchrun, "/"+want) || !strings.HasSuffix(gpulaunch, "/"+want) {
			return "want both DIR/" + want
		}
		if fi, err := os.Stat(filepath.Dir(gpulaunch)); err == nil || !os.IsNotExist(err) {
			return "its directory is still there after a run that succeeded: " + fi.Name()
		}
	case "OMP_NUM_THREADS":
		if n, err := strconv.Atoi(gpulaunch); err != nil || n != cpuCount(env["GPULAUNCH_CPUS"]) {
			return "want the instance's CPU count (GPULAUNCH_CPUS=" + env["GPULAUNCH_CPUS"] + ")"
		}
	default:
		if torchrun != gpulaunch {
			return "differs"
		}
	}
	return ""
}

// A @record main raising on rank 1: torchrun names it the root cause,
// and so do gpulaunch's stderr and report, with -o sending the ranks'
// output to files.
func TestTorchrunRootCause(t *testing.T) {
	dir := jobDir(t)
	copyTestdata(t, dir, "torchrun_patched.py", "worker_env.py")
	script := `#!/bin/bash
mkdir -p torchrun gpulaunch
export RAISE_ON_RANK=1
/usr/bin/python3 torchrun_patched.py --standalone --nproc_per_node=2 worker_env.py torchrun > torchrun.err 2>&1
echo "torchrun exit $?"
gpulaunch -n 2 --ddp -o 'rank%t.log' --report run.json -- /usr/bin/python3 worker_env.py gpulaunch 2> gpulaunch.err
echo "gpulaunch exit $?"
`
	j := sbatch(t, dir, script, "--gres=gpu:2", "-c", "2")
	rec, out := j.wait(t, 3*time.Minute)
	if rec["JobState"] != "COMPLETED" || !strings.Contains(out, "torchrun exit 1") || !strings.Contains(out, "gpulaunch exit 1") {
		t.Fatalf("job %s: %s, want both launchers to exit 1:\n%s", j.id, rec["JobState"], out)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	exc := "ValueError: rank 1 cannot go on: bad shard 7"
	tr, gl := read("torchrun.err"), read("gpulaunch.err")
	if !regexp.MustCompile(`Root Cause[^\n]*\n(?:.*\n)*?\s+rank\s+: 1 \(local_rank: 1\)`).MatchString(tr) || !strings.Contains(tr, exc) {
		t.Fatalf("torchrun's root cause is not rank 1's %s (the premise):\n%s", exc, tr)
	}
	for _, want := range []string{"root cause (first failure): instance 1, rank 1, attempt 0: exit 1\n", "  " + exc + "\n", `raised at File "` + filepath.Join(dir, "worker_env.py") + `"`} {
		if !strings.Contains(gl, want) {
			t.Errorf("gpulaunch's stderr lacks %q:\n%s", want, gl)
		}
	}
	if strings.Contains(gl, "Traceback") || !strings.Contains(read("rank1.log"), "Traceback") {
		t.Errorf("rank 1's traceback should be in its -o file, not in gpulaunch's stderr:\n%s", gl)
	}
	var report struct {
		RootCause struct {
			Rank      int    `json:"rank"`
			Type      string `json:"type"`
			Message   string `json:"message"`
			ErrorFile string `json:"error_file"`
			Traceback string `json:"traceback"`
		} `json:"root_cause"`
	}
	if err := json.Unmarshal([]byte(read("run.json")), &report); err != nil {
		t.Fatal(err)
	}
	rc := report.RootCause
	if rc.Rank != 1 || rc.Type+": "+rc.Message != exc || !strings.Contains(rc.Traceback, "raise ValueError") {
		t.Errorf("report's root cause %+v, want rank 1's %s", rc, exc)
	}
	if b, err := os.ReadFile(rc.ErrorFile); err != nil || !strings.Contains(string(b), "bad shard 7") {
		t.Errorf("the error file the report names: %v %s", err, b)
	}
	os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(rc.ErrorFile))))
}

func copyTestdata(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func readEnvJSON(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return env
}

func readEnv0(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// cpuCount counts a CPU list ("0-1,4").
func cpuCount(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, rng := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if rng {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			return -1
		}
		n += b - a + 1
	}
	return n
}
