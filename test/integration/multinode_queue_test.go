//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A task queue over the two nodes of the testbed: one gpulaunch per node
// under srun, node 0's holding the queue (docs/tasks.md, "Several nodes").

// queueJob writes n task lines into a job directory and returns it with
// the srun line that runs them; each task appends its host and slot to
// mark.<task>, and with wait set then waits for the file "go".
func queueJob(t *testing.T, n int, wait bool, extra string) (dir, marker, line string) {
	dir = jobDir(t)
	marker = "glmark-" + filepath.Base(dir)
	var params []string
	for i := 1; i <= n; i++ {
		params = append(params, strconv.Itoa(i))
	}
	os.WriteFile(filepath.Join(dir, "params"), []byte(strings.Join(params, "\n")+"\n"), 0o644)
	task := `echo "$(hostname) $GPULAUNCH_INSTANCE $CUDA_VISIBLE_DEVICES" >>mark.$0`
	if wait {
		task += `; while [ ! -e go ]; do sleep 0.05; done`
	}
	line = fmt.Sprintf("srun gpulaunch -n 2 %s --each-line params --joblog joblog -- sh -c '%s' {} %s\n", extra, task, marker)
	return dir, marker, line
}

// runs reads the marks: the hosts that ran each task.
func runs(dir string) map[int][]string {
	out := map[int][]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "mark.*"))
	for _, f := range files {
		seq, _ := strconv.Atoi(strings.TrimPrefix(filepath.Ext(f), "."))
		data, _ := os.ReadFile(f)
		// a task's shell creates its mark before it writes the line:
		// a mark read in between is empty, and a line not yet whole
		// has no newline, so only whole lines count
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if f := strings.Fields(l); strings.HasSuffix(l, "\n") && len(f) > 0 {
				out[seq] = append(out[seq], f[0])
			}
		}
	}
	return out
}

// recorded reads the joblog: the Host of every record of each task.
func recorded(t *testing.T, dir string) map[int][]string {
	data, err := os.ReadFile(filepath.Join(dir, "joblog"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(l, "\t")
		seq, _ := strconv.Atoi(f[0])
		out[seq] = append(out[seq], f[1])
	}
	return out
}

// onceEach checks that tasks 1..n each ran once and were recorded once,
// by the node that ran them; it returns the tasks per node.
func onceEach(t *testing.T, dir string, n int) map[string]int {
	t.Helper()
	ran, recs := runs(dir), recorded(t, dir)
	perHost := map[string]int{}
	for seq := 1; seq <= n; seq++ {
		if len(ran[seq]) != 1 || len(recs[seq]) != 1 || ran[seq][0] != recs[seq][0] {
			t.Fatalf("task %d ran on %q, recorded as %q: want once, by the node that ran it", seq, ran[seq], recs[seq])
		}
		perHost[ran[seq][0]]++
	}
	return perHost
}

// releaseOnceRunning lets the queue's held tasks go (the "go" file) once
// each of hosts has run two tasks, or after a minute: the first tasks
// wait, so that every node takes part however slowly it joins.
func releaseOnceRunning(dir string, hosts ...string) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !slices.ContainsFunc(hosts, func(h string) bool { return ranOnNode(dir, h) < 2 }) {
			break
		}
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
}

func ranOnNode(dir, host string) int {
	n := 0
	for _, hosts := range runs(dir) {
		for _, h := range hosts {
			if h == host {
				n++
			}
		}
	}
	return n
}

