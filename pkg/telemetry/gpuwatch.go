//go:build linux

package telemetry

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

// GPUUsage samples GPUs; a gpu.Source is one.
type GPUUsage interface {
	Usage(uuids []string) ([]gpu.Usage, error)
}

// GPUSample is one of an instance's GPUs at the last sample.
type GPUSample struct {
	UUID string `json:"uuid"`
	// Util is the GPU's utilisation in percent; -1: the driver does not
	// tell (a MIG device).
	Util int `json:"util_pct"`
	// Mem is the GPU memory the instance's processes hold on it.
	Mem uint64 `json:"mem_bytes"`
}

// Launch verification judges a running instance's idle GPUs once it has
// had verifyAfter samples and run for verifyGrace, whichever is later; an
// instance that ends sooner is judged at its end on the samples it had.
// Samples alone were not enough: at the default 2 s interval three
// samples are 6 s, and an ML app spends longer than that before its first
// CUDA call (the framework's import, reading its data, building the
// model), so it was told it ran on the CPU when it had not started yet;
// at a test's 100 ms interval a loaded machine did the same to an app that
// had not reached its first line. A wrong device is still caught at the
// first sample that shows it (Observe's foreign check).
const (
	verifyAfter = 3
	verifyGrace = 60 * time.Second
)

// GPUWatch is one instance's GPU record across samples: what the
// summary, the live table and launch verification read of its GPUs.
type GPUWatch struct {
	own      map[string]bool // its GPUs by UUID
	samples  int             // samples taken while it ran
	utilSum  float64
	UtilPeak int
	MemPeak  uint64 // its processes' GPU memory, summed over GPUs
	seen     bool   // one of its processes held a context on one of its GPUs
	busy     bool   // one of its GPUs was ever busy
	verified bool   // the idle check has been made
	foreign  map[string]bool
	// Warnings are what the watch found wrong (a foreign GPU, idle
	// GPUs), and those the sampler's caller added (the memory cap).
	Warnings []string
	// the last sample: mean utilisation of its GPUs (-1: none) and its
	// processes' GPU memory
	LastUtil int
	LastMem  uint64
	// PerGPU is the last sample of each of its GPUs, in the order they
	// were sampled: what --metrics-file and --metrics-listen expose per
	// GPU UUID, the key other exporters' series are joined on.
	PerGPU []GPUSample
	// told is the variable that told the instance its GPUs, for the
	// warning when it runs on another's (visibleVars).
	told string
}

// NewGPUWatch watches the GPUs uuids of an instance whose environment is
// env.
func NewGPUWatch(uuids []string, env []string) *GPUWatch {
	w := &GPUWatch{own: map[string]bool{}, foreign: map[string]bool{}, LastUtil: -1, told: toldBy(env)}
	for _, u := range uuids {
		w.own[u] = true
	}
	return w
}

// Observe folds one sample in: usage of every sampled GPU, the
// instance's process tree, which instance owns each GPU, and how long its
// process has run. It returns warnings that are new.
func (w *GPUWatch) Observe(index int, usage []gpu.Usage, tree map[int]bool, owner map[string]int, ran time.Duration) []string {
	var fresh []string
	util, n := 0, 0
	var mem uint64
	w.PerGPU = w.PerGPU[:0]
	for _, u := range usage {
		mine := w.own[u.UUID]
		if mine {
			w.PerGPU = append(w.PerGPU, GPUSample{UUID: u.UUID, Util: u.Utilization})
		}
		if mine && u.Utilization >= 0 {
			util += u.Utilization
			n++
			w.UtilPeak = max(w.UtilPeak, u.Utilization)
			w.busy = w.busy || u.Utilization > 0
		}
		for _, p := range u.Processes {
			if !tree[p.PID] {
				continue
			}
			if mine {
				w.seen = true
				mem += p.MemoryUsed
				w.PerGPU[len(w.PerGPU)-1].Mem += p.MemoryUsed
				continue
			}
			if !w.foreign[u.UUID] {
				w.foreign[u.UUID] = true
				whose := "no instance's"
				if o, ok := owner[u.UUID]; ok {
					whose = fmt.Sprintf("instance %d's", o)
				}
				fresh = append(fresh, fmt.Sprintf("instance %d: process %d runs on GPU %s, %s GPU, not its own (%s): "+
					"the app ignores %s (it may reset it, or pick devices by a hard-coded index)",
					index, p.PID, u.UUID, whose, strings.Join(keys(w.own), ","), w.told))
			}
		}
	}
	if len(w.own) == 0 {
		return fresh
	}
	w.samples++
	w.LastUtil, w.LastMem = -1, mem
	if n > 0 {
		w.utilSum += float64(util) / float64(n)
		w.LastUtil = util / n
	}
	w.MemPeak = max(w.MemPeak, mem)
	if w.samples >= verifyAfter && ran >= verifyGrace {
		fresh = append(fresh, w.Verify(index)...)
	}
	return fresh
}

// toldBy names the vendor variable in an instance's environment that
// selects its GPUs.
func toldBy(env []string) string {
	for _, kv := range env {
		for _, name := range gpuvendor.VisibleVars() {
			if strings.HasPrefix(kv, name+"=") {
				return name
			}
		}
	}
	return "the GPU visibility variable"
}

// Verify flags an instance that never touched its GPUs while they sat idle.
func (w *GPUWatch) Verify(index int) []string {
	if w.verified || w.samples == 0 {
		return nil
	}
	w.verified = true
	if w.seen || w.busy {
		return nil
	}
	return []string{fmt.Sprintf("instance %d: no process of it used its GPU(s) %s, which sat idle over %d sample(s): "+
		"is the app running on the CPU (a CPU-only build, or no GPU code path)?", index, strings.Join(keys(w.own), ","), w.samples)}
}

// MeanUtil is the mean of its GPUs' utilisation over the samples; -1:
// none.
func (w *GPUWatch) MeanUtil() float64 {
	if w.samples == 0 {
		return -1
	}
	return w.utilSum / float64(w.samples)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	// a handful of GPUs: insertion sort keeps the messages stable
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
