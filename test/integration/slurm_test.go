//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A job that holds only GPUs 2 and 3 (a blocker holds 0 and 1): with
// ConstrainDevices Slurm renumbers them to CUDA_VISIBLE_DEVICES=0,1, and
// gpulaunch must resolve those to the job's GPUs, not the node's first two.
func TestJobHoldingGPUs2And3(t *testing.T) {
	dir := jobDir(t)
	blocker := sbatch(t, dir, "#!/bin/bash\nsleep 300\n", "--gres=gpu:2", "-c", "1")
	defer exec.Command("scancel", blocker.id).Run()
	blocker.waitState(t, "RUNNING")
	if got := blocker.record(t); !strings.Contains(got["JOB_GRES"]+got["TresPerNode"], "gpu:2") {
		t.Logf("blocker record: %v", got)
	}
	j := sbatch(t, dir, "#!/bin/bash\necho \"== batch cvd=$CUDA_VISIBLE_DEVICES job_gpus=$SLURM_JOB_GPUS\"\ngpulaunch -n 2 -- ./my_app\n", "--gres=gpu:2", "-c", "2")
	rec, out := j.wait(t, time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	if !strings.Contains(out, "cvd=0,1 job_gpus=2,3") {
		t.Fatalf("the job did not get GPUs 2,3 renumbered to 0,1 (the premise of this test):\n%s", out)
	}
	var ps []probe
	for _, v := range probes(out) {
		ps = append(ps, v...)
	}
	gpus := checkDistinctGPUs(t, "gpulaunch -n 2", ps, 2)
	if len(gpus) == 2 && (gpus[0] != 2 || gpus[1] != 3) {
		t.Errorf("instances got node GPUs %v, want the job's 2 and 3\n%s", gpus, out)
	}
}

// The exit code of the failing instance is the job's exit code, in the
// batch step and through an srun step.
func TestExitCodeReachesJobRecord(t *testing.T) {
	dir := jobDir(t)
	for _, tc := range []struct{ name, script string }{
		{"batch step", "gpulaunch -n 4 -- ./my_app\n"},
		{"srun step", "srun -n 1 gpulaunch -n 4 -- ./my_app\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := sbatch(t, dir, "#!/bin/bash\n"+tc.script, "--gres=gpu:4", "-c", "4", "--export=ALL,APP_EXIT=3,APP_EXIT_INSTANCE=2")
			rec, out := j.wait(t, time.Minute)
			if rec["JobState"] != "FAILED" || rec["ExitCode"] != "3:0" {
				t.Fatalf("job %s: JobState=%s ExitCode=%s, want FAILED 3:0\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
			}
			if n := len(probes(out)[""]); n != 4 {
				t.Errorf("%d instances ran, want 4\n%s", n, out)
			}
		})
	}
}

// scancel and a time limit: every instance gets TERM, nothing outlives the
// job. Slurm sends the batch step's TERM to the batch shell only, so there
// gpulaunch must be that shell (exec, as docs/recipes.md says); in an srun
// step every process of the step gets it.
func TestJobEndTermsEveryInstance(t *testing.T) {
	scancel := func(t *testing.T, j job) {
		if out, err := exec.Command("scancel", j.id).CombinedOutput(); err != nil {
			t.Fatalf("scancel: %v %s", err, out)
		}
	}
	for _, tc := range []struct {
		name, run string
		extra     []string
		end       func(t *testing.T, j job)
		state     string
	}{
		{"scancel batch step", "exec gpulaunch", nil, scancel, "CANCELLED"},
		{"scancel srun step", "srun -n 1 gpulaunch", nil, scancel, "CANCELLED"},
		// Slurm takes "minutes:seconds"; slurmctld enforces the limit on
		// its next periodic pass, up to a minute later.
		{"time limit", "exec gpulaunch", []string{"--time=0:03"}, func(*testing.T, job) {}, "TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := jobDir(t)
			marker := "glmark-" + filepath.Base(dir)
			script := "#!/bin/bash\n" + tc.run + " -n 4 -l -- ./my_app " + marker + "\n"
			j := sbatch(t, dir, script, append([]string{"--gres=gpu:4", "-c", "4", "--export=ALL,APP_MODE=wait"}, tc.extra...)...)
			waitFiles(t, dir, "started.", 4)
			tc.end(t, j)
			rec, out := j.wait(t, 2*time.Minute)
			for i := range 4 {
				if b, err := os.ReadFile(filepath.Join(dir, "term."+string(rune('0'+i)))); err != nil || strings.TrimSpace(string(b)) != "TERM" {
					t.Errorf("instance %d got no TERM (%v)", i, err)
				}
			}
			if left := liveWith(marker); len(left) > 0 {
				t.Errorf("processes outlived job %s (%s): %v", j.id, rec["JobState"], left)
			}
			if rec["JobState"] != tc.state {
				t.Errorf("job %s ended %s, want %s", j.id, rec["JobState"], tc.state)
			}
			if t.Failed() {
				t.Log(out)
			}
		})
	}
}

