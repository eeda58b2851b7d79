package gpu

import (
	"os"
	"path/filepath"
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
// the given GPUs.
func DeclaredUsage(dir string, uuids []string) []Usage {
	byUUID := map[string]*Usage{}
	out := make([]Usage, len(uuids))
	for i, id := range uuids {
		out[i] = Usage{UUID: id}
		byUUID[id] = &out[i]
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
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			u, ok := byUUID[f[0]]
			util, err1 := strconv.Atoi(f[1])
			mib, err2 := strconv.ParseUint(f[2], 10, 64)
			if !ok || err1 != nil || err2 != nil || util < 0 {
				continue
			}
			u.Utilization = min(100, u.Utilization+util)
			u.MemoryUsed += mib << 20
			u.Processes = append(u.Processes, GPUProcess{PID: pid, MemoryUsed: mib << 20})
		}
	}
	return out
}

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
