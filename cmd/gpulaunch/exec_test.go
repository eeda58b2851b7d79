package main

import (
	"bytes"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// nvidiaMachine is a machine root with 8 CPUs on two NUMA nodes and two
// NVIDIA GPUs the driver lists in /proc, each local to one node.
func nvidiaMachine() fstest.MapFS {
	info := func(bus, uuid, minor string) []byte {
		return []byte("Model:           NVIDIA H100 80GB HBM3\nGPU UUID:        " + uuid + "\nBus Location:    " + bus + "\nDevice Minor:    " + minor + "\n")
	}
	return fstest.MapFS{
		"sys/devices/system/cpu/online":                    {Data: []byte("0-7\n")},
		"sys/devices/system/node/node0/cpulist":            {Data: []byte("0-3\n")},
		"sys/devices/system/node/node1/cpulist":            {Data: []byte("4-7\n")},
		"proc/self/status":                                 {Data: []byte("Name:\tgpulaunch\nCpus_allowed_list:\t0-7\nMems_allowed_list:\t0-1\n")},
		"proc/driver/nvidia/gpus/0000:18:00.0/information": {Data: info("0000:18:00.0", "GPU-11111111-2222-3333-4444-555555555555", "0")},
		"proc/driver/nvidia/gpus/0000:9a:00.0/information": {Data: info("0000:9a:00.0", "GPU-22222222-2222-3333-4444-555555555555", "1")},
		"sys/bus/pci/devices/0000:18:00.0/numa_node":       {Data: []byte("0\n")},
		"sys/bus/pci/devices/0000:18:00.0/local_cpulist":   {Data: []byte("0-3\n")},
		"sys/bus/pci/devices/0000:9a:00.0/numa_node":       {Data: []byte("1\n")},
		"sys/bus/pci/devices/0000:9a:00.0/local_cpulist":   {Data: []byte("4-7\n")},
		"proc/driver/nvidia/capabilities/mig/config":       {Data: []byte("DeviceFileMinor: 1\n")},
	}
}

// loadCountingNVML is NVML that counts how often it is loaded and then
// says the library is absent, so that the sysfs backend answers either
// way and only the loading tells the paths apart.
type loadCountingNVML struct{ loads *int }

func (l loadCountingNVML) Open(fs.FS) (gpu.Source, error) {
	*l.loads++
	return nil, gpu.ErrNoLibrary
}
func (l loadCountingNVML) Simulate(gpu.Topology, string) (gpu.Source, error) {
	return nil, gpu.ErrNoLibrary
}

// Rank mode binds from the driver's /proc and sysfs when they say all
// binding needs: it does not load NVML, whose initialisation costs a real
// node tens to hundreds of milliseconds that the wrapper rank mode
// replaces does not pay. Nor does a run or plan whose instances see no
// GPU (-G 0). A rank given MIG devices, and every command that reports
// GPU use or names GPUs, still loads it.
func TestRankModeLoadsNVMLOnlyWhenNeeded(t *testing.T) {
	twoRanks := sched.Env{"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
	for _, tc := range []struct {
		name  string
		env   sched.Env
		args  []string
		loads int
		out   string // in stdout
	}{
		{"exec", twoRanks, []string{"exec", "--dry-run", "--", "true"}, 0, "CUDA_VISIBLE_DEVICES=GPU-22222222-2222-3333-4444-555555555555\n"},
		{"run without -n as one rank of several", twoRanks, []string{"--dry-run", "--", "true"}, 0, "CUDA_VISIBLE_DEVICES=GPU-22222222-2222-3333-4444-555555555555\n"},
		{"exec given MIG devices", sched.Env{"CUDA_VISIBLE_DEVICES": "MIG-1"}, []string{"exec", "--dry-run", "--", "true"}, 1, ""},
		{"run of N instances", nil, []string{"-n", "2", "--dry-run", "--", "true"}, 1, ""},
		{"run of instances without a GPU", nil, []string{"-n", "2", "-G", "0", "--dry-run", "--", "true"}, 0, "Plan for 2 instance(s)"},
		{"run of instances without a GPU, shown every GPU", nil, []string{"-n", "2", "-G", "0", "--gpu-visibility", "all", "--dry-run", "--", "true"}, 1, ""},
		{"plan of instances without a GPU", nil, []string{"plan", "-n", "2", "-G", "0"}, 0, "Plan for 2 instance(s)"},
		{"exec without a GPU, given MIG devices", sched.Env{"CUDA_VISIBLE_DEVICES": "MIG-1"}, []string{"exec", "-G", "0", "--dry-run", "--", "true"}, 0, "CUDA_VISIBLE_DEVICES=\n"},
		{"info", nil, []string{"info"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			loads := 0
			env := sched.Env{"PATH": os.Getenv("PATH")}
			for k, v := range tc.env {
				env[k] = v
			}
			a := &app{stdout: &out, stderr: &errb, env: env, root: nvidiaMachine(), nvml: loadCountingNVML{&loads},
				hostname: "testhost", uid: os.Getuid(), tmpRoot: t.TempDir()}
			a.main(tc.args)
			if loads != tc.loads {
				t.Fatalf("NVML loaded %d time(s), want %d\nstdout:\n%s\nstderr:\n%s", loads, tc.loads, &out, &errb)
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Fatalf("stdout lacks %q:\n%s\nstderr:\n%s", tc.out, &out, &errb)
			}
		})
	}
}

// offStartPath are packages whose initialisation every start of gpulaunch
// paid, rank mode's included, for what few commands use: client_golang's
// default registry (its Go and process collectors, procfs), replaced by
// pkg/metrics's own text format; go-nvml's mock servers (their GPUs' MIG
// tables, a UUID generator), replaced by pkg/nvml's simulated devices;
// Gonum's plot (12 fonts parsed at init) and go-latex, replaced by
// pkg/chart's own SVG writer.
var offStartPath = []string{"github.com/prometheus/client_golang/", "github.com/prometheus/procfs",
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/", "github.com/google/uuid", "gonum.org/", "codeberg.org/go-latex/"}

// Nothing on the start path that the command does not use: the packages
// above are not linked, and no package of gpulaunch builds anything at
// init (a package-level regexp was 0.3 ms of each start), read from the
// runtime's own trace of a start (GODEBUG=inittrace=1): what ran and
// what it allocated, not how long it took.
func TestStartPathInits(t *testing.T) {
	cmd := gpulaunch(t, "version")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpulaunch version: %v\n%s", err, &stderr)
	}
	inits := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		inits++
		pkg := f[1]
		for _, off := range offStartPath {
			if strings.HasPrefix(pkg, off) {
				t.Errorf("%s is initialised at every start: %s", pkg, line)
			}
		}
		if bytes, _ := strconv.Atoi(f[7]); strings.HasPrefix(pkg, "github.com/gpulaunch/") && bytes >= 4096 {
			t.Errorf("%s allocates %d bytes at init, at every start: build it at its first use (sync.OnceValue): %s", pkg, bytes, line)
		}
	}
	if inits == 0 {
		t.Fatalf("no init trace in gpulaunch's stderr:\n%s", &stderr)
	}
}