// 400 tasks over 2 nodes × 2 slots: each runs exactly once, both nodes
// take part, and the joblog has 400 records naming the node of each.
func TestMultiNodeQueue(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir, _, line := queueJob(t, 400, true, "")
	j := sbatch(t, dir, "#!/bin/bash\n"+line, "-N", "2", "--ntasks-per-node=1", "--gres=gpu:2")
	// the first tasks wait until the second node runs some: both take
	// part however slowly it joins
	releaseOnceRunning(dir, nodes[1])
	rec, out := j.wait(t, 5*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	perHost := onceEach(t, dir, 400)
	if perHost[nodes[0]] == 0 || perHost[nodes[1]] == 0 || len(perHost) != 2 {
		t.Errorf("tasks per node %v: both nodes must take part", perHost)
	}
	if !strings.Contains(out, "tasks: 400 of 400 finished") || !strings.Contains(out, fmt.Sprintf("node 1 (%s): %d task(s) finished", nodes[1], perHost[nodes[1]])) {
		t.Errorf("the holder's summary:\n%s", out)
	}
	t.Logf("tasks per node: %v", perHost)
}

// Three nodes with GPULAUNCH_NODE_GROUP=2: node 1 relays for node 2
// (docs/tasks.md, "Over many nodes"), over the testbed's network
// namespaces, so that node 2 reaches node 1 at the address node 1's
// connection to node 0 left from. Every task runs once and is recorded
// as the node that ran it; all three take part.
func TestMultiNodeQueueThroughRelay(t *testing.T) {
	nodes := multiNode(t)
	if len(nodes) < 3 {
		t.Skip("needs three nodes: TESTBED_NODES=3 scripts/slurm-testbed.sh up (the multi-node pass of make integration)")
	}
	nodes = nodes[:3]
	dir, _, line := queueJob(t, 300, true, "")
	j := sbatch(t, dir, "#!/bin/bash\nexport GPULAUNCH_NODE_GROUP=2\n"+line, "-N", "3", "--ntasks-per-node=1", "--gres=gpu:2")
	releaseOnceRunning(dir, nodes[1], nodes[2])
	rec, out := j.wait(t, 5*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	perHost := onceEach(t, dir, 300)
	if len(perHost) != 3 {
		t.Errorf("tasks per node %v: all three must take part", perHost)
	}
	if !strings.Contains(out, "in groups of 2 behind relays") || !strings.Contains(out, "node 1 relays for nodes 2..2") ||
		!strings.Contains(out, fmt.Sprintf("node 2 (%s): %d task(s) finished", nodes[2], perHost[nodes[2]])) {
		t.Errorf("the output does not show the relay:\n%s", out)
	}
	t.Logf("tasks per node: %v", perHost)
}

// gpulaunchOf is the pid of the gpulaunch of job's step on node index
// node: both nodes' processes are on this machine.
func gpulaunchOf(t *testing.T, job string, node int) int {
	t.Helper()
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.TrimSpace(string(comm)) == "gpulaunch" && bytes.Contains(env, []byte("\x00SLURM_JOB_ID="+job+"\x00")) &&
			bytes.Contains(env, []byte("\x00SLURM_NODEID="+strconv.Itoa(node)+"\x00")) && bytes.Contains(env, []byte("\x00SLURM_STEP_ID=0\x00")) {
			return pid
		}
	}
	t.Fatalf("no gpulaunch of job %s on node %d", job, node)
	return 0
}

// A SIGKILL of the second node's gpulaunch mid-run: every task is then
// recorded once — by the first node, which takes the lost node's tasks
// back, or by a --resume — and never twice.
func TestMultiNodeQueueNodeKilled(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir, marker, line := queueJob(t, 40, true, "")
	j := sbatch(t, dir, "#!/bin/bash\n"+line, "-N", "2", "--ntasks-per-node=1", "--gres=gpu:2")
	deadline := time.Now().Add(time.Minute)
	for ranOnNode(dir, nodes[1]) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(gpulaunchOf(t, j.id, 1), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	rec, out := j.wait(t, 3*time.Minute)
	for seq, hosts := range recorded(t, dir) {
		if len(hosts) > 1 {
			t.Errorf("task %d recorded %d times", seq, len(hosts))
		}
	}
	if !strings.Contains(out, "node 1 ("+nodes[1]+") is lost") {
		t.Errorf("the holder did not say the node was lost:\n%s", out)
	}
	// then --resume completes what the joblog lacks, if anything
	r := sbatch(t, dir, "#!/bin/bash\n"+strings.Replace(line, "--joblog joblog", "--joblog joblog --resume", 1), "-N", "2", "--ntasks-per-node=1", "--gres=gpu:2")
	rrec, rout := r.wait(t, 3*time.Minute)
	if rrec["JobState"] != "COMPLETED" && !strings.Contains(rout, "all 40 tasks are done") {
		t.Fatalf("resume job %s: %s %s\n%s", r.id, rrec["JobState"], rrec["ExitCode"], rout)
	}
	recs := recorded(t, dir)
	for seq := 1; seq <= 40; seq++ {
		if len(recs[seq]) != 1 {
			t.Errorf("task %d recorded %d times after the resume", seq, len(recs[seq]))
		}
	}
	if left := liveWith(marker); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
	t.Logf("first job: %s %s", rec["JobState"], rec["ExitCode"])
}

// scancel stops both nodes: no task process is left, and the tasks it
// ended are not recorded (a --resume runs them).
func TestMultiNodeQueueScancel(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir, marker, line := queueJob(t, 20, true, "")
	j := sbatch(t, dir, "#!/bin/bash\n"+line, "-N", "2", "--ntasks-per-node=1", "--gres=gpu:2")
	deadline := time.Now().Add(time.Minute)
	for (ranOnNode(dir, nodes[0]) < 2 || ranOnNode(dir, nodes[1]) < 2) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// `gpulaunch status` on the second node: its slots, and the whole
	// queue's counts, which the holder sends it
	var status []byte
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		status, _ = exec.Command("srun", "--jobid", j.id, "--overlap", "-w", nodes[1], "-n", "1", "gpulaunch", "status").CombinedOutput()
		if strings.Contains(string(status), "/20 done") {
			break
		}
	}
	if !strings.Contains(string(status), "queue: 0/20 done") || !strings.Contains(string(status), "on "+nodes[1]) {
		t.Errorf("status on %s:\n%s", nodes[1], status)
	}
	if out, err := exec.Command("scancel", j.id).CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v %s", err, out)
	}
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "CANCELLED" {
		t.Errorf("job %s ended %s, want CANCELLED", j.id, rec["JobState"])
	}
	for end := time.Now().Add(15 * time.Second); len(liveWith(marker)) > 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if left := liveWith(marker); len(left) > 0 {
		t.Errorf("processes outlived job %s: %v", j.id, left)
	}
	recs := recorded(t, dir)
	var seqs []int
	for seq := range recs {
		seqs = append(seqs, seq)
	}
	sort.Ints(seqs)
	if len(seqs) > 0 {
		t.Errorf("tasks ended by scancel were recorded: %v\n%s", seqs, out)
	}
}

