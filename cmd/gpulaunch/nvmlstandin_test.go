package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// NVML where it adds something, never fatal (issue 36): real gpulaunch
// processes on a machine tree that shows the H200 of gpu-h200.md as its
// driver lists it, with test/nvmlstandin's libnvidia-ml.so.1 — which
// records every call, and fails or hangs in nvmlInit_v2 when told — found
// by go-nvml's dlopen through LD_LIBRARY_PATH.

// h200 is the GPU: the driver's information file read on the H200.
const (
	h200UUID = "GPU-fdb33233-f52c-ad32-d35d-6c8462444113"
	h200Bus  = "0000:00:06.0"
)

// standinNVML builds the stand-in as libnvidia-ml.so.1 in a directory of
// its own, and returns the directory. Without gcc the test is skipped.
func standinNVML(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: the stand-in libnvidia-ml.so.1 cannot be built")
	}
	dir := t.TempDir()
	src, err := filepath.Abs("../../test/nvmlstandin/nvml.c")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gcc, "-Wall", "-Werror", "-shared", "-fPIC", "-o", filepath.Join(dir, "libnvidia-ml.so.1"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return dir
}

// loadsNVML skips a test that needs NVML loaded: a build without cgo has
// none to load (its Library is nil).
func loadsNVML(t *testing.T) {
	t.Helper()
	if nvml.Library == nil {
		t.Skip("this build has no cgo: it cannot load NVML")
	}
}

