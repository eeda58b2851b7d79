// Package procs is what the tests read of the processes that run: the
// living ones whose environment or command line holds a marker, read in
// /proc — the truth, whatever gpulaunch believes. One copy for every
// package's tests (cmd/gpulaunch, pkg/process, test/integration).
package procs

import (
	"bytes"
	"os"
	"strconv"
)

// Living lists the living processes whose /proc/PID/file ("environ" or
// "cmdline") holds want.
func Living(file string, want []byte) []int {
	var out []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || len(stat) < i+3 || dead(stat[i+2]) {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + e.Name() + "/" + file); bytes.Contains(b, want) {
			out = append(out, pid)
		}
	}
	return out
}

// dead: a state in /proc/PID/stat that is an end, not a process left
// behind: a zombie (Z), or one the kernel is releasing (X, x) — a killed
// grandchild still a zombie when gpulaunch exited is reaped by init an
// instant later, and shows X while it is (make test once counted two as
// survivors).
func dead(state byte) bool { return state == 'Z' || state == 'X' || state == 'x' }