// docs/recipes.md's sweep over two nodes, as written: every run once, its
// own output file, both nodes in the joblog.
func TestMultiNodeRecipeSweepNodes(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir := jobDir(t)
	var params strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&params, "0.%03d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "params.txt"), []byte(params.String()), 0o644)
	j := sbatch(t, dir, recipe(t, "sweep-nodes"))
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	for i := 1; i <= 40; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "sweep-"+strconv.Itoa(i)+".out"))
		if err != nil || strings.Count(string(b), "probe ") != 1 || !strings.Contains(string(b), fmt.Sprintf("args=--lr 0.%03d", i)) {
			t.Fatalf("run %d: %v %q", i, err, b)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "sweep.joblog"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		hosts[strings.Split(l, "\t")[1]]++
	}
	// which node ran how many is the queue's business (a node that joins
	// late takes fewer); TestMultiNodeQueue makes both take part
	if hosts[nodes[0]]+hosts[nodes[1]] != 40 {
		t.Errorf("joblog hosts %v: want 40 records, each naming a node of the job", hosts)
	}
	t.Logf("records by node: %v", hosts)
}

// make bench's two-node queue section runs on the two-node testbed (with
// few tasks: the figures are make bench's to report, not a test's).
func TestMultiNodeBenchQueueNodes(t *testing.T) {
	multiNode(t)
	cmd := exec.Command("../../scripts/bench-queue-nodes.sh")
	cmd.Env = append(os.Environ(), "BENCH_RUNS=1", "BENCH_TASKS=200", "BENCH_SRUNS=20", "GL="+filepath.Join(binDir, "gpulaunch"))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "tasks/s") != 3 {
		t.Fatalf("bench-queue-nodes.sh: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
}

// The other layout: one gpulaunch per node under OpenMPI's mpirun, whose
// rank 0 runs under mpirun itself and rank 1 under an orted on the other
// node; they still find each other (the run is PMIx's namespace).
func TestMultiNodeQueueUnderMpirun(t *testing.T) {
	nodes := multiNode(t)[:2]
	dir, _, line := queueJob(t, 30, true, "")
	line = strings.Replace(line, "srun gpulaunch", "mpirun.openmpi --map-by ppr:1:node gpulaunch", 1)
	j := sbatch(t, dir, "#!/bin/bash\n"+line, "-N", "2", "--ntasks-per-node=1", "--gres=gpu:2")
	releaseOnceRunning(dir, nodes[1])
	rec, out := j.wait(t, 3*time.Minute)
	if rec["JobState"] != "COMPLETED" || rec["ExitCode"] != "0:0" {
		t.Fatalf("job %s: %s %s\n%s", j.id, rec["JobState"], rec["ExitCode"], out)
	}
	hosts := map[string]int{}
	for seq, h := range recorded(t, dir) {
		if len(h) != 1 {
			t.Errorf("task %d recorded %d times", seq, len(h))
		}
		hosts[h[0]]++
	}
	if hosts[nodes[0]]+hosts[nodes[1]] != 30 || hosts[nodes[1]] == 0 {
		t.Errorf("records by node %v: want 30, both nodes\n%s", hosts, out)
	}
	if strings.Contains(out, "done, 0 failed") {
		t.Errorf("a progress line in the job's output (mpirun gives rank 0's stdout a pty):\n%s", out)
	}
}
