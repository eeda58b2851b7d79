package mps

import (
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// plan is n slots over gpus GPUs, round robin, g GPUs each.
func plan(n, gpus, g int) binding.Plan {
	var p binding.Plan
	for i := range n {
		s := binding.Slot{Index: i}
		for k := range g {
			id := (i*g + k) % gpus
			s.GPUs = append(s.GPUs, gpu.GPU{Index: id, UUID: "GPU-" + string(rune('a'+id))})
		}
		p.Slots = append(p.Slots, s)
	}
	return p
}

// The rules M1–M4 of Check, each by a plan that breaks it and one that
// keeps it.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plan   binding.Plan
		vendor gpu.Vendor
		host   Host
		want   string // "" : accepted
	}{
		{"M1: AMD GPUs take turns", plan(8, 4, 1), gpu.AMD, Host{}, "MPS is NVIDIA's, and these GPUs are amd"},
		{"M1: no GPU at all is M2's (it said \"these GPUs are :\")", plan(2, 0, 0), "", Host{}, "instance 0 has 0 GPUs, and an MPS client talks to one GPU's daemon: give -G 1"},
		{"M2: a slot with two GPUs", plan(8, 4, 2), gpu.NVIDIA, Host{}, "instance 0 has 2 GPUs, and an MPS client talks to one GPU's daemon: give -G 1"},
		{"M2: a slot without a GPU", plan(2, 1, 0), gpu.NVIDIA, Host{}, "instance 0 has 0 GPUs"},
		{"M3: one instance per GPU", plan(4, 4, 1), gpu.NVIDIA, Host{}, "no GPU is shared (4 instances on 4 GPUs, one each)"},
		{"M3: one instance, counted in words", plan(1, 1, 1), gpu.NVIDIA, Host{}, "no GPU is shared (1 instance on 1 GPU)"},
		{"M4: 49 on one GPU", plan(49, 1, 1), gpu.NVIDIA, Host{}, "49 instances on GPU 0 (GPU-a), and MPS serves at most 48"},
		{"M4: 48 on one GPU", plan(48, 1, 1), gpu.NVIDIA, Host{}, ""},
		{"M4: 60 on one GPU of a CUDA 13.1 driver", plan(60, 1, 1), gpu.NVIDIA, Host{CUDAVersion: "13.1"}, ""},
		{"M4: 61 on one GPU of a CUDA 13.1 driver, with the fix", plan(61, 1, 1), gpu.NVIDIA, Host{CUDAVersion: "13.1"},
			"61 instances on GPU 0 (GPU-a), and MPS serves at most 60 clients on it (CUDA 13.1, Volta or later; NVIDIA's MPS documentation): put at most 60 instances on each GPU (lower -n, or give more GPUs), or drop --mps and let them take turns (--share-gpus)"},
		{"M4: CUDA_DEVICE_MAX_CONNECTIONS raised, with its fix", plan(13, 1, 1), gpu.NVIDIA, Host{CUDAVersion: "12.4", Env: map[string]string{"CUDA_DEVICE_MAX_CONNECTIONS": "8"}},
			"at most 12 clients on it (CUDA 12.4, Volta or later, and CUDA_DEVICE_MAX_CONNECTIONS=8: each client takes 8 of its server's connections instead of 2; NVIDIA's MPS documentation): put at most 12 instances on each GPU (lower -n, or give more GPUs), or drop --mps and let them take turns (--share-gpus), or lower CUDA_DEVICE_MAX_CONNECTIONS"},
		{"8 instances on 4 GPUs", plan(8, 4, 1), gpu.NVIDIA, Host{}, ""},
		{"5 on 4: one GPU shared is sharing", plan(5, 4, 1), gpu.NVIDIA, Host{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.plan, tc.vendor, tc.host)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
	shares := Shares(plan(6, 4, 1))
	if len(shares) != 4 || len(shares[0].Slots) != 2 || shares[0].Slots[1] != 4 || len(shares[3].Slots) != 1 {
		t.Errorf("Shares = %+v", shares)
	}
}

// ClientLimit's rules L1–L5, each by a GPU and host that it decides,
// and NodeLimit, the least of a node's.
func TestClientLimit(t *testing.T) {
	hopper := gpu.GPU{ComputeCapability: "9.0"}
	pascal := gpu.GPU{ComputeCapability: "6.0"}
	conn := func(cuda, c string) Host {
		return Host{CUDAVersion: cuda, Env: map[string]string{"CUDA_DEVICE_MAX_CONNECTIONS": c}}
	}
	for _, tc := range []struct {
		name    string
		gpu     gpu.GPU
		host    Host
		clients int
		why     string
	}{
		{"L1: before Volta, 16", pascal, Host{CUDAVersion: "12.4"}, 16, "compute capability 6.0, before Volta"},
		{"L1: before Volta, 16 whatever the CUDA", pascal, Host{CUDAVersion: "13.1"}, 16, "before Volta"},
		{"L1: Volta itself is not before it", gpu.GPU{ComputeCapability: "7.0"}, Host{CUDAVersion: "12.4"}, 48, "CUDA 12.4, Volta or later"},
		{"L2: CUDA 13.0, 48", hopper, Host{CUDAVersion: "13.0"}, 48, "CUDA 13.0, Volta or later"},
		{"L2: CUDA 13.1, 60", hopper, Host{CUDAVersion: "13.1"}, 60, "CUDA 13.1, Volta or later"},
		{"L2: CUDA 14.0, 60", hopper, Host{CUDAVersion: "14.0"}, 60, "CUDA 14.0"},
		{"L2: CUDA 12.9 is below 13.1 (not compared as text)", hopper, Host{CUDAVersion: "12.9"}, 48, "CUDA 12.9"},
		{"L3: CUDA unknown, the lower 48", hopper, Host{}, 48, "the driver's CUDA version unknown, so taken as 13.0 or earlier"},
		{"L3: CUDA unreadable, the lower 48", hopper, Host{CUDAVersion: "thirteen"}, 48, "unknown"},
		{"L4: compute capability unknown, Volta or later", gpu.GPU{}, Host{CUDAVersion: "13.1"}, 60, "Volta or later"},
		{"L5: CSCS's 8 connections, CUDA 13.1: 60 × 2 / 8", hopper, conn("13.1", "8"), 15, "CUDA_DEVICE_MAX_CONNECTIONS=8: each client takes 8"},
		{"L5: 8 connections, CUDA 12.4: 48 × 2 / 8", hopper, conn("12.4", "8"), 12, "CUDA_DEVICE_MAX_CONNECTIONS=8"},
		{"L5: 3 connections, rounded down: 96 / 3", hopper, conn("12.4", "3"), 32, "=3"},
		{"L5: 32, the most CUDA takes", hopper, conn("13.1", "32"), 3, "=32"},
		{"L5: past 32 counts as 32", hopper, conn("13.1", "64"), 3, "=64: each client takes 32"},
		{"L5: 2, the default, lowers nothing", hopper, conn("13.1", "2"), 60, "CUDA 13.1, Volta or later"},
		{"L5: 1 raises nothing", hopper, conn("13.1", "1"), 60, "CUDA 13.1, Volta or later"},
		{"L5: no number is the default", hopper, conn("13.1", "many"), 60, "CUDA 13.1, Volta or later"},
		{"L5: before Volta, clients own no connections", pascal, conn("12.4", "8"), 16, "before Volta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ClientLimit(tc.gpu, tc.host)
			if l.Clients != tc.clients || !strings.Contains(l.Why, tc.why) {
				t.Errorf("ClientLimit = %+v, want %d clients, why containing %q", l, tc.clients, tc.why)
			}
			if raised := strings.Contains(l.Why, "CUDA_DEVICE_MAX_CONNECTIONS"); raised != strings.Contains(l.LimitFix(), "lower CUDA_DEVICE_MAX_CONNECTIONS") {
				t.Errorf("the fix %q names the variable: %v, the limit's reason does: %v", l.LimitFix(), !raised, raised)
			}
		})
	}
	if l := NodeLimit([]gpu.GPU{hopper, pascal, hopper}, Host{CUDAVersion: "13.1"}); l.Clients != 16 || !strings.Contains(l.Why, "before Volta") {
		t.Errorf("NodeLimit of a node with a Pascal GPU = %+v, want its 16", l)
	}
}

