package launcher

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// A slot thread copies its processes' output itself when the kernel hands
// out pidfds, and through goroutines when it does not; both ways must
// give the same lines, labelled with the task that wrote them, including
// a last line without a newline, output past a pipe's capacity, and the
// output of a process a task left behind while the slot goes on.
func TestSlotCopiesOutputWithAndWithoutPidfd(t *testing.T) {
	sh := func(seq int, script string) job.Task {
		return job.Task{Seq: seq, Path: "/bin/sh", Args: []string{"sh", "-c", script}, Command: script}
	}
	for _, pidfd := range []bool{true, false} {
		t.Run(fmt.Sprintf("pidfd=%v", pidfd), func(t *testing.T) {
			if pidfd && !process.KernelPidfd() {
				t.Skip("this kernel hands out no pidfds")
			}
			process.NoPidfd = !pidfd
			defer func() { process.NoPidfd = false }()
			q := taskqueue.NewQueue(taskqueue.QueueConfig{Total: 4, Tasks: []job.Task{
				sh(1, "echo one; echo err >&2; printf partial"),
				sh(2, "(sleep 0.3; echo late) & echo two"),
				sh(3, "seq 20000"),
				sh(4, "sleep 1; echo four"),
			}})
			var out, errOut bytes.Buffer
			res, err := Run(Spec{
				Instances: []Instance{{Path: "/bin/true", Args: []string{"true"}, Env: os.Environ()}},
				Label:     true, Stdout: &out, Stderr: &errOut, Work: QueueTasks{q}, Policy: Policy{KillWait: time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			outs := res.Outcomes
			if outs[0].Tasks != 4 || outs[0].TasksFailed != 0 {
				t.Fatalf("tasks %d, failed %d; want 4, 0", outs[0].Tasks, outs[0].TasksFailed)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			var seq []string
			rest := lines[:0:0]
			for _, l := range lines {
				if strings.HasPrefix(l, "3: ") {
					seq = append(seq, l)
				} else {
					rest = append(rest, l)
				}
			}
			want := []string{"1: one", "1: partial", "2: two", "2: late", "4: four"}
			if strings.Join(rest, "|") != strings.Join(want, "|") {
				t.Errorf("stdout without task 3:\n%s\nwant:\n%s", strings.Join(rest, "\n"), strings.Join(want, "\n"))
			}
			if len(seq) != 20000 || seq[0] != "3: 1" || seq[19999] != "3: 20000" {
				t.Errorf("task 3 wrote %d lines, %q … %q; want 20000, 3: 1 … 3: 20000", len(seq), seq[0], seq[len(seq)-1])
			}
			if errOut.String() != "1: err\n" {
				t.Errorf("stderr %q, want %q", errOut.String(), "1: err\n")
			}
		})
	}
}

// A run whose slot thread cannot be bound starts nothing: the threads are
// bound before any slot forks, so the instances that could be bound are
// not started and then killed.
func TestUnboundSlotStartsNothing(t *testing.T) {
	dir := t.TempDir()
	// An instance's output file is made as it starts, before its fork: it
	// is there even when the instance is killed at once.
	inst := func(i int, cpus string) Instance {
		return Instance{Index: i, Path: "/bin/sleep", Args: []string{"sleep", "10"}, Env: os.Environ(),
			Stdout: fmt.Sprintf("%s/out-%d", dir, i), Binding: process.Binding{CPUs: cpuset.MustParse(cpus)}}
	}
	// CPU 60000 is no CPU of any machine: sched_setaffinity refuses a mask
	// with no online CPU in it.
	_, err := Run(Spec{Instances: []Instance{inst(0, "0"), inst(1, "60000"), inst(2, "0")}, Policy: Policy{KillWait: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "instance 1") {
		t.Fatalf("Run: %v; want the error of instance 1's binding", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d instance(s) started although instance 1 could not be bound", len(left))
	}
}
