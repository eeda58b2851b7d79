package metrics

import (
	"reflect"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// FromBoard's rules, each by name.
func TestFromBoard(t *testing.T) {
	insts := []launcher.Instance{{GPUUUIDs: []string{"GPU-a", "GPU-b"}}}
	row := func(state string, task int, samples ...telemetry.GPUSample) launcher.Snapshot {
		return launcher.Snapshot{Run: launcher.RunInfo{JobID: "7", StepID: "0"},
			Instances: []launcher.InstanceStatus{{State: state, Task: task, GPUSamples: samples}}}
	}
	for _, tc := range []struct {
		rule  string
		snap  launcher.Snapshot
		check func(Snapshot) any
		want  any
	}{
		{"1: left is every task not finished, a stop's killed ones too",
			launcher.Snapshot{Queue: &taskqueue.QueueStatus{Total: 10, Skipped: 2, Done: 3, Running: 1, Remaining: 1}},
			func(s Snapshot) any { return s.Queue.Left }, 5},
		{"1: left is never negative",
			launcher.Snapshot{Queue: &taskqueue.QueueStatus{Total: 2, Skipped: 2, Done: 1}},
			func(s Snapshot) any { return s.Queue.Left }, 0},
		{"2: a running slot names its task", row(launcher.StateRunning, 4), func(s Snapshot) any { return s.Instances[0].Task }, 4},
		{"2: a stopping slot names its task", row(launcher.StateStopping, 4), func(s Snapshot) any { return s.Instances[0].Task }, 4},
		{"2: a slot whose task ended names none", row(launcher.StateWaiting, 4), func(s Snapshot) any { return s.Instances[0].Task }, 0},
		{"3: the launch's GPUs, sampled or not; the instance's own use with its source, and the GPU's",
			row(launcher.StateRunning, 0, telemetry.GPUSample{UUID: "GPU-b", Util: 90, InstanceUtil: 20, InstanceUtilSource: "processes", Mem: 9}),
			func(s Snapshot) any { return s.Instances[0].GPUs },
			[]GPU{{UUID: "GPU-a", Sampled: false, Utilization: 0}, {UUID: "GPU-b", Sampled: true, Utilization: 0.2, Source: "processes", DeviceUtilization: 0.9, MemoryBytes: 9}}},
		{"3: an untold utilisation stays negative", row(launcher.StateRunning, 0, telemetry.GPUSample{UUID: "GPU-a", Util: -1, InstanceUtil: -1}),
			func(s Snapshot) any {
				return [2]float64{s.Instances[0].GPUs[0].Utilization, s.Instances[0].GPUs[0].DeviceUtilization}
			}, [2]float64{-1, -1}},
		{"the job, step and host label the run", row(launcher.StateRunning, 0),
			func(s Snapshot) any { return [3]string{s.Job, s.Step, s.Host} }, [3]string{"7", "0", "n1"}},
	} {
		if got := tc.check(FromBoard(tc.snap, insts, "n1")); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.rule, got, tc.want)
		}
	}
}