// SharedGPUs: the GPUs of two slots or more, those that get a daemon;
// 5 slots on 4 GPUs share GPU 0 alone.
func TestSharedGPUs(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan binding.Plan
		want []string
	}{
		{"5 on 4: GPU a alone is shared", plan(5, 4, 1), []string{"GPU-a"}},
		{"8 on 4: every GPU", plan(8, 4, 1), []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"}},
		{"4 on 4: none", plan(4, 4, 1), nil},
	} {
		var got []string
		for _, s := range SharedGPUs(Shares(tc.plan)) {
			got = append(got, s.GPU.UUID)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Threads: the given percentage, else an even share rounded up; the
// flags' bounds; what a client is told.
func TestThreadsAndClientEnv(t *testing.T) {
	for _, tc := range []struct{ given, n, want int }{{0, 1, 100}, {0, 2, 50}, {0, 3, 34}, {0, 8, 13}, {0, 48, 3}, {25, 8, 25}} {
		if got := Threads(tc.given, tc.n); got != tc.want {
			t.Errorf("Threads(%d, %d) = %d, want %d", tc.given, tc.n, got, tc.want)
		}
	}
	for p, ok := range map[int]bool{0: false, 1: true, 100: true, 150: false, -5: false} {
		if err := CheckThreads(p); (err == nil) != ok {
			t.Errorf("CheckThreads(%d) = %v", p, err)
		}
	}
	for s, ok := range map[string]bool{"512M": true, "10G": true, "10": false, "0G": false, "1.5G": false, "10GB": false, "G": false, "-1G": false} {
		if err := CheckMemLimit(s); (err == nil) != ok {
			t.Errorf("CheckMemLimit(%q) = %v", s, err)
		}
	}
	got := strings.Join(ClientEnv("/r/0/pipe", "/r/0/log", 13, "10G"), " ")
	if got != "CUDA_MPS_PIPE_DIRECTORY=/r/0/pipe CUDA_MPS_LOG_DIRECTORY=/r/0/log CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=13 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10G" {
		t.Errorf("ClientEnv = %q", got)
	}
	if got := ClientEnv("", "", 0, ""); len(got) != 0 {
		t.Errorf("under the job's MPS with nothing asked: %q", got)
	}
}

// E1–E3: the job's MPS is found by its variables first, then by asking
// the default directory; the ask is not made when a variable tells.
func TestFindExisting(t *testing.T) {
	asked := 0
	answers := func(yes bool) func(string) bool {
		return func(dir string) bool { asked++; return yes && dir == DefaultPipeDir }
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		answers  bool
		want     string // PipeDir; "" for none
		wantAsks int
	}{
		{"E1: a pipe directory set", map[string]string{"CUDA_MPS_PIPE_DIRECTORY": "/site/mps"}, true, "/site/mps", 0},
		{"E2: Slurm's gres/mps", map[string]string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}, false, DefaultPipeDir, 0},
		{"E3: a daemon answers", map[string]string{"PATH": "/bin"}, true, DefaultPipeDir, 1},
		{"none", map[string]string{"PATH": "/bin"}, false, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = 0
			e := FindExisting(tc.env, answers(tc.answers))
			got := ""
			if e != nil {
				got = e.PipeDir
			}
			if got != tc.want || asked != tc.wantAsks {
				t.Errorf("FindExisting = %q after %d asks, want %q after %d", got, asked, tc.want, tc.wantAsks)
			}
		})
	}
}
