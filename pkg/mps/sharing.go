package mps

import (
	"fmt"
	"strconv"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

// Host is what the client limit reads beside a GPU: the driver's CUDA
// version ("13.1"; "" unknown: gpu.Node.CUDAVersion) and the environment
// the clients inherit (its CUDA_DEVICE_MAX_CONNECTIONS).
type Host struct {
	CUDAVersion string
	Env         map[string]string
}

// Limit is the most clients one GPU's MPS server serves, and why, in
// words for a refusal ("CUDA 13.1, Volta or later").
type Limit struct {
	Clients int
	Why     string
	// Connections is CUDA_DEVICE_MAX_CONNECTIONS where its being raised
	// lowered the limit (L5); 0 where it did not.
	Connections int
}

// The figures of NVIDIA's MPS documentation (docs.nvidia.com/deploy/mps,
// "When to Use MPS" → "Limitations" and "Client-Server Connection
// Limits"; release r590, for CUDA 13.1: "each MPS server supports up to
// 60 client CUDA contexts per-device when using the default
// CUDA_DEVICE_MAX_CONNECTIONS limit of 2", up from 48 to CUDA 13.0;
// pre-Volta servers 16), and the variable's bounds (CUDA C Programming
// Guide, "CUDA Environment Variables": 1 to 32).
const (
	preVoltaClients    = 16
	voltaClients       = 48
	cuda131Clients     = 60
	defaultConnections = 2
	maxConnections     = 32
	// MaxConnectionsEnv is the variable that sets each client's share of
	// its server's connections.
	MaxConnectionsEnv = "CUDA_DEVICE_MAX_CONNECTIONS"
)

var (
	volta   = gpu.Version{Major: 7}
	cuda131 = gpu.Version{Major: 13, Minor: 1}
)

// ClientLimit is the most MPS clients GPU g serves on host h. A plan
// with more instances on one GPU is refused before anything starts: the
// clients past the limit would fail at their first CUDA call
// (cudaErrorMpsMaxClientsReached or cudaErrorMpsMaxConnectionsReached).
// The rules, in order:
//
//	L1. A GPU before Volta (compute capability below 7.0) serves 16.
//	L2. Volta and later: 60 where the driver's CUDA is 13.1 or later,
//	    48 up to 13.0.
//	L3. A CUDA version nobody told (the sysfs backend, a description
//	    without cuda_version) is taken as 13.0 or earlier: the lower 48,
//	    which every driver serves.
//	L4. A compute capability nobody told is taken as Volta or later:
//	    every GPU that CUDA 13 supports is, and a pre-Volta GPU is told
//	    by NVML, which rank mode and the sysfs backend lack.
//	L5. On Volta and later, CUDA_DEVICE_MAX_CONNECTIONS raised above
//	    MPS's default of 2 lowers it to limit × 2 / connections, rounded
//	    down (at least 1; the variable counts up to 32). NVIDIA says that
//	    raising it "will decrease the total number of MPS clients" and
//	    why — a server's clients share one pool of connections, each
//	    Volta client owning its own — but gives no formula: the pool
//	    that holds the limit at 2 each holds limit × 2 / C at C each.
//	    CSCS's wrapper (8 connections, 8 ranks per GPU) fits: 60 → 15,
//	    48 → 12. Lowered below 2 it raises nothing: the context limit
//	    stands. A value that is no whole number is CUDA's default.
func ClientLimit(g gpu.GPU, h Host) Limit {
	if cc, err := gpu.ParseVersion(g.ComputeCapability, ""); err == nil && cc.Below(volta) {
		return Limit{Clients: preVoltaClients, Why: "compute capability " + cc.String() + ", before Volta"}
	}
	l := Limit{Clients: voltaClients, Why: "CUDA " + h.CUDAVersion + ", Volta or later"}
	switch v, err := gpu.ParseVersion(h.CUDAVersion, ""); {
	case err != nil:
		l.Why = "Volta or later; the driver's CUDA version unknown, so taken as 13.0 or earlier"
	case !v.Below(cuda131):
		l.Clients = cuda131Clients
	}
	if c := connectionsOf(h.Env[MaxConnectionsEnv]); c > defaultConnections {
		l.Clients, l.Connections = max(l.Clients*defaultConnections/c, 1), c
		l.Why += fmt.Sprintf(", and %s=%s: each client takes %d of its server's connections instead of %d", MaxConnectionsEnv, h.Env[MaxConnectionsEnv], c, defaultConnections)
	}
	return l
}

// connectionsOf is L5's reading of CUDA_DEVICE_MAX_CONNECTIONS: its whole
// number, at most 32; MPS's default 2 where it is unset or no number.
func connectionsOf(v string) int {
	c, err := strconv.Atoi(v)
	if err != nil || c < 1 {
		return defaultConnections
	}
	return min(c, maxConnections)
}

// NodeLimit is the least ClientLimit of gpus: what k per GPU must fit
// on every one of them (a packing study's, scaling's F7).
func NodeLimit(gpus []gpu.GPU, h Host) Limit {
	var least Limit
	for i, g := range gpus {
		if l := ClientLimit(g, h); i == 0 || l.Clients < least.Clients {
			least = l
		}
	}
	return least
}

// LimitFix is what a refusal for too many clients of one GPU says to do:
// fewer instances per GPU, sharing by taking turns, and, where L5
// lowered the limit, fewer connections.
func (l Limit) LimitFix() string {
	fix := "put at most %d instances on each GPU (lower -n, or give more GPUs), or drop --mps and let them take turns (--share-gpus)"
	if l.Connections > 0 {
		fix += ", or lower " + MaxConnectionsEnv + " (2, MPS's default, serves the most)"
	}
	return fmt.Sprintf(fix, l.Clients)
}

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
//	M4. No GPU has more instances than its MPS serves (ClientLimit:
//	    L1–L5, from the GPU and host h).
func Check(p binding.Plan, vendor gpu.Vendor, h Host) error {
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
		if l := ClientLimit(s.GPU, h); len(s.Slots) > l.Clients {
			return fmt.Errorf("--mps: %d instances on GPU %d (%s), and MPS serves at most %d clients on it (%s; NVIDIA's MPS documentation): %s",
				len(s.Slots), s.GPU.Index, s.GPU.UUID, l.Clients, l.Why, l.LimitFix())
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