// h200Machine is a machine's tree (GLTEST_ROOT) whose driver lists the
// H200 with sysfs NUMA node numaNode, on one NUMA node; its CPUs are this
// machine's, so that the binding it plans can be applied. mig: the
// driver's capabilities are there (MIG instances can be ruled out).
func h200Machine(t *testing.T, numaNode string, mig bool) string {
	t.Helper()
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skipf("this machine's CPUs: %v", err)
	}
	allowed := strings.TrimSpace(string(online))
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				allowed = strings.TrimSpace(v)
			}
		}
	}
	root := t.TempDir()
	files := map[string]string{
		"proc/driver/nvidia/gpus/" + h200Bus + "/information": "Model:           NVIDIA H200\nIRQ:             0\nGPU UUID:        " + h200UUID +
			"\nVideo BIOS:      ??.??.??.??.??\nBus Type:        PCIe\nDMA Size:        52 bits\nDMA Mask:        0xfffffffffffff\nBus Location:    " + h200Bus + "\nDevice Minor:    0\n",
		"sys/bus/pci/devices/" + h200Bus + "/numa_node":     numaNode + "\n",
		"sys/bus/pci/devices/" + h200Bus + "/local_cpulist": string(online),
		"sys/devices/system/cpu/online":                     string(online),
		"sys/devices/system/node/online":                    "0\n",
		"sys/devices/system/node/node0/cpulist":             string(online),
		"proc/self/status":                                  "Name:\tgpulaunch\nCpus_allowed_list:\t" + allowed + "\nMems_allowed_list:\t0\n",
	}
	if mig {
		files["proc/driver/nvidia/capabilities/mig/config"] = "DeviceFileMinor: 1\n"
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// standinRun is gpulaunch on machine with the stand-in of lib, whose
// calls go to the file record; settings are the stand-in's and
// gpulaunch's variables.
func standinRun(t *testing.T, lib, machine, record string, settings []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := gpulaunch(t, args...)
	// not the schedulers' and launchers' variables of an outer job (they
	// would make a run a rank), gpulaunch's own or another GPU's library
	cmd.Env = []string{"GLTEST_MAIN=1", "GLTEST_ROOT=" + machine, "LD_LIBRARY_PATH=" + lib, "NVML_STANDIN_RECORD=" + record}
	for _, kv := range contractEnv() {
		if k, _, _ := strings.Cut(kv, "="); k != "LD_LIBRARY_PATH" && k != "CUDA_VISIBLE_DEVICES" && !strings.HasPrefix(k, "NVML_STANDIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, settings...)
	return cmd
}

// calls is what the stand-in recorded: "load", then its calls.
func calls(t *testing.T, record string) []string {
	t.Helper()
	b, err := os.ReadFile(record)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// mismatch is the failure of a node whose driver was updated without a
// reboot: NVML_ERROR_LIB_RM_VERSION_MISMATCH.
var mismatch = []string{"NVML_STANDIN_INIT_RETURN=18"}

// A run that gives no instance a GPU neither loads NVML nor fails on it.
func TestNVMLStandinGZeroRunDoesNotLoadIt(t *testing.T) {
	lib, machine := standinNVML(t), h200Machine(t, "0", true)
	record := filepath.Join(t.TempDir(), "calls")
	out, err := standinRun(t, lib, machine, record, mismatch, "-n", "2", "-G", "0", "-O", "--", "true").CombinedOutput()
	if err != nil {
		t.Fatalf("-n 2 -G 0: %v\n%s", err, out)
	}
	if c := calls(t, record); len(c) > 0 {
		t.Fatalf("a run without GPUs loaded NVML: %q\n%s", c, out)
	}
}

// info on a node whose NVML init fails: exit 0, the GPUs from the
// driver's files, and NVML's error, in text and in JSON.
func TestNVMLStandinInfoShowsInitError(t *testing.T) {
	loadsNVML(t)
	lib, machine := standinNVML(t), h200Machine(t, "0", true)
	record := filepath.Join(t.TempDir(), "calls")
	var stdout, stderr bytes.Buffer
	cmd := standinRun(t, lib, machine, record, mismatch, "info")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("info: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	for _, want := range []string{h200UUID, h200Bus, "NVML init: Driver/library version mismatch"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("info lacks %q:\n%s", want, &stdout)
		}
	}
	if c := calls(t, record); !slices.Contains(c, "nvmlInit_v2") {
		t.Errorf("info did not ask NVML: %q", c)
	}
	out, err := standinRun(t, lib, machine, record, mismatch, "info", "--json").Output()
	if err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	validateAgainstSchema(t, "info", out)
	var doc struct {
		GPUs []struct {
			UUID string `json:"uuid"`
		} `json:"gpus"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.GPUs) != 1 || doc.GPUs[0].UUID != h200UUID || !strings.Contains(strings.Join(doc.Warnings, "\n"), "NVML init: Driver/library version mismatch") {
		t.Fatalf("info --json: GPUs %+v, warnings %q", doc.GPUs, doc.Warnings)
	}
}

// An init that never answers (go-nvml #152) is waited for
// GPULAUNCH_NVML_WAIT, then info goes on from the driver's files and
// says so.
func TestNVMLStandinInitThatHangsIsBounded(t *testing.T) {
	loadsNVML(t)
	lib, machine := standinNVML(t), h200Machine(t, "0", true)
	record := filepath.Join(t.TempDir(), "calls")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the stand-in sleeps 10 minutes
	defer cancel()
	cmd := standinRun(t, lib, machine, record, []string{"NVML_STANDIN_INIT_SLEEP=600", "GPULAUNCH_NVML_WAIT=1s"}, "info")
	killed := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	killed.Env = cmd.Env
	out, err := killed.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("info still waited for NVML's init after 2 minutes:\n%s", out)
	}
	if err != nil {
		t.Fatalf("info: %v\n%s", err, out)
	}
	for _, want := range []string{h200UUID, "NVML init did not answer in 1s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
}

// While gpulaunch waits for NVML's init it has set no handler (README,
// "Signals", 8: it reads the node): a TERM ends it at once, by the
// signal's default action, for info and a run alike.
func TestNVMLStandinHungInitAnswersSignals(t *testing.T) {
	loadsNVML(t)
	lib, machine := standinNVML(t), h200Machine(t, "0", true)
	for _, args := range [][]string{{"info"}, {"-n", "1", "--", "true"}} {
		t.Run(args[0], func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "calls")
			cmd := standinRun(t, lib, machine, record, []string{"NVML_STANDIN_INIT_SLEEP=600", "GPULAUNCH_NVML_WAIT=10m"}, args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, "the stand-in's nvmlInit_v2", func() bool { return slices.Contains(calls(t, record), "nvmlInit_v2") })
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- cmd.Wait() }()
			select {
			case <-ended:
			case <-time.After(60 * time.Second):
				t.Fatal("gpulaunch waiting for NVML's init did not end at TERM")
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("ended %v, want by TERM", cmd.ProcessState)
			}
		})
	}
}

// Rank mode on the H200's VM — sysfs numa_node -1, one NUMA node — binds
// from the driver's files: NVML is not even loaded.
func TestNVMLStandinRankModeNUMAMinusOneOneNode(t *testing.T) {
	lib, machine := standinNVML(t), h200Machine(t, "-1", true)
	record := filepath.Join(t.TempDir(), "calls")
	gpuSetting := "NVML_STANDIN_GPU=" + h200UUID + "," + h200Bus + ",0"
	out, err := standinRun(t, lib, machine, record, []string{gpuSetting}, "exec", "--dry-run", "--", "true").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CUDA_VISIBLE_DEVICES="+h200UUID) {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "memory: preferred 0") {
		t.Errorf("the rank's memory is not on node 0:\n%s", out)
	}
	if c := calls(t, record); len(c) > 0 {
		t.Fatalf("rank mode loaded NVML where the driver's files tell enough: %q\n%s", c, out)
	}
}

// Rank mode that needs NVML (no driver capabilities to rule MIG out)
// loads it and execs without nvmlShutdown: the process is replaced, and
// the shutdown cost ~10 ms on the H200.
func TestNVMLStandinRankModeExecsWithoutShutdown(t *testing.T) {
	loadsNVML(t)
	lib, machine := standinNVML(t), h200Machine(t, "0", false)
	record := filepath.Join(t.TempDir(), "calls")
	gpuSetting := "NVML_STANDIN_GPU=" + h200UUID + "," + h200Bus + ",0"
	script := `[ "$CUDA_VISIBLE_DEVICES" = ` + h200UUID + ` ]`
	out, err := standinRun(t, lib, machine, record, []string{gpuSetting}, "exec", "--", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	c := calls(t, record)
	if !slices.Contains(c, "nvmlInit_v2") || !slices.Contains(c, "nvmlDeviceGetUUID") {
		t.Fatalf("rank mode did not read the GPU through NVML: %q", c)
	}
	if slices.Contains(c, "nvmlShutdown") {
		t.Fatalf("rank mode shut NVML down before its exec: %q", c)
	}
}
