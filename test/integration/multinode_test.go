//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests named MultiNode need the testbed's multi-node layout
// (TESTBED_NODES=2 scripts/slurm-testbed.sh up: nodes gl-node1 and
// gl-node2, each slurmd in its own network namespace); `make integration`
// runs them in a second pass on that layout.
func multiNode(t *testing.T) []string {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv("TESTBED_NODES"))
	if n < 2 {
		t.Skip("needs the multi-node testbed: TESTBED_NODES=2 scripts/slurm-testbed.sh up (the second pass of make integration)")
	}
	out, err := exec.Command("sinfo", "-h", "-N", "-o", "%N %T").CombinedOutput()
	if err != nil {
		t.Fatalf("sinfo: %v %s", err, out)
	}
	var nodes []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "gl-node") && f[1] == "idle" {
			nodes = append(nodes, f[0])
		}
	}
	if len(nodes) < n {
		t.Fatalf("TESTBED_NODES=%d but sinfo shows %d idle gl-node*: %s", n, len(nodes), out)
	}
	return nodes
}

// ident is one line of testdata/ddp_app, with the label it was printed under.
type ident map[string]string

var identRE = regexp.MustCompile(`^(?:(\S+?): )?ident (.*)$`)

func idents(t *testing.T, out string) []ident {
	t.Helper()
	var got []ident
	for _, line := range strings.Split(out, "\n") {
		m := identRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := ident{"label": m[1]}
		for _, f := range strings.Fields(m[2]) {
			if k, v, ok := strings.Cut(f, "="); ok {
				id[k] = v
			}
		}
		got = append(got, id)
	}
	return got
}

// checkWorld: every rank 0..world-1 exactly once, perNode of them on each
// node in node order, all with one world size, one rendezvous, one run
// id, and within a node distinct GPUs.
func checkWorld(t *testing.T, ids []ident, nodes []string, perNode int) {
	t.Helper()
	world := len(nodes) * perNode
	if len(ids) != world {
		t.Fatalf("%d ident lines, want %d", len(ids), world)
	}
	seen := map[int]bool{}
	gpus := map[string]string{}
	master, run := ids[0]["master"], ids[0]["run"]
	if !regexp.MustCompile(`^`+nodes[0]+`:\d+$`).MatchString(master) || !strings.HasPrefix(run, "slurm-") {
		t.Errorf("rendezvous %q run id %q, want %s:PORT and slurm-JOB.STEP", master, run, nodes[0])
	}
	for _, id := range ids {
		r, err := strconv.Atoi(id["rank"])
		if err != nil || r < 0 || r >= world {
			t.Errorf("rank %q out of 0..%d: %v", id["rank"], world-1, id)
			continue
		}
		if seen[r] {
			t.Errorf("rank %d twice", r)
		}
		seen[r] = true
		node := r / perNode
		want := map[string]string{"host": nodes[node], "size": strconv.Itoa(world), "lr": strconv.Itoa(r % perNode),
			"lsize": strconv.Itoa(perNode), "group": strconv.Itoa(node), "gsize": strconv.Itoa(len(nodes)), "master": master, "run": run}
		for k, v := range want {
			if id[k] != v {
				t.Errorf("rank %d: %s=%q, want %q (%v)", r, k, id[k], v, id)
			}
		}
		key := id["host"] + " " + id["cvd"]
		if prev, dup := gpus[key]; dup || id["cvd"] == "" {
			t.Errorf("rank %d on %s has GPU %q, as rank %s", r, id["host"], id["cvd"], prev)
		}
		gpus[key] = id["rank"]
	}
}

// rendezvousJob runs a 2-node job of 4 instances per node whose instances
// meet at one rendezvous, checks the world they formed, and returns its
// identity lines and output.
func rendezvousJob(t *testing.T, nodes []string, script string, sbatchArgs ...string) ([]ident, string) {
	t.Helper()
	j := sbatch(t, jobDir(t), script, append(sbatchArgs, "-N", "2", "--gres=gpu:4", "--export=ALL,APP_MODE=rendezvous")...)
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	ids := idents(t, out)
	checkWorld(t, ids, nodes, 4)
	want := fmt.Sprintf("rendezvous: world 8: ranks 0..7 each once (%s x4, %s x4)", nodes[0], nodes[1])
	if !strings.Contains(out, want) {
		t.Errorf("no %q in:\n%s", want, out)
	}
	return ids, out
}

