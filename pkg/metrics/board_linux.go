package metrics

import (
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// InstanceStates are every state a row of the board may show, the values
// of the metrics' state enum.
var InstanceStates = []string{launcher.StateStarting, launcher.StateRunning, launcher.StateStopping,
	launcher.StateRestarting, launcher.StateWaiting, launcher.StateExited}

// BoardCollector is the collector of a run's board: read at every
// collect, each instance's GPUs by UUID from the launch (insts), the
// node's name host.
func BoardCollector(board *launcher.Board, insts []launcher.Instance, host string) *Collector {
	return NewCollector(func() Snapshot { return FromBoard(board.Snapshot(), insts, host) }, InstanceStates)
}

// FromBoard is the board's table as the collector reads it. Its rules:
//  1. Left is every task not finished — waiting, running, or ended
//     unfinished by a signal — as the summary and --resume count them
//     (Total − Skipped − Done): Remaining + Running would lose the tasks
//     a stop killed.
//  2. The board keeps a slot's last task after it ended; the metrics
//     name a task only while a process of it lives (running or
//     stopping): the file is kept after the run, and must not show tasks
//     running there.
//  3. An instance's GPUs are the launch's (insts, by UUID), each once,
//     with its last sample where one was taken (Sampled): the instance's
//     own use with its source, and the GPU's; a utilisation not measured
//     (-1) stays negative (ratio).
func FromBoard(s launcher.Snapshot, insts []launcher.Instance, host string) Snapshot {
	ms := Snapshot{Job: s.Run.JobID, Step: s.Run.StepID, Host: host, Finished: s.Run.Finished}
	if q := s.Queue; q != nil {
		ms.Queue = &Queue{Total: q.Total, Done: q.Done, Failed: q.Failed, Running: q.Running, Left: max(0, q.Total-q.Skipped-q.Done)}
	}
	for i, r := range s.Instances {
		mi := Instance{Index: r.Index, Rank: r.Rank, State: r.State, CPUSeconds: r.CPUSeconds, RSS: r.RSS, Restarts: r.Restarts}
		if r.State == launcher.StateRunning || r.State == launcher.StateStopping {
			mi.Task = r.Task
		}
		sampled := map[string]telemetry.GPUSample{}
		for _, g := range r.GPUSamples {
			sampled[g.UUID] = g
		}
		if i < len(insts) {
			for _, u := range insts[i].GPUUUIDs {
				g, ok := sampled[u]
				mi.GPUs = append(mi.GPUs, GPU{UUID: u, Sampled: ok, Utilization: ratio(g.InstanceUtil), Source: g.InstanceUtilSource,
					DeviceUtilization: ratio(g.Util), MemoryBytes: g.Mem})
			}
		}
		ms.Instances = append(ms.Instances, mi)
	}
	return ms
}

// ratio is a percentage as a ratio; -1 (unknown) stays negative.
func ratio(pct int) float64 {
	if pct < 0 {
		return -1
	}
	return float64(pct) / 100
}
