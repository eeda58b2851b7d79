//go:build linux

package telemetry

import (
	"context"
	"slices"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// Sampler measures every running slot each tick: its process tree's CPU
// time and resident memory from one /proc scan, and its GPUs' use. It is
// a goroutine of its own, in the run's group: the scan and the GPU query
// take milliseconds (an NVML call can take far longer on a sick driver),
// and neither must delay a signal or a start. It reads outside the
// supervisor's lock, and its Fold takes each sample in under it
// (launcher's supervisor.fold).
type Sampler struct {
	every time.Duration
	// gpus is the GPU backend; nil: no GPU telemetry (off, no GPU to
	// watch, or the backend failed once).
	gpus GPUUsage
	// watched are the GPUs sampled: the slots' own, then the
	// allocation's others, each once.
	watched []string
	// Owner maps a GPU's UUID to the slot it belongs to.
	Owner map[string]int
	// failed is told, once, why the GPU backend stopped answering.
	failed func(error)
}

// Fold takes one sample in: the /proc scan, and the watched GPUs' usage
// (nil without GPU telemetry).
type Fold func(now time.Time, procs *process.ProcTable, usage []gpu.Usage)

// NewSampler samples every interval (0: never) the slots whose GPUs are
// own[i] (UUIDs) and the allocation's other GPUs watch, through gpus
// (nil, or gpuTelemetry false: no GPU telemetry). failed is told, once,
// why the backend stopped answering.
func NewSampler(every time.Duration, gpuTelemetry bool, gpus GPUUsage, own [][]string, watch []string, failed func(error)) *Sampler {
	sm := &Sampler{every: every, gpus: gpus, Owner: map[string]int{}, failed: failed}
	for i, uuids := range own {
		for _, u := range uuids {
			if _, dup := sm.Owner[u]; !dup {
				sm.Owner[u] = i
				sm.watched = append(sm.watched, u)
			}
		}
	}
	for _, u := range watch {
		if !slices.Contains(sm.watched, u) {
			sm.watched = append(sm.watched, u)
		}
	}
	if !gpuTelemetry || len(sm.watched) == 0 {
		sm.gpus = nil
	}
	return sm
}

// GPUs: the sampler measures GPU use (its backend has not failed).
func (sm *Sampler) GPUs() bool { return sm.gpus != nil }

// Run samples every tick until ctx ends, handing each sample to fold.
func (sm *Sampler) Run(ctx context.Context, fold Fold) error {
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
			fold(now, &procs, sm.GPUUsage())
		}
	}
}

// GPUUsage samples the watched GPUs; a backend that fails once is not
// asked again.
func (sm *Sampler) GPUUsage() []gpu.Usage {
	if sm.gpus == nil {
		return nil
	}
	usage, err := sm.gpus.Usage(sm.watched)
	if err != nil {
		sm.failed(err)
		sm.gpus = nil
		return nil
	}
	return usage
}
