//go:build integration

// Package integration runs gpulaunch under a real Slurm 22.05 and real MPI
// launchers (scripts/slurm-testbed.sh): jobs are submitted with sbatch,
// srun and salloc, and the assertions read what the jobs printed, the
// job records and /proc. `make integration` brings the testbed up and runs
// them; they need root, and skip with the reason otherwise.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/test/procs"
)

var (
	testbedRoot string // TESTBED_ROOT of scripts/slurm-testbed.sh
	workRoot    string // this run's directory, visible to the jobs
	binDir      string // gpulaunch and the compiled MPI programs
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Println("integration: SKIP: these tests start a Slurm cluster (slurmctld, slurmd, munged) and submit jobs, which needs root; CI runs them as root (`sudo make integration` here)")
		os.Exit(0)
	}
	testbedRoot = os.Getenv("TESTBED_ROOT")
	if testbedRoot == "" {
		testbedRoot = "/var/lib/gpulaunch-testbed"
	}
	if out, err := exec.Command("sinfo", "-h", "-o", "%T").CombinedOutput(); err != nil || !strings.Contains(string(out), "idle") && !strings.Contains(string(out), "mix") && !strings.Contains(string(out), "alloc") {
		fmt.Printf("integration: FAIL: the Slurm testbed is not up (sinfo: %v %s): run `scripts/slurm-testbed.sh up` (make integration does)\n", err, out)
		os.Exit(1)
	}
	code, err := setup()
	if err != nil {
		fmt.Println("integration: FAIL: setup:", err)
		os.Exit(1)
	}
	code = m.Run()
	if code == 0 {
		os.RemoveAll(workRoot)
	} else {
		fmt.Println("integration: job files kept in", workRoot)
	}
	os.Exit(code)
}

func setup() (int, error) {
	if err := os.MkdirAll(filepath.Join(testbedRoot, "work"), 0o755); err != nil {
		return 0, err
	}
	var err error
	if workRoot, err = os.MkdirTemp(filepath.Join(testbedRoot, "work"), "run-"); err != nil {
		return 0, err
	}
	binDir = filepath.Join(workRoot, "bin")
	os.MkdirAll(binDir, 0o755)
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "gpulaunch"), "../../cmd/gpulaunch")
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build: %v\n%s", err, out)
	}
	probe := exec.Command("go", "build", "-o", filepath.Join(binDir, "rendezvous"), "../rendezvous")
	if out, err := probe.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build rendezvous: %v\n%s", err, out)
	}
	// NVIDIA's MPS control program is not on the testbed (no driver):
	// the stand-in from its documented interface is (--mps's tests).
	standIn := exec.Command("go", "build", "-o", filepath.Join(binDir, "nvidia-cuda-mps-control"), "../mpsstandin/nvidia-cuda-mps-control")
	if out, err := standIn.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build the MPS stand-in: %v\n%s", err, out)
	}
	for mpi, cc := range map[string]string{"ompi": "mpicc.openmpi", "mpich": "mpicc.mpich"} {
		out, err := exec.Command(cc, "-O1", "-o", filepath.Join(binDir, "allreduce_"+mpi), "testdata/allreduce.c").CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("%s: %v\n%s", cc, err, out)
		}
	}
	// Jobs inherit the submitting environment (sbatch --export=ALL): the
	// gpulaunch under test first in PATH, the testbed's GPUs described.
	os.Setenv("PATH", binDir+":"+os.Getenv("PATH"))
	os.Setenv("GPULAUNCH_NODE_FILE", filepath.Join(testbedRoot, "node.json"))
	os.Setenv("TESTBED_ROOT", testbedRoot)
	// Jobs run as root here; OpenMPI refuses root without these.
	os.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
	os.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	return 0, nil
}

