//go:build linux

package launcher

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

// GPUUsage samples GPUs; an gpu.Source is one.
type GPUUsage interface {
	Usage(uuids []string) ([]gpu.Usage, error)
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
// first sample that shows it (observe's foreign check).
const (
	verifyAfter = 3
	verifyGrace = 60 * time.Second
)

// gpuWatch is one instance's GPU record across samples.
type gpuWatch struct {
	own      map[string]bool // its GPUs by UUID
	samples  int             // samples taken while it ran
	utilSum  float64
	utilPeak int
	memPeak  uint64 // its processes' GPU memory, summed over GPUs
	seen     bool   // one of its processes held a context on one of its GPUs
	busy     bool   // one of its GPUs was ever busy
	verified bool   // the idle check has been made
	foreign  map[string]bool
	warnings []string
	// the last sample: mean utilisation of its GPUs (-1: none) and its
	// processes' GPU memory
	lastUtil int
	lastMem  uint64
	// perGPU is the last sample of each of its GPUs, in the order they
	// were sampled: what --metrics-file and --metrics-listen expose per
	// GPU UUID, the key other exporters' series are joined on.
	perGPU []GPUSample
	// told is the variable that told the instance its GPUs, for the
	// warning when it runs on another's (visibleVars).
	told string
}

func newGPUWatch(uuids []string, env []string) *gpuWatch {
	w := &gpuWatch{own: map[string]bool{}, foreign: map[string]bool{}, lastUtil: -1, told: toldBy(env)}
	for _, u := range uuids {
		w.own[u] = true
	}
	return w
}

// observe folds one sample in: usage of every sampled GPU, the
// instance's process tree, which instance owns each GPU, and how long its
// process has run. It returns warnings that are new.
func (w *gpuWatch) observe(index int, usage []gpu.Usage, tree map[int]bool, owner map[string]int, ran time.Duration) []string {
	var fresh []string
	util, n := 0, 0
	var mem uint64
	w.perGPU = w.perGPU[:0]
	for _, u := range usage {
		mine := w.own[u.UUID]
		if mine {
			w.perGPU = append(w.perGPU, GPUSample{UUID: u.UUID, Util: u.Utilization})
		}
		if mine && u.Utilization >= 0 {
			util += u.Utilization
			n++
			w.utilPeak = max(w.utilPeak, u.Utilization)
			w.busy = w.busy || u.Utilization > 0
		}
		for _, p := range u.Processes {
			if !tree[p.PID] {
				continue
			}
			if mine {
				w.seen = true
				mem += p.MemoryUsed
				w.perGPU[len(w.perGPU)-1].Mem += p.MemoryUsed
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
	w.lastUtil, w.lastMem = -1, mem
	if n > 0 {
		w.utilSum += float64(util) / float64(n)
		w.lastUtil = util / n
	}
	w.memPeak = max(w.memPeak, mem)
	if w.samples >= verifyAfter && ran >= verifyGrace {
		fresh = append(fresh, w.verify(index)...)
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

// verify flags an instance that never touched its GPUs while they sat idle.
func (w *gpuWatch) verify(index int) []string {
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

func (w *gpuWatch) meanUtil() float64 {
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
