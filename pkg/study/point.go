package study

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// Env is what every instance of a size's runs is told besides base
// (gpulaunch's environment): the size (GPULAUNCH_SCALE_GPUS), and whether
// the study is weak scaling (GPULAUNCH_SCALE_WEAK, 1 or 0), for an app
// that grows its work with the GPUs.
func Env(base []string, size int, weak bool) []string {
	return append(base, "GPULAUNCH_SCALE_GPUS="+strconv.Itoa(size),
		"GPULAUNCH_SCALE_WEAK="+map[bool]string{false: "0", true: "1"}[weak])
}

// GPUsUsed is how many distinct GPUs a plan's slots use: the size's GPUs,
// fewer than its instances when they share them.
func GPUsUsed(p binding.Plan) int {
	seen := map[string]bool{}
	for _, s := range p.Slots {
		for _, g := range s.GPUs {
			seen[g.UUID+"|"+g.BusID] = true
		}
	}
	return len(seen)
}

// GPUMemory is the memory of a plan's GPUs, the smallest's (what each of
// them has at least: a packing's headroom is counted against it); 0 when
// none says.
func GPUMemory(p binding.Plan) uint64 {
	var least uint64
	for _, s := range p.Slots {
		for _, g := range s.GPUs {
			if g.MemoryBytes > 0 && (least == 0 || g.MemoryBytes < least) {
				least = g.MemoryBytes
			}
		}
	}
	return least
}

// GPUNote says why a study's runs measure no GPU use: telemetry off
// (monitor 0), no GPU backend (src nil), or a backend that cannot sample
// the gpus (a node file, Intel's drivers, NVIDIA without NVML); "" when
// they do.
func GPUNote(monitor time.Duration, src gpu.Source, gpus []string) string {
	if monitor == 0 {
		return "telemetry off (--monitor-interval 0)"
	}
	if src == nil {
		return "no GPU backend"
	}
	if _, err := src.Usage(gpus); errors.Is(err, gpu.ErrNoTelemetry) {
		return strings.TrimPrefix(err.Error(), "no GPU telemetry: ")
	}
	return ""
}
