package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// sleeper starts a process that lives for the test, with env added to
// ours, and returns its pid.
func sleeper(t *testing.T, env ...string) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// DeclaredUsage's rules, each with real processes declaring: the GPU's
// figures, and the per-process samples NVML would give.
func TestDeclaredUsageRules(t *testing.T) {
	const g0, g1 = "GPU-0", "GPU-1"
	declare := func(t *testing.T, dir string, pid int, lines string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("1-2: the GPU sums its processes, each has its own sample", func(t *testing.T) {
		dir := t.TempDir()
		a, b := sleeper(t), sleeper(t)
		declare(t, dir, a, g0+" 20 100\n")
		declare(t, dir, b, g0+" 70 200\n"+g1+" 0 50\n")
		us := DeclaredUsage(dir, []string{g0, g1})
		want := []ProcessUtil{{PID: min(a, b), SM: map[bool]int{true: 20, false: 70}[a < b]}, {PID: max(a, b), SM: map[bool]int{true: 70, false: 20}[a < b]}}
		if us[0].Utilization != 90 || us[0].MemoryUsed != 300<<20 || !us[0].PerProcess || !slices.Equal(us[0].ProcessUtil, want) {
			t.Errorf("GPU 0: %+v, want 90%%, 300 MiB, samples %+v", us[0], want)
		}
		// a process that declared 0 holds memory but has no sample
		if us[1].Utilization != 0 || len(us[1].Processes) != 1 || !us[1].PerProcess || len(us[1].ProcessUtil) != 0 {
			t.Errorf("GPU 1: %+v, want its process listed, per-process samples read, none", us[1])
		}
	})
	t.Run("2: no declaration: read, no sample", func(t *testing.T) {
		us := DeclaredUsage(t.TempDir(), []string{g0})
		if !us[0].PerProcess || len(us[0].ProcessUtil) != 0 || us[0].Utilization != 0 {
			t.Errorf("%+v", us[0])
		}
	})
	t.Run("3: an MPS client's use is sampled on its daemon, its memory stays its own", func(t *testing.T) {
		dir, pipe, nopipe := t.TempDir(), t.TempDir(), t.TempDir()
		daemon := sleeper(t)
		os.WriteFile(filepath.Join(pipe, "nvidia-cuda-mps-control.pid"), []byte(strconv.Itoa(daemon)+"\n"), 0o644)
		c1, c2 := sleeper(t, MPSPipeEnv+"="+pipe), sleeper(t, MPSPipeEnv+"="+pipe)
		lost := sleeper(t, MPSPipeEnv+"="+nopipe) // a pipe directory without a daemon's pid file
		declare(t, dir, c1, g0+" 30 246\n")
		declare(t, dir, c2, g0+" 40 246\n")
		declare(t, dir, lost, g1+" 10 10\n")
		us := DeclaredUsage(dir, []string{g0, g1})
		if want := []ProcessUtil{{PID: daemon, SM: 70}}; us[0].Utilization != 70 || !slices.Equal(us[0].ProcessUtil, want) {
			t.Errorf("GPU 0: %+v, want 70%% and samples %+v", us[0], want)
		}
		if len(us[0].Processes) != 2 || us[0].Processes[0].MemoryUsed != 246<<20 || us[0].Processes[1].MemoryUsed != 246<<20 {
			t.Errorf("GPU 0's clients: %+v, want both with their 246 MiB", us[0].Processes)
		}
		if want := []ProcessUtil{{PID: 0, SM: 10}}; !slices.Equal(us[1].ProcessUtil, want) {
			t.Errorf("GPU 1: %+v, want samples %+v (a server of no known pid)", us[1], want)
		}
	})
}
