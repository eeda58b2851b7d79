//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// amdTestbed skips unless the testbed's fake GPUs are AMD's
// (TESTBED_VENDOR=amd scripts/slurm-testbed.sh up; make integration's
// third pass).
func amdTestbed(t *testing.T) {
	t.Helper()
	var node struct {
		Vendor string `json:"vendor"`
	}
	b, err := os.ReadFile(filepath.Join(testbedRoot, "node.json"))
	if err == nil {
		err = json.Unmarshal(b, &node)
	}
	if err != nil || node.Vendor != "amd" {
		t.Skipf("the testbed's GPUs are not AMD's (%v): make integration runs these on TESTBED_VENDOR=amd", err)
	}
}

// amdIndex maps a testbed AMD UUID (GPU-7e57bed0 and the number in hex)
// to the node's GPU number.
func amdIndex(t *testing.T, uuid string) int {
	t.Helper()
	hex, ok := strings.CutPrefix(uuid, "GPU-7e57bed0")
	n, err := strconv.ParseInt(hex, 16, 32)
	if !ok || len(hex) != 8 || err != nil {
		t.Fatalf("ROCR_VISIBLE_DEVICES entry %q is not a testbed AMD GPU UUID", uuid)
	}
	return int(n)
}

// checkAMDInstances: n probes, each with ROCR_VISIBLE_DEVICES naming one
// GPU of its own that the job's device cgroup lets it open, and none of
// the variables that would select again inside ROCR's list.
func checkAMDInstances(t *testing.T, what string, ps []probe, n int) []int {
	t.Helper()
	if len(ps) != n {
		t.Fatalf("%s: %d probe lines, want %d", what, len(ps), n)
	}
	seen := map[int]bool{}
	var gpus []int
	for _, p := range ps {
		if p["hip"] != "unset" || p["cudaset"] != "" || p["gdo"] != "unset" {
			t.Errorf("%s: instance %s has HIP_VISIBLE_DEVICES=%s, CUDA_VISIBLE_DEVICES set %q, GPU_DEVICE_ORDINAL=%s: HIP would select again inside ROCR's list",
				what, p["inst"], p["hip"], p["cudaset"], p["gdo"])
		}
		if strings.Contains(p["rocr"], ",") || p["rocr"] == "" || p["rocr"] == "unset" {
			t.Errorf("%s: instance %s has ROCR_VISIBLE_DEVICES %q, want one GPU", what, p["inst"], p["rocr"])
			continue
		}
		g := amdIndex(t, p["rocr"])
		if seen[g] {
			t.Errorf("%s: GPU %d given twice", what, g)
		}
		seen[g] = true
		if !containsInt(p["open"], g) {
			t.Errorf("%s: instance %s got GPU %d, but the job's device cgroup lets it open only %q", what, p["inst"], g, p["open"])
		}
		gpus = append(gpus, g)
	}
	return gpus
}

// Slurm writes ROCR_VISIBLE_DEVICES (gres.conf Flags=amd_gpu_env, as
// AutoDetect=rsmi does); each instance gets its own GCD in it, alone —
// in a job of all four, in a job whose GPUs 2 and 3 the device cgroup
// renumbers from 0, and when the site's gres.conf writes the same list
// into every vendor's variable.
func TestAMDInstancesGetTheirGCD(t *testing.T) {
	amdTestbed(t)
	dir := jobDir(t)
	blocker := sbatch(t, dir, "#!/bin/bash\nsleep 300\n", "--gres=gpu:2", "-c", "1")
	defer exec.Command("scancel", blocker.id).Run()
	blocker.waitState(t, "RUNNING")
	script := `#!/bin/bash
echo "slurm rocr=${ROCR_VISIBLE_DEVICES-unset} cuda=${CUDA_VISIBLE_DEVICES-unset} job_gpus=$SLURM_JOB_GPUS"
echo "== gres"
gpulaunch -n 2 -- ./my_app
echo "== every vendor's variable"
CUDA_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES GPU_DEVICE_ORDINAL=$ROCR_VISIBLE_DEVICES gpulaunch -n 2 -- ./my_app
echo "== index"
gpulaunch -n 2 --gpu-ids index -- ./my_app
`
	j := sbatch(t, dir, script, "--gres=gpu:2", "-c", "2")
	rec, out := j.wait(t, time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	// the premise: Slurm wrote ROCR's variable alone, renumbered by the cgroup
	if !strings.Contains(out, "slurm rocr=0,1 cuda=unset job_gpus=2,3") {
		t.Fatalf("the job did not get GPUs 2,3 as ROCR_VISIBLE_DEVICES=0,1 alone (the premise of this test):\n%s", out)
	}
	got := probes(out)
	for _, section := range []string{"gres", "every vendor's variable"} {
		if gpus := checkAMDInstances(t, section, got[section], 2); len(gpus) == 2 && (gpus[0] != 2 || gpus[1] != 3) {
			t.Errorf("%s: instances got node GPUs %v, want the job's 2 and 3", section, gpus)
		}
	}
	// ROCR's ordinals count the GPUs the process can open, from 0
	if ps := got["index"]; len(ps) != 2 || ps[0]["rocr"] != "0" || ps[1]["rocr"] != "1" {
		t.Errorf("--gpu-ids index: %v, want ROCR_VISIBLE_DEVICES 0 and 1", ps)
	}
	if !strings.Contains(out, "taken as one selection") {
		t.Errorf("the same list in every vendor's variable was not said to be taken as one selection")
	}
	if t.Failed() {
		t.Log(out)
	}
}

// Rank mode on AMD: srun's and the MPI launchers' local ranks pick the
// GPU; the rank is told it in ROCR_VISIBLE_DEVICES (what LUMI's
// select_gpu does by hand).
func TestAMDRankMode(t *testing.T) {
	amdTestbed(t)
	dir := jobDir(t)
	script := `#!/bin/bash
echo "== srun"
srun -n 4 gpulaunch -- ./my_app
echo "== openmpi"
mpirun.openmpi -np 4 gpulaunch -- ./my_app
`
	j := sbatch(t, dir, script, "--ntasks=4", "--gres=gpu:4")
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	got := probes(out)
	for _, launcher := range []string{"srun", "openmpi"} {
		gpus := checkAMDInstances(t, launcher, got[launcher], 4)
		for i, p := range got[launcher] {
			if i < len(gpus) && (gpus[i] != i || p["lr"] != strconv.Itoa(i)) {
				t.Errorf("%s: local rank %s got GPU %d, want GPU %d (bus order)", launcher, p["lr"], gpus[i], i)
			}
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// docs/recipes.md's LUMI-G/Frontier script, as written, on the AMD
// testbed of 8 GPUs: each rank is srun's task, gets GCD = its local rank
// in ROCR_VISIBLE_DEVICES alone, and gpulaunch is gone (exec).
func TestAMDRecipeLUMIRanks(t *testing.T) {
	amdTestbed(t)
	j := sbatch(t, jobDir(t), recipe(t, "lumi-ranks"))
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	ps := probes(out)[""]
	gpus := checkAMDInstances(t, "lumi-ranks", ps, 8)
	for i, p := range ps {
		if i < len(gpus) && (gpus[i] != i || p["lr"] != strconv.Itoa(i) || p["lsize"] != "8") {
			t.Errorf("rank %d (LOCAL_RANK %s of %s) got GCD %d, want GCD %d", i, p["lr"], p["lsize"], gpus[i], i)
		}
		if p["pcomm"] != "slurmstepd" {
			t.Errorf("rank %d's parent is %q, want slurmstepd: gpulaunch must exec", i, p["pcomm"])
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}