// jobDir is a directory for one test's job, with the fake app in it.
func jobDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(workRoot, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile("testdata/my_app")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"my_app", "my_mpi_app"} {
		if err := os.WriteFile(filepath.Join(dir, name), app, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ddp, err := os.ReadFile("testdata/ddp_app")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ddp_app"), ddp, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// job is a submitted batch job.
type job struct {
	id  string
	dir string
}

// sbatch submits script from dir; extra are sbatch options.
func sbatch(t *testing.T, dir, script string, extra ...string) job {
	t.Helper()
	file := filepath.Join(dir, fmt.Sprintf("job-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--parsable", "-D", dir, "-o", filepath.Join(dir, "slurm-%j.out")}, extra...)
	cmd := exec.Command("sbatch", append(args, file)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	return job{id: id, dir: dir}
}

// record is the job's entry in slurmctld (kept MinJobAge after the end;
// the testbed has no accounting database, so this is the job's record).
func (j job) record(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("scontrol", "show", "job", "-o", j.id).CombinedOutput()
	if err != nil {
		t.Fatalf("scontrol show job %s: %v\n%s", j.id, err, out)
	}
	rec := map[string]string{}
	for _, f := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			rec[k] = v
		}
	}
	return rec
}

var activeStates = map[string]bool{"PENDING": true, "CONFIGURING": true, "RUNNING": true, "COMPLETING": true, "SUSPENDED": true}

// wait polls until the job has ended and returns its record and output.
func (j job) wait(t *testing.T, limit time.Duration) (map[string]string, string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		rec := j.record(t)
		if !activeStates[rec["JobState"]] {
			return rec, j.output(t)
		}
		if time.Now().After(deadline) {
			exec.Command("scancel", j.id).Run()
			t.Fatalf("job %s still %s after %v; output so far:\n%s", j.id, rec["JobState"], limit, j.output(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (j job) waitState(t *testing.T, state string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if j.record(t)["JobState"] == state {
			return
		}
	}
	t.Fatalf("job %s never %s", j.id, state)
}

func (j job) output(t *testing.T) string {
	b, _ := os.ReadFile(filepath.Join(j.dir, "slurm-"+j.id+".out"))
	return string(b)
}

// probe is one line of testdata/my_app.
type probe map[string]string

var probeRE = regexp.MustCompile(`probe (.*)`)

// probes parses the probe lines of an output, in instance order within
// each section; a section starts at a line "== NAME".
func probes(out string) map[string][]probe {
	got := map[string][]probe{}
	section := ""
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "== "); ok {
			section = strings.TrimSpace(name)
			continue
		}
		m := probeRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p := probe{}
		for _, f := range strings.Fields(m[1]) {
			if k, v, ok := strings.Cut(f, "="); ok {
				p[k] = v
			}
		}
		got[section] = append(got[section], p)
	}
	for _, ps := range got {
		sort.Slice(ps, func(i, j int) bool { return ps[i]["inst"] < ps[j]["inst"] })
	}
	return got
}

// gpuIndex maps a testbed GPU UUID (node.json) to the node's GPU number.
func gpuIndex(t *testing.T, uuid string) int {
	t.Helper()
	i := strings.LastIndexByte(uuid, '-')
	if !strings.HasPrefix(uuid, "GPU-7e57bed0-") || i < 0 {
		t.Fatalf("CUDA_VISIBLE_DEVICES entry %q is not a testbed GPU UUID", uuid)
	}
	n, err := strconv.Atoi(uuid[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkDistinctGPUs: n probes, instance i is instance i, each has one GPU
// of its own, and that GPU is one the job holds (its device opens).
func checkDistinctGPUs(t *testing.T, what string, ps []probe, n int) []int {
	t.Helper()
	if len(ps) != n {
		t.Fatalf("%s: %d probe lines, want %d", what, len(ps), n)
	}
	seen := map[int]bool{}
	var gpus []int
	for i, p := range ps {
		cvd := p["cvd"]
		if strings.Contains(cvd, ",") || cvd == "" {
			t.Errorf("%s: instance %s has CUDA_VISIBLE_DEVICES %q, want one GPU", what, p["inst"], cvd)
			continue
		}
		g := gpuIndex(t, cvd)
		if seen[g] {
			t.Errorf("%s: GPU %d given twice", what, g)
		}
		seen[g] = true
		if !containsInt(p["open"], g) {
			t.Errorf("%s: instance %d got GPU %d, but the job's device cgroup lets it open only %q", what, i, g, p["open"])
		}
		gpus = append(gpus, g)
	}
	return gpus
}

func containsInt(list string, n int) bool {
	for _, f := range strings.Split(list, ",") {
		if f == strconv.Itoa(n) {
			return true
		}
	}
	return false
}

// liveWith lists living processes whose command line holds s.
func liveWith(s string) []string {
	var out []string
	for _, pid := range procs.Living("cmdline", []byte(s)) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		out = append(out, strconv.Itoa(pid)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

func waitFiles(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
		if len(m) >= n {
			return
		}
	}
	t.Fatalf("fewer than %d %s* files in %s after 30 s", n, prefix, dir)
}