// srun --nodes=2 --ntasks-per-node=1 gpulaunch -n 4 --ddp: 8 instances with
// global ranks, labelled with their node, meeting at one rendezvous.
func TestMultiNodeInstancesPerNode(t *testing.T) {
	nodes := multiNode(t)[:2]
	ids, out := rendezvousJob(t, nodes, "#!/bin/bash\nsrun gpulaunch -n 4 -l --ddp -- ./ddp_app\n", "--ntasks-per-node=1")
	for _, id := range ids {
		r, _ := strconv.Atoi(id["rank"])
		if want := fmt.Sprintf("%s:%d", id["host"], r%4); id["label"] != want {
			t.Errorf("rank %d labelled %q, want %q (node:instance)", r, id["label"], want)
		}
	}
	for i, n := range nodes {
		if !strings.Contains(out, fmt.Sprintf("%s: node %d of 2, ranks %d..%d of 8", n, i, 4*i, 4*i+3)) {
			t.Errorf("no summary of %s in:\n%s", n, out)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// srun -n 8 over 2 nodes: one rank per GPU, gpulaunch as the rank wrapper.
func TestMultiNodeRankPerGPU(t *testing.T) {
	nodes := multiNode(t)[:2]
	if _, out := rendezvousJob(t, nodes, "#!/bin/bash\nsrun gpulaunch --ddp -- ./ddp_app\n", "--ntasks-per-node=4"); t.Failed() {
		t.Log(out)
	}
}

// A running 2-node job: `gpulaunch status` from another step on the
// second node shows that node's instances; scancel then ends every
// instance on every node, each after a TERM.
func TestMultiNodeStatusAndScancel(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir := jobDir(t)
	marker := "glmark-" + filepath.Base(dir)
	j := sbatch(t, dir, "#!/bin/bash\nsrun gpulaunch -n 4 -- ./ddp_app "+marker+"\n",
		"-N", "2", "--ntasks-per-node=1", "--gres=gpu:4", "--export=ALL,APP_MODE=wait")
	waitFiles(t, dir, "started.", 8)

	status := exec.Command("srun", "--jobid", j.id, "--overlap", "-w", nodes[1], "-n", "1", "gpulaunch", "status")
	out, err := status.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "on "+nodes[1]) || !strings.Contains(string(out), "node 1 of 2: ranks 4..7 of 8") ||
		!regexp.MustCompile(`(?m)^INSTANCE\s+RANK\s+STATE`).Match(out) || !regexp.MustCompile(`(?m)^3\s+7\s+running`).Match(out) {
		t.Errorf("status on %s: %v\n%s", nodes[1], err, out)
	}

	if out, err := exec.Command("scancel", j.id).CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v %s", err, out)
	}
	rec, jobOut := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "CANCELLED" {
		t.Errorf("job %s ended %s, want CANCELLED", j.id, rec["JobState"])
	}
	// Both nodes' processes are on this machine: none may be left. The
	// job's record says CANCELLED while its steps are still completing.
	deadline := time.Now().Add(10 * time.Second)
	for len(liveWith(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := liveWith(marker); len(left) > 0 {
		t.Errorf("processes outlived job %s: %v", j.id, left)
	}
	for r := range 8 {
		if b, err := os.ReadFile(filepath.Join(dir, "term."+strconv.Itoa(r))); err != nil || strings.TrimSpace(string(b)) != "TERM" {
			t.Errorf("rank %d got no TERM (%v)", r, err)
		}
	}
	if t.Failed() {
		t.Log(jobOut)
	}
}

// --ddp over two nodes under srun -K: a rank that fails on the second node
// ends its node's group (gpulaunch TERMs the others and exits with the
// rank's code), and srun -K then ends the first node's: the job fails at
// once instead of its ranks waiting in their collectives for one that is
// gone. srun's exit code is its tasks' highest: the first node's
// gpulaunch, stopped by srun's TERM, exits 143.
func TestMultiNodeFailureEndsEveryNode(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir := jobDir(t)
	marker := "glmark-" + filepath.Base(dir)
	begin := time.Now()
	j := sbatch(t, dir, "#!/bin/bash\nsrun -K gpulaunch -n 4 --ddp --kill-wait 5s -- ./ddp_app "+marker+"\n",
		"-N", "2", "--ntasks-per-node=1", "--gres=gpu:4", "--export=ALL,APP_MODE=fail,FAIL_RANK=5")
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "FAILED" || rec["ExitCode"] == "0:0" || time.Since(begin) > 90*time.Second ||
		!strings.Contains(out, nodes[1]+": task 1: Exited with exit code 3") {
		t.Errorf("job %s: %s %s after %s; want FAILED, the rank's exit 3 on %s, well before the ranks' 300 s sleep\n%s",
			j.id, rec["JobState"], rec["ExitCode"], time.Since(begin), nodes[1], out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(liveWith(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := liveWith(marker); len(left) > 0 {
		t.Errorf("processes outlived job %s: %v", j.id, left)
	}
	for _, r := range []int{4, 6, 7} {
		if b, err := os.ReadFile(filepath.Join(dir, "term."+strconv.Itoa(r))); err != nil || strings.TrimSpace(string(b)) != "TERM" {
			t.Errorf("rank %d, on the failing rank's node, got no TERM (%v)", r, err)
		}
	}
	if t.Failed() {
		t.Logf("job output:\n%s", out)
	}
}

// Checkpointing a --ddp job over two nodes (docs/recipes.md): Slurm's
// --signal=USR1@T reaches every rank on every node, and the job ends
// COMPLETED 0:0 when the ranks checkpoint and exit. The test sends what
// slurmctld sends at the mark: without B:, to every step's processes
// (scancel --signal); with B:, to the batch shell alone (scancel
// --batch), whose trap passes it to srun.
func TestMultiNodeRecipeDDPCheckpoint(t *testing.T) {
	multiNode(t)
	for _, tc := range []struct{ recipe, scancel string }{
		{"ddp-checkpoint-nodes", "--signal=USR1"},
		{"ddp-checkpoint-batch", "--batch --signal=USR1"},
	} {
		t.Run(tc.recipe, func(t *testing.T) {
			dir := jobDir(t)
			j := sbatch(t, dir, recipe(t, tc.recipe), "--export=ALL,APP_MODE=wait")
			waitFiles(t, dir, "started.", 8)
			if out, err := exec.Command("scancel", append(strings.Fields(tc.scancel), j.id)...).CombinedOutput(); err != nil {
				t.Fatalf("scancel %s: %v %s", tc.scancel, err, out)
			}
			rec, out := j.wait(t, 2*time.Minute)
			for r := range 8 {
				if _, err := os.Stat(filepath.Join(dir, "usr1."+strconv.Itoa(r))); err != nil {
					t.Errorf("rank %d got no USR1\n%s", r, out)
				}
			}
			if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
				t.Errorf("job %s: %s %s, want COMPLETED 0:0 after the checkpoint\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
			}
		})
	}
}
