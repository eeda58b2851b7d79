package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/nvml"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// noGPUMachine is a machine root with two CPUs and no NVIDIA anything.
func noGPUMachine() fstest.MapFS {
	return fstest.MapFS{
		"sys/devices/system/cpu/online":         {Data: []byte("0-1\n")},
		"sys/devices/system/node/node0/cpulist": {Data: []byte("0-1\n")},
		"proc/self/status":                      {Data: []byte("Name:\tgpulaunch\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n")},
	}
}

func runCLI(t *testing.T, env sched.Env, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	if env == nil {
		env = sched.Env{}
	}
	a := &app{stdout: &out, stderr: &errb, env: env, root: noGPUMachine(), nvml: nvml.Library, hostname: "testhost", uid: os.Getuid(), tmpRoot: t.TempDir()}
	code = a.main(args)
	return out.String(), errb.String(), code
}

type planOut struct {
	Slots []struct {
		GPUs []struct {
			UUID      string     `json:"uuid"`
			NUMA      int        `json:"numa_node"`
			LocalCPUs cpuset.Set `json:"local_cpus"`
		} `json:"gpus"`
		CPUs      cpuset.Set `json:"cpus"`
		MemPolicy string     `json:"mem_policy"`
		MemNodes  cpuset.Set `json:"mem_nodes"`
	} `json:"slots"`
	Locality float64 `json:"locality"`
}

func TestPlanSimulatedH100JSON(t *testing.T) {
	stdout, stderr, code := runCLI(t, nil, "plan", "--simulate", "dgx-h100", "-n", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	validateAgainstSchema(t, "plan", []byte(stdout))
	var p planOut
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("plan --json does not parse: %v\n%s", err, stdout)
	}
	if len(p.Slots) != 8 {
		t.Fatalf("%d slots", len(p.Slots))
	}
	gpus := map[string]bool{}
	var used cpuset.Set
	for i, s := range p.Slots {
		if len(s.GPUs) != 1 || gpus[s.GPUs[0].UUID] {
			t.Fatalf("slot %d GPUs %+v not one distinct GPU", i, s.GPUs)
		}
		gpus[s.GPUs[0].UUID] = true
		if s.CPUs.IsEmpty() || s.CPUs.Overlaps(used) {
			t.Fatalf("slot %d CPUs %s empty or overlapping %s", i, s.CPUs, used)
		}
		used = used.Union(s.CPUs)
		if !s.CPUs.IsSubsetOf(s.GPUs[0].LocalCPUs) {
			t.Fatalf("slot %d CPUs %s are not on its GPU's NUMA node %d (%s)", i, s.CPUs, s.GPUs[0].NUMA, s.GPUs[0].LocalCPUs)
		}
		if s.MemPolicy != "preferred" || s.MemNodes.String() != cpuset.New(s.GPUs[0].NUMA).String() {
			t.Fatalf("slot %d memory %s:%s", i, s.MemPolicy, s.MemNodes)
		}
	}
	if p.Locality != 1 {
		t.Fatalf("locality %v", p.Locality)
	}
}

func TestPlanSimulatedH100PairsShareNUMA(t *testing.T) {
	stdout, stderr, code := runCLI(t, nil, "plan", "--simulate", "dgx-h100", "-n", "4", "-G", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p planOut
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatal(err)
	}
	for i, s := range p.Slots {
		if len(s.GPUs) != 2 || s.GPUs[0].NUMA != s.GPUs[1].NUMA {
			t.Fatalf("slot %d GPUs %+v do not share a NUMA node", i, s.GPUs)
		}
	}
}

