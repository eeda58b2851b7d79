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
	// Util is the GPU's utilisation in percent, whoever used it; -1: the
	// driver does not tell (a MIG device).
	Util int `json:"util_pct"`
	// InstanceUtil is the instance's own use of the GPU in percent, and
	// InstanceUtilSource where it comes from (InstanceUtil's rules): its
	// processes' SM% ("processes") or the GPU's figure ("gpu"); -1 and
	// "": not measured.
	InstanceUtil       int    `json:"instance_util_pct"`
	InstanceUtilSource string `json:"instance_util_source,omitempty"`
	// Mem is the GPU memory the instance's processes hold on it.
	Mem uint64 `json:"mem_bytes"`
}

// Where an instance's GPU% comes from (launcher.Outcome.GPUUtilSource,
// the report's gpu_util_source); "" when it was not measured.
const (
	// SourceProcesses: its own processes' SM%, from the driver's
	// per-process samples (or declared per process on a simulated node).
	SourceProcesses = "processes"
	// SourceGPU: its GPU's figure, whoever used it: under MPS (NVML gives
	// the clients' use to the MPS server), on a MIG device, on AMD and
	// Intel GPUs, or where the driver gave no per-process samples.
	SourceGPU = "gpu"
)

// InstanceUtil is an instance's use of one of its GPUs, u, in percent,
// and where it comes from. tree is the instance's process tree; mps:
// the instance is an MPS client (MPSClient). The rules, in order:
//  1. An MPS client: the GPU's figure ("gpu"). NVML gives all of an MPS
//     client's use to nvidia-cuda-mps-server and none to the client (a
//     real H200 under MPS: 98% on the server, nothing on 4 clients), so
//     its processes' samples would say 0 for a busy client.
//  2. The backend read per-process samples of the GPU: the sum of the
//     SM% of the processes of tree, at most 100 ("processes"); a process
//     without a sample used none of it since the last (0, not unknown).
//  3. Otherwise the GPU's figure ("gpu").
//
// A GPU figure the driver does not give (-1, a MIG device) is not
// measured: -1, "".
func InstanceUtil(u gpu.Usage, tree map[int]bool, mps bool) (int, string) {
	if !mps && u.PerProcess {
		sum := 0
		for _, p := range u.ProcessUtil {
			if tree[p.PID] {
				sum += p.SM
			}
		}
		return min(100, sum), SourceProcesses
	}
	if u.Utilization < 0 {
		return -1, ""
	}
	return u.Utilization, SourceGPU
}

// MPSClient says whether an instance whose environment is env is an MPS
// client: it names an MPS pipe directory (gpu.MPSPipeEnv), gpulaunch's
// --mps daemon's or the job's own.
func MPSClient(env []string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, gpu.MPSPipeEnv+"="); ok && v != "" {
			return true
		}
	}
	return false
}

// JoinSources is the source of a figure made of figures from a and b: a
// figure that is partly its GPU's is its GPU's ("gpu" wins); "" adds
// nothing.
func JoinSources(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == SourceGPU:
		return a
	}
	return b
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
// summary, the live table and launch verification read of its GPUs. Its
// utilisation figures are the instance's own (InstanceUtil): on a GPU it
// shares, its processes' use, not the GPU's.
type GPUWatch struct {
	own      map[string]bool // its GPUs by UUID
	mps      bool            // it is an MPS client (MPSClient)
	samples  int             // samples taken while it ran
	measured int             // those of them with a figure of its GPU use (none on a MIG device)
	utilSum  float64
	UtilPeak int
	MemPeak  uint64 // its processes' GPU memory, summed over GPUs
	seen     bool   // one of its processes held a context on one of its GPUs
	// its figure on one of its GPUs was ever above 0: busyOwn where the
	// figure was its processes', busyGPU where it was its GPU's
	busyOwn, busyGPU bool
	verified         bool // the idle check has been made
	foreign          map[string]bool
	// Warnings are what the watch found wrong (a foreign GPU, idle
	// GPUs), and those the sampler's caller added (the memory cap).
	Warnings []string
	// the last sample: mean of its figures on its GPUs (-1: none), where
	// they came from (JoinSources of theirs), and its processes' GPU
	// memory
	LastUtil   int
	LastSource string
	LastMem    uint64
	// Source is where its figures came from over every sample so far
	// (JoinSources); "" while none was measured.
	Source string
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
	w := &GPUWatch{own: map[string]bool{}, foreign: map[string]bool{}, LastUtil: -1, told: toldBy(env), mps: MPSClient(env)}
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
	util, n, source := 0, 0, ""
	var mem uint64
	w.PerGPU = w.PerGPU[:0]
	for _, u := range usage {
		mine := w.own[u.UUID]
		if mine {
			own, from := InstanceUtil(u, tree, w.mps)
			w.PerGPU = append(w.PerGPU, GPUSample{UUID: u.UUID, Util: u.Utilization, InstanceUtil: own, InstanceUtilSource: from})
			if own >= 0 {
				util += own
				n++
				source = JoinSources(source, from)
				w.UtilPeak = max(w.UtilPeak, own)
				if from == SourceProcesses {
					w.busyOwn = w.busyOwn || own > 0
				} else {
					w.busyGPU = w.busyGPU || own > 0
				}
			}
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
				fresh = append(fresh, w.foreignWarning(index, p.PID, u.UUID, owner))
			}
		}
	}
	if len(w.own) == 0 {
		return fresh
	}
	w.samples++
	w.LastUtil, w.LastSource, w.LastMem = -1, source, mem
	if n > 0 {
		w.measured++
		w.utilSum += float64(util) / float64(n)
		w.LastUtil = util / n
		w.Source = JoinSources(w.Source, source)
	}
	w.MemPeak = max(w.MemPeak, mem)
	if w.samples >= verifyAfter && ran >= verifyGrace {
		fresh = append(fresh, w.Verify(index)...)
	}
	return fresh
}

