//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recipes reads docs/recipes.md: every fenced block after a
// "<!-- recipe: NAME -->" line, as written.
func recipes(t *testing.T) map[string]string {
	t.Helper()
	return markedBlocks(t, "../../docs/recipes.md")
}

func markedBlocks(t *testing.T, path string) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- recipe: ([a-z0-9-]+) -->\\s*```[a-z]*\\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(doc), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// The README's batch script ("after") is a recipe of docs/recipes.md, word
// for word, so the test that runs that recipe runs the README's too.
func TestReadmeRecipesAreRecipes(t *testing.T) {
	readme := markedBlocks(t, "../../README.md")
	if len(readme) == 0 {
		t.Fatal("README.md has no <!-- recipe: NAME --> block: its batch script is run by no test")
	}
	all := recipes(t)
	for name, text := range readme {
		if all[name] != text {
			t.Errorf("README.md's recipe %q is not docs/recipes.md's, word for word:\n%s\nthere:\n%s", name, text, all[name])
		}
	}
}

func recipe(t *testing.T, name string) string {
	t.Helper()
	r, ok := recipes(t)[name]
	if !ok {
		t.Fatalf("docs/recipes.md has no recipe %q", name)
	}
	return r
}

// Every recipe in the doc has a test here.
func TestEveryRecipeIsTested(t *testing.T) {
	tested := map[string]bool{"four-instances": true, "four-instances-srun": true, "multi-gpu": true,
		"mpirun-ranks": true, "srun-ranks": true, "interactive": true, "checkpoint-signal": true, "sweep": true, "mps-ranks": true,
		"lumi-ranks":           true, // TestAMDRecipeLUMIRanks, on the AMD testbed
		"sweep-nodes":          true, // TestMultiNodeRecipeSweepNodes, on the two-node testbed
		"ddp-checkpoint-nodes": true, // TestMultiNodeRecipeDDPCheckpoint, on the two-node testbed
		"ddp-checkpoint-batch": true} // TestMultiNodeRecipeDDPCheckpoint, on the two-node testbed
	for name := range recipes(t) {
		if !tested[name] {
			t.Errorf("recipe %q in docs/recipes.md is run by no test", name)
		}
	}
}

func TestRecipeFourInstances(t *testing.T) {
	for _, name := range []string{"four-instances", "four-instances-srun"} {
		t.Run(name, func(t *testing.T) {
			j := sbatch(t, jobDir(t), recipe(t, name))
			rec, out := j.wait(t, time.Minute)
			if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
				t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
			}
			ps := probes(out)[""]
			checkDistinctGPUs(t, name, ps, 4)
			for i, p := range ps {
				if p["args"] != "--shard" || !strings.Contains(out, "--shard "+p["inst"]) || p["inst"] != string(rune('0'+i)) {
					t.Errorf("instance %d: %v", i, p)
				}
				if p["pcomm"] != "gpulaunch" {
					t.Errorf("instance %d's parent is %q: gpulaunch supervises its instances", i, p["pcomm"])
				}
			}
			if !strings.Contains(out, "0: probe inst=0") {
				t.Errorf("-l labels missing:\n%s", out)
			}
		})
	}
}

func TestRecipeMultiGPU(t *testing.T) {
	j := sbatch(t, jobDir(t), recipe(t, "multi-gpu"))
	rec, out := j.wait(t, time.Minute)
	if rec["JobState"] != "COMPLETED" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	ps := probes(out)[""]
	if len(ps) != 1 {
		t.Fatalf("%d instances, want 1\n%s", len(ps), out)
	}
	cvd := strings.Split(ps[0]["cvd"], ",")
	if len(cvd) != 2 {
		t.Fatalf("CUDA_VISIBLE_DEVICES %q, want the job's 2 GPUs", ps[0]["cvd"])
	}
	for _, u := range cvd {
		if g := gpuIndex(t, u); !containsInt(ps[0]["open"], g) {
			t.Errorf("GPU %d is not the job's (openable: %s)", g, ps[0]["open"])
		}
	}
}

// The MPI recipes run twice: with the probe as my_mpi_app (GPUs, parents)
// and with a compiled MPI_Allreduce program (the collective completes).
func TestRecipeRanks(t *testing.T) {
	for _, tc := range []struct{ name, mpiProgram string }{
		{"mpirun-ranks", "allreduce_ompi"},
		{"srun-ranks", "allreduce_ompi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := jobDir(t)
			j := sbatch(t, dir, recipe(t, tc.name))
			rec, out := j.wait(t, time.Minute)
			if rec["JobState"] != "COMPLETED" {
				t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
			}
			ps := probes(out)[""]
			checkDistinctGPUs(t, tc.name, ps, 4)
			for i, p := range ps {
				if p["pcomm"] == "gpulaunch" || p["lr"] != p["inst"] {
					t.Errorf("rank %d: parent %q, LOCAL_RANK %s", i, p["pcomm"], p["lr"])
				}
			}
			bin, _ := os.ReadFile(filepath.Join(binDir, tc.mpiProgram))
			if err := os.WriteFile(filepath.Join(dir, "my_mpi_app"), bin, 0o755); err != nil {
				t.Fatal(err)
			}
			j = sbatch(t, dir, recipe(t, tc.name))
			rec, out = j.wait(t, 2*time.Minute)
			if rec["JobState"] != "COMPLETED" {
				t.Fatalf("job %s with %s: %s %s\n%s", j.id, tc.mpiProgram, rec["JobState"], rec["ExitCode"], out)
			}
			checkAllreduce(t, out, []string{""})
		})
	}
}

// The interactive recipe: salloc, then srun --pty from the salloc shell,
// with a real pseudo-terminal (script(1)) as a user's terminal gives.
func TestRecipeInteractive(t *testing.T) {
	dir := jobDir(t)
	lines := strings.Split(strings.TrimSpace(recipe(t, "interactive")), "\n")
	salloc := strings.Fields(lines[0])
	var cmds []string
	for _, l := range lines[1:] {
		l, _, _ = strings.Cut(l, "#")
		cmds = append(cmds, strings.TrimSpace(l))
	}
	shell := strings.Join(cmds, "; ")
	cmd := exec.Command("script", "-qec", strings.Join(salloc, " ")+" bash -c '"+shell+"'", "/dev/null")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := strings.ReplaceAll(string(out), "\r", "")
	if !regexp.MustCompile(`GPUs:\s+2 — CUDA_VISIBLE_DEVICES=0,1`).MatchString(text) || !strings.Contains(text, "Slurm:     job ") {
		t.Errorf("gpulaunch info in srun --pty does not show the job's 2 GPUs:\n%s", text)
	}
	ps := probes(text)[""]
	checkDistinctGPUs(t, "srun --pty gpulaunch -n 2", ps, 2)
}

// Checkpointing: Slurm's --signal=B:USR1@60 reaches the batch shell, which
// exec made gpulaunch, and every instance gets USR1. The test sends the
// signal itself (scancel --batch --signal, what slurmctld does at the 60 s
// mark) rather than waiting for a two-hour limit.
func TestRecipeCheckpointSignal(t *testing.T) {
	dir := jobDir(t)
	j := sbatch(t, dir, recipe(t, "checkpoint-signal"), "--export=ALL,APP_MODE=wait")
	waitFiles(t, dir, "started.", 4)
	if out, err := exec.Command("scancel", "--batch", "--signal=USR1", j.id).CombinedOutput(); err != nil {
		t.Fatalf("scancel --batch --signal=USR1: %v %s", err, out)
	}
	rec, out := j.wait(t, time.Minute)
	for i := range 4 {
		if _, err := os.Stat(filepath.Join(dir, "usr1."+string(rune('0'+i)))); err != nil {
			t.Errorf("instance %d got no USR1\n%s", i, out)
		}
	}
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Errorf("job %s: %s %s, want COMPLETED 0:0 after the checkpoint\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
}

// The sweep: ten runs on four GPU slots, each run once, each slot on its
// own GPU; submitted again, the joblog says everything is done.
func TestRecipeSweep(t *testing.T) {
	dir := jobDir(t)
	var params strings.Builder
	for i := 1; i <= 10; i++ {
		params.WriteString("0.0" + string(rune('0'+i%10)) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "params.txt"), []byte(params.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	j := sbatch(t, dir, recipe(t, "sweep"))
	rec, out := j.wait(t, time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	var all strings.Builder
	for i := 1; i <= 10; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "sweep-"+strconv.Itoa(i)+".out"))
		if err != nil || strings.Count(string(b), "probe ") != 1 {
			t.Fatalf("run %d: %v %q", i, err, b)
		}
		all.Write(b)
	}
	gpuOfSlot := map[string]string{}
	for _, p := range probes(all.String())[""] {
		if prev, ok := gpuOfSlot[p["inst"]]; ok && prev != p["cvd"] {
			t.Errorf("slot %s ran on %s and %s", p["inst"], prev, p["cvd"])
		}
		gpuOfSlot[p["inst"]] = p["cvd"]
	}
	if n := strings.Count(all.String(), "args=--lr 0.0"); n != 10 {
		t.Errorf("%d runs got --lr from params.txt, want 10:\n%s", n, all.String())
	}
	seen := map[string]bool{}
	for _, g := range gpuOfSlot {
		if seen[g] {
			t.Errorf("two slots share GPU %s: %v", g, gpuOfSlot)
		}
		seen[g] = true
	}
	log, _ := os.ReadFile(filepath.Join(dir, "sweep.joblog"))
	if strings.Count(string(log), "\n") != 11 {
		t.Fatalf("joblog:\n%s", log)
	}
	again := sbatch(t, dir, recipe(t, "sweep"))
	rec, out = again.wait(t, time.Minute)
	if rec["JobState"] != "COMPLETED" || !strings.Contains(out, "all 10 tasks are done by the --joblog") {
		t.Errorf("resubmitted: %s\n%s", rec["JobState"], out)
	}
}

// CSCS's MPS wrapper as gpulaunch does it: 32 instances, 8 on each of the
// 4 GPUs, one stand-in daemon per GPU started before and quit after.
func TestRecipeMPSRanks(t *testing.T) {
	dir := jobDir(t)
	events := filepath.Join(dir, "events")
	j := sbatch(t, dir, recipe(t, "mps-ranks"), "--export=ALL,MPS_STANDIN_EVENTS="+events)
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	perGPU := map[string]int{}
	for _, p := range probes(out)[""] {
		perGPU[p["cvd"]]++
	}
	if len(perGPU) != 4 {
		t.Fatalf("instances per GPU %v, want 8 on each of 4\n%s", perGPU, out)
	}
	for g, n := range perGPU {
		if n != 8 {
			t.Errorf("GPU %s has %d instances, want 8", g, n)
		}
	}
	b, _ := os.ReadFile(events)
	if strings.Count(string(b), "start ") != 4 || strings.Count(string(b), "quit ") != 4 {
		t.Errorf("daemons:\n%s", b)
	}
	if !strings.Contains(out, "instances 0,4,8,12,16,20,24,28 under MPS, 13% of its SMs each") {
		t.Errorf("the summary lacks the sharing:\n%s", out)
	}
}
