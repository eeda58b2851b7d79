//go:build linux

package launcher

import (
	"fmt"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/table"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// newSampler is the run's telemetry.Sampler for spec, sampling every;
// a GPU backend that fails is said once, at info: a user reading GPU% "-"
// in the summary should know whether it means idle or unmeasured.
func (s *supervisor) newSampler(spec Spec, every time.Duration) *telemetry.Sampler {
	own := make([][]string, len(spec.Instances))
	for i, inst := range spec.Instances {
		own[i] = inst.GPUUUIDs
	}
	return telemetry.NewSampler(every, spec.Policy.Monitor != 0, spec.GPUs, own, spec.WatchGPUs, func(err error) {
		s.log.Info(err.Error())
		s.board.setGPUTelemetry(err.Error())
	})
}

// fold takes one sample into every running slot, publishes it, and ends
// a process tree over --mem-per-task.
func (s *supervisor) fold(now time.Time, procs *process.ProcTable, usage []gpu.Usage, sm *telemetry.Sampler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.pid == 0 {
			continue
		}
		tree := procs.Tree(sl.pid)
		if s.fateOf != nil && s.fateOf[i] >= 0 {
			sl.seenPIDs(tree.PIDs)
		}
		sl.sampled(now, tree.CPU(procs), tree.RSS(procs))
		if sm.GPUs() {
			for _, w := range sl.gpus.Observe(i, usage, tree.PIDs, sm.Owner, now.Sub(sl.started)) {
				s.log.Warn(w)
				sl.gpus.Warnings = append(sl.gpus.Warnings, w)
				sl.tl.Event(now, "warning", w)
			}
		}
		util, mem := -1.0, -1.0
		if sl.gpus.LastUtil >= 0 {
			util, mem = float64(sl.gpus.LastUtil), float64(sl.gpus.LastMem)
		}
		sl.tl.Sample(now.Sub(s.begun).Seconds(), util, mem, sl.cpuPercent, float64(sl.rss))
		s.publish(i)
		if s.policy.overMemoryCap(sl.rss, sl.endedBy) {
			s.log.Warn(fmt.Sprintf("instance %d uses %s, over --mem-per-task %s: ending it", i, table.Bytes(sl.rss), table.Bytes(s.policy.MemPerTask)))
			s.terminate(i, job.EndedMemory)
		}
	}
}
