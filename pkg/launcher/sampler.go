//go:build linux

package launcher

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// sampler measures every running slot each tick: its process tree's CPU
// time and resident memory from one /proc scan, and its GPUs' use. It is
// a goroutine of its own, in the run's group: the scan and the GPU query
// take milliseconds (an NVML call can take far longer on a sick driver),
// and neither must delay a signal or a start. It reads outside the
// supervisor's lock and folds each sample in under it (supervisor.fold).
type sampler struct {
	every time.Duration
	// gpus is the GPU backend; nil: no GPU telemetry (off, no GPU to
	// watch, or the backend failed once).
	gpus GPUUsage
	// watched are the GPUs sampled: the slots' own, then the
	// allocation's others, each once.
	watched []string
	// owner maps a GPU's UUID to the slot it belongs to.
	owner map[string]int
}

func newSampler(spec Spec, every time.Duration) *sampler {
	sm := &sampler{every: every, gpus: spec.GPUs, owner: map[string]int{}}
	for i, inst := range spec.Instances {
		for _, u := range inst.GPUUUIDs {
			if _, dup := sm.owner[u]; !dup {
				sm.owner[u] = i
				sm.watched = append(sm.watched, u)
			}
		}
	}
	for _, u := range spec.WatchGPUs {
		if !slices.Contains(sm.watched, u) {
			sm.watched = append(sm.watched, u)
		}
	}
	if spec.Policy.Monitor == 0 || len(sm.watched) == 0 {
		sm.gpus = nil
	}
	return sm
}

// run samples every tick until ctx ends.
func (sm *sampler) run(ctx context.Context, s *supervisor) error {
	if sm.every <= 0 {
		return nil
	}
	t := time.NewTicker(sm.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			procs := process.ScanProcs()
			s.fold(now, &procs, sm.gpuUsage(s.log, s.board), sm)
		}
	}
}

// gpuUsage samples the watched GPUs; a backend that fails once is not
// asked again.
func (sm *sampler) gpuUsage(log *zap.Logger, board *Board) []gpu.Usage {
	if sm.gpus == nil {
		return nil
	}
	usage, err := sm.gpus.Usage(sm.watched)
	if err != nil {
		// Said once, at info: a user reading GPU% "-" in the summary
		// should know whether it means idle or unmeasured.
		log.Info(err.Error())
		board.setGPUTelemetry(err.Error())
		sm.gpus = nil
		return nil
	}
	return usage
}

// fold takes one sample into every running slot, publishes it, and ends
// a process tree over --mem-per-task.
func (s *supervisor) fold(now time.Time, procs *process.ProcTable, usage []gpu.Usage, sm *sampler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.pid == 0 {
			continue
		}
		tree := procs.Tree(sl.pid)
		sl.sampled(now, tree.CPU(procs), tree.RSS(procs))
		if sm.gpus != nil {
			for _, w := range sl.gpus.observe(i, usage, tree.PIDs, sm.owner, now.Sub(sl.started)) {
				s.log.Warn(w)
				sl.gpus.warnings = append(sl.gpus.warnings, w)
				sl.tl.event(now, "warning", w)
			}
		}
		util, mem := -1.0, -1.0
		if sl.gpus.lastUtil >= 0 {
			util, mem = float64(sl.gpus.lastUtil), float64(sl.gpus.lastMem)
		}
		sl.tl.buf.add(now.Sub(s.begun).Seconds(), util, mem, sl.cpuPercent, float64(sl.rss))
		s.publish(i)
		if s.policy.overMemoryCap(sl.rss, sl.endedBy) {
			s.log.Warn(fmt.Sprintf("instance %d uses %s, over --mem-per-task %s: ending it", i, FormatBytes(sl.rss), FormatBytes(s.policy.MemPerTask)))
			s.terminate(i, job.EndedMemory)
		}
	}
}
