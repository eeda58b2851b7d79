package mps

import (
	"fmt"
	"strconv"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

// ClientLimit is the most MPS clients one GPU serves: 48 on Volta and
// later, as NVIDIA's MPS documentation ("Limitations": up to 48 client
// CUDA contexts per device) and the driver's nvidia-cuda-mps-control(1)
// say; pre-Volta GPUs served 16, and CUDA 12 drivers still document 48
// for the GPUs gpulaunch meets (V100 and newer). A plan with more
// instances on one GPU is refused before anything starts: the clients
// past the limit would fail at their first CUDA call.
const ClientLimit = 48

// Share is one GPU of a plan and the slots that are its clients.
type Share struct {
	GPU   gpu.GPU
	Slots []int
}

// Shares are the plan's GPUs, each with the slots on it, in the order the
// slots first name them.
func Shares(p binding.Plan) []Share {
	var out []Share
	at := map[string]int{}
	for _, s := range p.Slots {
		for _, g := range s.GPUs {
			k, ok := at[g.UUID]
			if !ok {
				k = len(out)
				at[g.UUID] = k
				out = append(out, Share{GPU: g})
			}
			out[k].Slots = append(out[k].Slots, s.Index)
		}
	}
	return out
}

// Shared says whether any GPU has two slots or more.
func Shared(shares []Share) bool { return len(SharedGPUs(shares)) > 0 }

// SharedGPUs are the shares of GPUs that two slots or more share: those
// that get a control daemon of the run's own. A slot alone on its GPU is
// no MPS client: it has the GPU to itself, and a daemon would only put a
// server between it and its GPU (and a client share of 100%, the
// GPU's).
func SharedGPUs(shares []Share) []Share {
	var out []Share
	for _, s := range shares {
		if len(s.Slots) > 1 {
			out = append(out, s)
		}
	}
	return out
}

// Check says why a plan cannot run under MPS, with the fix; nil when it
// can. The rules, in order:
//
//	M1. MPS is NVIDIA's: AMD and Intel GPUs are shared by taking turns
//	    (--share-gpus). A node of no GPU (no vendor) is M2's.
//	M2. A client talks to the one GPU of its daemon: every slot has
//	    exactly one GPU (-G 1).
//	M3. MPS is for sharing: at least one GPU has two instances or more.
//	M4. No GPU has more than ClientLimit instances.
func Check(p binding.Plan, vendor gpu.Vendor) error {
	shares := Shares(p)
	switch {
	case vendor != "" && !gpuvendor.Of(vendor).MPS:
		return fmt.Errorf("--mps: MPS is NVIDIA's, and these GPUs are %s: drop --mps (--share-gpus lets instances take turns on a GPU)", vendor)
	case oneGPUEach(p) != "":
		return fmt.Errorf("--mps: %s, and an MPS client talks to one GPU's daemon: give -G 1", oneGPUEach(p))
	case !Shared(shares):
		each := fmt.Sprintf("%d instances on %d GPUs, one each", len(p.Slots), len(shares))
		if len(p.Slots) == 1 {
			each = "1 instance on 1 GPU"
		}
		return fmt.Errorf("--mps: no GPU is shared (%s): MPS runs several processes on one GPU; give -n above the GPU count, or drop --mps", each)
	}
	for _, s := range shares {
		if len(s.Slots) > ClientLimit {
			return fmt.Errorf("--mps: %d instances on GPU %d (%s), and MPS serves at most %d clients per GPU (NVIDIA's MPS documentation, Volta and later): lower -n, or use more GPUs", len(s.Slots), s.GPU.Index, s.GPU.UUID, ClientLimit)
		}
	}
	return nil
}

// oneGPUEach says which slot breaks M2; "" when none does.
func oneGPUEach(p binding.Plan) string {
	for _, s := range p.Slots {
		if len(s.GPUs) != 1 {
			return fmt.Sprintf("instance %d has %d GPUs", s.Index, len(s.GPUs))
		}
	}
	return ""
}

// CheckThreads refuses an active thread percentage outside 1..100
// (--mps-threads; 0 is "not given").
func CheckThreads(p int) error {
	if p < 1 || p > 100 {
		return fmt.Errorf("--mps-threads %d: the active thread percentage of each instance is 1..100 (of its GPU's SMs); leave it out for an even share", p)
	}
	return nil
}

// Threads is the active thread percentage of each of n clients of one
// GPU: the one given (--mps-threads), else an even share rounded up —
// 8 clients get 13 % each. Rounded up, the shares add up to a little more
// than the GPU, so that no SM sits idle for the rounding; MPS caps each
// client at its share, which is what keeps one instance from starving the
// others.
func Threads(given, n int) int {
	if given > 0 {
		return given
	}
	if n < 1 {
		n = 1
	}
	return (100 + n - 1) / n
}

// ClientEnv is what one client of a GPU's daemon is told: where the
// daemon's pipe and log directories are (pipeDir "" under the job's own
// MPS, whose inherited variables stand), its share of the GPU, and, when
// memLimit is set, the device memory it may pin ("0=" the client's one
// device).
func ClientEnv(pipeDir, logDir string, threads int, memLimit string) []string {
	var env []string
	if pipeDir != "" {
		env = append(env, "CUDA_MPS_PIPE_DIRECTORY="+pipeDir, "CUDA_MPS_LOG_DIRECTORY="+logDir)
	}
	if threads > 0 {
		env = append(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(threads))
	}
	if memLimit != "" {
		env = append(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0="+memLimit)
	}
	return env
}

// CheckMemLimit refuses a pinned device memory limit MPS would not read
// (--mps-mem-limit): a whole number of megabytes or gigabytes, "512M",
// "10G", as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes it.
func CheckMemLimit(s string) error {
	n := len(s)
	if n >= 2 && (s[n-1] == 'M' || s[n-1] == 'G') && s[0] != '0' {
		if _, err := strconv.ParseUint(s[:n-1], 10, 32); err == nil {
			return nil
		}
	}
	return fmt.Errorf("--mps-mem-limit %q: the device memory each instance may pin, in MPS's form: a whole number and M or G (512M, 10G)", s)
}