func TestPlanTableShowsLocality(t *testing.T) {
	stdout, _, code := runCLI(t, nil, "plan", "--simulate", "dgx-a100", "-n", "8")
	if code != 0 || !strings.Contains(stdout, "32-47,160-175") || !strings.Contains(stdout, "Locality:  100%") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

func TestInfoWithoutGPU(t *testing.T) {
	stdout, stderr, code := runCLI(t, nil, "info")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"GPUs:      none found", "no NVIDIA GPU", "CPUs:      2 allowed (0-1)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("info lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, code = runCLI(t, nil, "info", "--json")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil {
		t.Fatalf("info --json exit %d, not JSON:\n%s", code, stdout)
	}
	validateAgainstSchema(t, "info", []byte(stdout))
	if gpus, ok := doc["gpus"].([]any); !ok || len(gpus) != 0 || doc["gpu_reason"] == "" {
		t.Fatalf("info --json gpus %v reason %v", doc["gpus"], doc["gpu_reason"])
	}
}

func TestInfoInSlurmStep(t *testing.T) {
	env := sched.Env{"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "vm", "SLURM_LOCALID": "1",
		"SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_STEP_NODELIST": "vm", "CUDA_VISIBLE_DEVICES": "1"}
	stdout, _, code := runCLI(t, env, "info", "--simulate", "dgx-h100")
	if code != 0 || !strings.Contains(stdout, "job 42, step 0 on vm") || !strings.Contains(stdout, "local rank 1 of 2 (SLURM_LOCALID)") ||
		!strings.Contains(stdout, "0000:2a:00.0") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name  string
		env   sched.Env
		args  []string
		words string
	}{
		{"no command", nil, nil, "no command"},
		{"unknown command", nil, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", nil, []string{"plan", "-n", "2", "--gpus", "3"}, "unknown flag: --gpus"},
		{"plan without -n", nil, []string{"plan", "--simulate", "dgx-h100"}, "-n N is required"},
		{"-n not a number", nil, []string{"plan", "-n", "four"}, `invalid argument "four"`},
		{"-n zero", nil, []string{"plan", "--simulate", "dgx-h100", "-n", "0"}, "at least 1"},
		{"-n negative", nil, []string{"plan", "--simulate", "dgx-h100", "-n", "-3"}, "at least 1"},
		{"more instances than GPUs", nil, []string{"plan", "--simulate", "dgx-h100", "-n", "9"}, "needs 9 GPU(s), the allocation has 8"},
		{"GPUs per task too many", nil, []string{"plan", "--simulate", "perlmutter-gpu", "-n", "3", "-G", "2"}, "needs 6 GPU(s), the allocation has 4"},
		{"negative -G", nil, []string{"plan", "--simulate", "dgx-h100", "-n", "1", "-G", "-1"}, "cannot be negative"},
		{"too many CPUs", nil, []string{"plan", "--simulate", "dgx-h100", "-n", "8", "-c", "100"}, "needs 800 CPUs, the allocation has 224"},
		{"bad mem-bind", nil, []string{"plan", "--simulate", "dgx-h100", "-n", "1", "--mem-bind", "strict"}, "preferred, bind or none"},
		{"bad log format", nil, []string{"info", "--log-format", "xml"}, `--log-format "xml"`},
		{"unknown simulated node", nil, []string{"info", "--simulate", "dgx-z9"}, "no simulated node"},
		{"missing topology file", nil, []string{"info", "--simulate", "/nonexistent/node.json"}, "no such file"},
		{"info with an argument", nil, []string{"info", "extra"}, "takes no arguments"},
		{"plan with a command", nil, []string{"plan", "-n", "1", "--", "app"}, "plan takes no command"},
		{"no GPU on this machine", nil, []string{"plan", "-n", "2"}, "the allocation has 0"},
		{"garbage local rank", sched.Env{"OMPI_COMM_WORLD_LOCAL_RANK": "x"}, []string{"info"}, "OMPI_COMM_WORLD_LOCAL_RANK"},
		{"rank beyond size", sched.Env{"MPI_LOCALRANKID": "4", "MPI_LOCALNRANKS": "4"}, []string{"info"}, "not below MPI_LOCALNRANKS"},
		{"salloc shell has no GPU to plan", sched.Env{"SLURM_JOB_ID": "3"}, []string{"plan", "--simulate", "dgx-h100", "-n", "1"}, "salloc shell"},
		{"empty CUDA_VISIBLE_DEVICES", sched.Env{"CUDA_VISIBLE_DEVICES": ""}, []string{"plan", "--simulate", "dgx-h100", "-n", "1"}, "empty: no GPU"},
		{"exec without a command", nil, []string{"exec"}, "no command to exec"},
		{"exec on a simulated node", nil, []string{"exec", "--simulate", "dgx-h100", "--", "true"}, "binds this process on this machine"},
		{"exec -n", nil, []string{"exec", "-n", "2", "--", "true"}, "exec -n 2: rank mode takes no -n"},
		{"simulate and node file", nil, []string{"info", "--simulate", "dgx-h100", "--node-file", "x.json"}, "give one"},
		{"missing node file", nil, []string{"info", "--node-file", "/nonexistent/node.json"}, "--node-file: node file"},
		{"missing node file from env", sched.Env{"GPULAUNCH_NODE_FILE": "/nonexistent/n.json"}, []string{"info"}, "GPULAUNCH_NODE_FILE=/nonexistent/n.json"},
		{"report in a missing directory", sched.Env{"PATH": "/bin:/usr/bin"}, []string{"-n", "1", "-G", "0", "--report", "/nonexistent/dir/r.json", "--", "true"}, "does not exist (create it: mkdir -p /nonexistent/dir): nothing was started"},
		{"bad monitor interval", sched.Env{"PATH": "/bin:/usr/bin"}, []string{"-n", "1", "-G", "0", "--monitor-interval", "often", "--", "true"}, "--monitor-interval"},
		{"rank mode without GPUs", sched.Env{"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2", "PATH": "/bin:/usr/bin"}, []string{"--", "true"}, "give -G 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.env, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "gpulaunch: error: ") || !strings.Contains(last, tc.words) {
				t.Fatalf("error line %q lacks %q", last, tc.words)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}, {"info", "-h"}, {"version"}} {
		stdout, stderr, code := runCLI(t, nil, args...)
		if code != 0 || stdout == "" || stderr != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, stdout, stderr)
		}
	}
	stdout, _, _ := runCLI(t, nil, "--help")
	if !strings.Contains(stdout, "Examples:") {
		t.Error("--help has no examples")
	}
}