// Started by a batch script without exec, gpulaunch says what scancel will
// do to its instances.
func TestWarnsWhenChildOfBatchShell(t *testing.T) {
	dir := jobDir(t)
	j := sbatch(t, dir, "#!/bin/bash\ngpulaunch -n 1 -- ./my_app\necho \"== exec\"\nexec gpulaunch -n 1 -- ./my_app\n", "--gres=gpu:1")
	_, out := j.wait(t, time.Minute)
	before, after, _ := strings.Cut(out, "== exec")
	if !strings.Contains(before, "exec gpulaunch") || strings.Contains(after, "exec gpulaunch") {
		t.Fatalf("want the exec advice once, before the exec'd run:\n%s", out)
	}
}

// Rank mode under the three launchers a user has: each rank its own GPU by
// local rank, and the app's parent is the launcher, not gpulaunch.
func TestRankModeUnderLaunchers(t *testing.T) {
	dir := jobDir(t)
	script := `#!/bin/bash
echo "== srun"
srun -n 4 gpulaunch -- ./my_app
echo "== openmpi"
mpirun.openmpi -np 4 gpulaunch -- ./my_app
echo "== hydra"
mpiexec.hydra -n 4 gpulaunch -- ./my_app
`
	j := sbatch(t, dir, script, "--ntasks=4", "--gres=gpu:4")
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	got := probes(out)
	parents := map[string][]string{"srun": {"slurmstepd"}, "openmpi": {"orterun", "mpirun", "mpirun.openmpi"}, "hydra": {"hydra_pmi_proxy"}}
	for launcher, want := range parents {
		ps := got[launcher]
		gpus := checkDistinctGPUs(t, launcher, ps, 4)
		for i, p := range ps {
			if p["lr"] != p["inst"] || p["lsize"] != "4" || p["rank"] != p["inst"] || p["size"] != "4" {
				t.Errorf("%s: rank %d sees LOCAL_RANK=%s/%s RANK=%s/%s", launcher, i, p["lr"], p["lsize"], p["rank"], p["size"])
			}
			if i < len(gpus) && gpus[i] != i {
				t.Errorf("%s: local rank %d got GPU %d, want GPU %d (bus order)", launcher, i, gpus[i], i)
			}
			found := false
			for _, w := range want {
				found = found || p["pcomm"] == w
			}
			if !found {
				t.Errorf("%s: rank %d's parent is %q, want the launcher (%v): gpulaunch must exec, not stay", launcher, i, p["pcomm"], want)
			}
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// A compiled MPI program under `gpulaunch exec` is still an MPI rank: the
// collective completes under srun's PMIx/PMI2 and under both mpiruns.
func TestMPIAllreduceUnderExec(t *testing.T) {
	dir := jobDir(t)
	script := `#!/bin/bash
echo "== srun-pmix"
srun --mpi=pmix -n 4 gpulaunch exec -- allreduce_ompi
echo "== openmpi"
mpirun.openmpi -np 4 gpulaunch exec -- allreduce_ompi
echo "== srun-pmi2"
srun --mpi=pmi2 -n 4 gpulaunch exec -- allreduce_mpich
echo "== hydra"
mpiexec.hydra -n 4 gpulaunch exec -- allreduce_mpich
`
	j := sbatch(t, dir, script, "--ntasks=4", "--gres=gpu:4")
	rec, out := j.wait(t, 3*time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	checkAllreduce(t, out, []string{"srun-pmix", "openmpi", "srun-pmi2", "hydra"})
}

// checkAllreduce: in each section, ranks 0..3 each report sum=6 and a
// GPU of their own.
func checkAllreduce(t *testing.T, out string, sections []string) {
	t.Helper()
	got := map[string]map[string]string{} // section → rank → line
	section := ""
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "== "); ok {
			section = name
			continue
		}
		if i := strings.Index(line, "allreduce rank="); i >= 0 {
			f := strings.Fields(line[i:])
			if got[section] == nil {
				got[section] = map[string]string{}
			}
			got[section][strings.TrimPrefix(f[1], "rank=")] = line
		}
	}
	for _, s := range sections {
		cvds := map[string]bool{}
		for r := range 4 {
			line, ok := got[s][string(rune('0'+r))]
			if !ok {
				t.Errorf("%s: rank %d did not finish the allreduce\n%s", s, r, out)
				continue
			}
			if !strings.Contains(line, "size=4 sum=6 ") {
				t.Errorf("%s: rank %d: %s", s, r, line)
			}
			cvd := line[strings.Index(line, "cvd=")+4:]
			cvd = strings.Fields(cvd)[0]
			if cvds[cvd] || strings.Contains(cvd, ",") || !strings.HasPrefix(cvd, "GPU-") {
				t.Errorf("%s: rank %d: CUDA_VISIBLE_DEVICES %s is not a GPU of its own", s, r, cvd)
			}
			cvds[cvd] = true
		}
	}
}

// The guard: `srun -n 2 gpulaunch -n 2` stops every task with one line
// naming the fix, and starts nothing.
func TestGuardAgainstOneLauncherPerTask(t *testing.T) {
	dir := jobDir(t)
	j := sbatch(t, dir, "#!/bin/bash\nsrun -n 2 gpulaunch -n 2 -- ./my_app\n", "--ntasks=2", "--gres=gpu:4")
	rec, out := j.wait(t, time.Minute)
	if rec["ExitCode"] != "2:0" || len(probes(out)[""]) != 0 || !strings.Contains(out, "gpulaunch: error: -n 2 in each of the 2 ranks") || !strings.Contains(out, "srun --ntasks-per-node=1") {
		t.Fatalf("job %s: ExitCode=%s, want 2:0, no instance and the guard's advice:\n%s", j.id, rec["ExitCode"], out)
	}
}

// From another step of the job (what `srun --jobid J --overlap --pty`
// or an smux pane is), the clients find the job's gpulaunch by
// SLURM_JOB_ID, read its table and an instance's output, and signal it.
func TestControlFromAnotherStep(t *testing.T) {
	dir := jobDir(t)
	j := sbatch(t, dir, "#!/bin/bash\nexec gpulaunch -n 2 -l -- ./my_app\n", "--gres=gpu:2", "-c", "2", "--export=ALL,APP_MODE=wait")
	waitFiles(t, dir, "started.", 2)
	step := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("srun", append([]string{"--jobid", j.id, "--overlap", "-n", "1", "gpulaunch"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("srun --jobid %s --overlap gpulaunch %v: %v\n%s", j.id, args, err, out)
		}
		return string(out)
	}
	if out := step("status"); !strings.Contains(out, "job "+j.id) || !strings.Contains(out, "2 instances: 2 running") {
		t.Errorf("status from another step:\n%s", out)
	}
	if out := step("logs", "1"); !strings.Contains(out, "probe inst=1 ") || strings.Contains(out, "probe inst=0 ") {
		t.Errorf("logs 1:\n%s", out)
	}
	if out := step("signal", "1", "USR1"); !strings.Contains(out, "sent SIGUSR1 to instance 1") {
		t.Errorf("signal 1 USR1: %s", out)
	}
	waitFiles(t, dir, "usr1.", 1)
	if _, err := os.Stat(filepath.Join(dir, "usr1.0")); err == nil {
		t.Error("instance 0 got the USR1 meant for instance 1")
	}
	step("signal", "all", "TERM")
	rec, out := j.wait(t, time.Minute)
	if rec["JobState"] != "COMPLETED" || !strings.Contains(out, "SIGUSR1 from `gpulaunch signal`") {
		t.Errorf("job %s ended %s:\n%s", j.id, rec["JobState"], out)
	}
}
