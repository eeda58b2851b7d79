package gpu

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SimulatedUsageEnv names the directory where apps on a simulated or
// described node declare their GPU use. Such a node has no driver to ask
// which processes sit on a GPU and how busy it is, so a fake app writes a
// file named after its pid, one line per GPU it "uses":
//
//	GPU-<uuid> <utilization %> <memory MiB>
//
// and the simulated backends answer Usage from those files as NVML would
// from the driver. This is what lets `make test` exercise telemetry, the
// report and launch verification end to end without a GPU.
const SimulatedUsageEnv = "GPULAUNCH_SIMULATED_USAGE_DIR"

// DeclaredUsage reads the declarations of living processes in dir for
// the given GPUs, and answers as NVML would from the driver. The rules:
//  1. A GPU's utilisation is the sum of its declarations, at most 100;
//     its memory in use theirs; each declaring process is on its list of
//     processes with the memory it declared.
//  2. Every GPU has per-process samples (PerProcess): one per process
//     that declared a use above 0, as NVML gives a sample only to a
//     process with use in the period; one that declared 0 has none.
//  3. The use of a declaring process that is an MPS client (its
//     environment names CUDA_MPS_PIPE_DIRECTORY) is sampled on its MPS
//     server, not on it (mpsServer): a real H200 gave all of it to
//     nvidia-cuda-mps-server and none to the clients, whose memory stays
//     their own (rule 1).
//
// A described node of another vendor, or with MIG devices, then answers
// as its driver does (AsTheDriverGives).
func DeclaredUsage(dir string, uuids []string) []Usage {
	byUUID := map[string]int{}
	out := make([]Usage, len(uuids))
	sm := make([]map[int]int, len(uuids)) // per GPU: SM% by the pid sampled
	for i, id := range uuids {
		out[i] = Usage{UUID: id, PerProcess: true}
		byUUID[id] = i
		sm[i] = map[int]int{}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sampled := pid
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			i, ok := byUUID[f[0]]
			util, err1 := strconv.Atoi(f[1])
			mib, err2 := strconv.ParseUint(f[2], 10, 64)
			if !ok || err1 != nil || err2 != nil || util < 0 {
				continue
			}
			u := &out[i]
			u.Utilization = min(100, u.Utilization+util)
			u.MemoryUsed += mib << 20
			u.Processes = append(u.Processes, GPUProcess{PID: pid, MemoryUsed: mib << 20})
			if util > 0 {
				if sampled == pid {
					sampled = mpsServer(pid)
				}
				sm[i][sampled] += util
			}
		}
	}
	for i := range out {
		out[i].ProcessUtil = processSamples(sm[i])
	}
	return out
}

// processSamples are the samples of a GPU by pid, in pid order, each at
// most 100%.
func processSamples(byPID map[int]int) []ProcessUtil {
	var out []ProcessUtil
	for pid, pct := range byPID {
		out = append(out, ProcessUtil{PID: pid, SM: min(100, pct)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// mpsServer is the process a declaring process pid's use is sampled on
// (DeclaredUsage's rule 3): pid itself, unless it is an MPS client, whose
// use goes to its MPS server. A simulated node has no
// nvidia-cuda-mps-server: the stand-in for it is the MPS control daemon
// of the client's pipe directory (its nvidia-cuda-mps-control.pid), which
// on a real node is the server's parent — a process of no instance, as
// the server is; 0 where that file cannot be read (a daemon gpulaunch
// did not start, one that is gone), still no instance's process.
func mpsServer(pid int) int {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return pid
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		dir, ok := strings.CutPrefix(kv, MPSPipeEnv+"=")
		if !ok || dir == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "nvidia-cuda-mps-control.pid")) // mps.PidFile
		if err != nil {
			return 0
		}
		if server, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && server > 0 {
			return server
		}
		return 0
	}
	return pid
}

// MPSPipeEnv is the variable that makes a CUDA process an MPS client: the
// pipe directory of the MPS control daemon it talks to (NVIDIA's MPS
// documentation).
const MPSPipeEnv = "CUDA_MPS_PIPE_DIRECTORY"

// alive: the process exists and is not a zombie (a dead app's
// declaration no longer counts, even before it is reaped).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// AsTheDriverGives narrows declared usage (DeclaredUsage) of node's
// devices to what their driver tells, so that a described AMD, Intel or
// MIG node takes the code paths a real one does. The rules, per device:
//  1. An NVIDIA GPU: as declared (NVML's per-process samples, its
//     utilisation).
//  2. A MIG device: no per-process samples (nvml.h: not supported on MIG
//     devices), and no utilisation either (-1: NVML's utilisation rates
//     are not supported on a MIG device); processes and memory stay.
//  3. An AMD or Intel GPU: no per-process samples (amdgpu's sysfs and
//     Intel's drivers publish a device's use, not a process's);
//     utilisation, processes and memory stay.
//  4. A device the node does not have: as declared.
func AsTheDriverGives(node Node, usage []Usage) []Usage {
	devices := map[string]GPU{}
	for _, g := range node.Flatten() {
		devices[g.UUID] = g
	}
	for i, u := range usage {
		g, ok := devices[u.UUID]
		switch {
		case !ok:
		case g.Vendor == NVIDIA && g.Parent != "":
			usage[i].PerProcess, usage[i].ProcessUtil, usage[i].Utilization = false, nil, -1
		case g.Vendor != NVIDIA:
			usage[i].PerProcess, usage[i].ProcessUtil = false, nil
		}
	}
	return usage
}