// foreignWarning says that process pid of instance index runs on GPU
// uuid, which is not its own.
func (w *GPUWatch) foreignWarning(index, pid int, uuid string, owner map[string]int) string {
	whose := "no instance's"
	if o, ok := owner[uuid]; ok {
		whose = fmt.Sprintf("instance %d's", o)
	}
	return fmt.Sprintf("instance %d: process %d runs on GPU %s, %s GPU, not its own (%s): "+
		"the app ignores %s (it may reset it, or pick devices by a hard-coded index)",
		index, pid, uuid, whose, strings.Join(keys(w.own), ","), w.told)
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

// Verify judges, once, whether the instance used its GPUs. Its own
// figures (InstanceUtil) decide, not its GPUs', so that an idle instance
// on a GPU another keeps busy is caught. The rules, in order:
//  1. Judged once, and only with a sample.
//  2. Its own processes' figure was above 0 at some sample: it used them.
//  3. An MPS client no process of which held a context on its GPUs did
//     not use them, however busy its neighbours kept the GPU: its figure
//     is the GPU's, but MPS lists each client's process with its memory.
//  4. Its figure is its GPU's and was above 0 at some sample: it used
//     them, as far as can be told (a GPU without per-process samples; in
//     a container whose pid namespace hides its processes from the
//     driver's list, the GPU's use is the only sign).
//  5. No process of it held a context on its GPUs: it did not use them
//     (the app may run on the CPU).
//  6. A process of it held a context, and every figure of it came from
//     its processes' samples, all 0: it held the GPU without computing
//     (waiting on its input, another rank, or computing on the CPU).
//  7. Otherwise — a context held, its figure its GPU's (MPS, no
//     per-process samples) and 0 — nothing can be told: no warning.
func (w *GPUWatch) Verify(index int) []string {
	if w.verified || w.samples == 0 {
		return nil
	}
	w.verified = true
	gpus := strings.Join(keys(w.own), ",")
	unused := fmt.Sprintf("instance %d: no process of it used its GPU(s) %s over %d sample(s): "+
		"is the app running on the CPU (a CPU-only build, or no GPU code path)?", index, gpus, w.samples)
	switch {
	case w.busyOwn:
		return nil
	case w.mps && !w.seen:
		return []string{unused}
	case w.busyGPU:
		return nil
	case !w.seen:
		return []string{unused}
	case w.Source == SourceProcesses:
		return []string{fmt.Sprintf("instance %d: its processes held memory on its GPU(s) %s but ran no kernel over %d sample(s) (the driver's per-process samples): "+
			"is it waiting (on its input, another rank), or computing on the CPU?", index, gpus, w.samples)}
	}
	return nil
}

// MPSClient says whether the instance is an MPS client (MPSClient of its
// environment).
func (w *GPUWatch) MPSClient() bool { return w.mps }

// MeanUtil is the mean of its figures on its GPUs over the samples that
// had one; -1: none had (no telemetry, a MIG device whose use the driver
// does not give): not measured, which a 0 would misread as idle.
func (w *GPUWatch) MeanUtil() float64 {
	if w.measured == 0 {
		return -1
	}
	return w.utilSum / float64(w.measured)
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
