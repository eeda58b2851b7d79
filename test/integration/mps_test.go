//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// A task queue with --mps in a Slurm job of 4 (fake) GPUs and 8 task
// slots, with the MPS stand-in: one daemon per GPU, up before the first
// task (each task finds its GPU's pid file and an answer), the two slots
// of a GPU told its one pipe directory; after the job every daemon has
// quit and nothing is left in the runtime directory.
func TestQueueUnderMPS(t *testing.T) {
	dir := jobDir(t)
	var params strings.Builder
	for i := 1; i <= 16; i++ {
		params.WriteString(strings.Repeat("x", 1+i%3) + "\n")
	}
	os.WriteFile(filepath.Join(dir, "params.txt"), []byte(params.String()), 0o644)
	task := `f=$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid; test -s "$f" || exit 9; echo get_server_list | nvidia-cuda-mps-control || exit 8; echo "task $GPULAUNCH_TASK gpu $GPULAUNCH_GPUS pipe $CUDA_MPS_PIPE_DIRECTORY threads $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"`
	script := "#!/bin/bash\nexport MPS_STANDIN_EVENTS=$PWD/events XDG_RUNTIME_DIR=$(mktemp -d /tmp/glq.XXXXXX)\n" +
		"gpulaunch -n 8 -O --mps --each-line params.txt --joblog jl -- sh -c '" + task + "'\necho \"== exit $?\"\nls $XDG_RUNTIME_DIR/gpulaunch | grep -c mps- || true\nrm -rf $XDG_RUNTIME_DIR\n"
	j := sbatch(t, dir, script, "--gres=gpu:4", "-c", "8")
	rec, out := j.wait(t, 2*time.Minute)
	if rec["JobState"] != "COMPLETED" || !strings.Contains(out, "== exit 0") {
		t.Fatalf("job %s: %s\n%s", j.id, rec["JobState"], out)
	}
	pipeOf := map[string]string{} // GPU → pipe directory
	tasks := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 8 || f[0] != "task" {
			continue
		}
		tasks++
		gpu, pipe := f[3], f[5]
		if have, ok := pipeOf[gpu]; ok && have != pipe {
			t.Errorf("GPU %s's tasks were told two pipe directories: %s and %s", gpu, have, pipe)
		}
		pipeOf[gpu] = pipe
		if f[7] != "50" {
			t.Errorf("task %s: thread percentage %s, want 50 (2 slots per GPU)", f[1], f[7])
		}
	}
	pipes := map[string]bool{}
	for _, p := range pipeOf {
		pipes[p] = true
	}
	if tasks != 16 || len(pipeOf) != 4 || len(pipes) != 4 {
		t.Fatalf("%d tasks on %d GPUs with %d pipe directories, want 16 on 4 with 4:\n%s", tasks, len(pipeOf), len(pipes), out)
	}
	events, _ := os.ReadFile(filepath.Join(dir, "events"))
	var starts, quits []string
	for _, l := range strings.Split(strings.TrimSpace(string(events)), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "start" {
			starts = append(starts, f[1])
		} else if len(f) > 1 && f[0] == "quit" {
			quits = append(quits, f[1])
		}
	}
	sort.Strings(starts)
	sort.Strings(quits)
	if len(starts) != 4 || strings.Join(starts, ",") != strings.Join(quits, ",") {
		t.Errorf("daemons started %v, quit %v: want the same 4\n%s", starts, quits, events)
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "\n0") {
		t.Errorf("the runtime directory still holds an MPS directory:\n%s", out)
	}
}
