package discover

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

func TestVendor(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env        sched.Env
		want, from string
		bad        bool
	}{
		{"rule: --gpu-vendor beats the environment", "amd", sched.Env{"GPULAUNCH_GPU_VENDOR": "intel"}, "amd", "--gpu-vendor", false},
		{"rule: else GPULAUNCH_GPU_VENDOR", "", sched.Env{"GPULAUNCH_GPU_VENDOR": "intel"}, "intel", "GPULAUNCH_GPU_VENDOR", false},
		{"rule: neither is every vendor", "", sched.Env{}, "", "", false},
		{"rule: an unknown vendor is bad input", "", sched.Env{"GPULAUNCH_GPU_VENDOR": "acme"}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, from, err := Vendor(tc.flag, tc.env)
			var bad InputError
			if tc.bad != errors.As(err, &bad) || string(v) != tc.want || from != tc.from {
				t.Fatalf("got %q from %q, %v", v, from, err)
			}
		})
	}
}

func TestBindsWithoutNVML(t *testing.T) {
	if !BindsWithoutNVML(sched.Env{"CUDA_VISIBLE_DEVICES": "0,1"}) || BindsWithoutNVML(sched.Env{"CUDA_VISIBLE_DEVICES": "MIG-1234"}) {
		t.Fatal("only MIG devices need NVML to be bound")
	}
}

func TestOpenBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"rule 1: --simulate and --node-file both", Request{Simulate: "dgx-a100", NodeFile: "n.json", Env: sched.Env{}}, "--simulate and --node-file both describe the node"},
		{"rule 3: an unknown simulated node, in --simulate's words", Request{Simulate: "no-such-node", Env: sched.Env{}}, "--simulate"},
		{"rule 3: GPULAUNCH_NODE_FILE's file, in its words", Request{Env: sched.Env{"GPULAUNCH_NODE_FILE": "/nonexistent/n.json"}}, "GPULAUNCH_NODE_FILE=/nonexistent/n.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Machine = gpu.Options{}
			_, src, err := Open(tc.r, "")
			var bad InputError
			if src != nil || !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (source %v), want bad input with %q", err, src, tc.want)
			}
		})
	}
}

// MayBeRank's rules, from the environment alone.
func TestMayBeRank(t *testing.T) {
	four := sched.Env{"SLURM_JOB_ID": "8", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "1", "SLURM_STEP_TASKS_PER_NODE": "4", "SLURM_NODEID": "0", "SLURM_STEP_NODELIST": "n1"}
	for _, tc := range []struct {
		name            string
		env             sched.Env
		auto, simulated bool
		want            bool
	}{
		{"1: with -n: no rank", four, false, false, false},
		{"2: a simulated node: no rank", four, true, true, false},
		{"3: MIG devices need NVML: not decided here", withVar(four, "CUDA_VISIBLE_DEVICES", "MIG-1234"), true, false, false},
		{"4: several ranks here: a rank", four, true, false, true},
		{"4: no launcher: no rank", sched.Env{}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayBeRank(tc.env, tc.auto, tc.simulated); got != tc.want {
				t.Fatalf("MayBeRank = %v, want %v", got, tc.want)
			}
		})
	}
}

func withVar(env sched.Env, k, v string) sched.Env {
	out := sched.Env{k: v}
	for key, val := range env {
		if key != k {
			out[key] = val
		}
	}
	return out
}

// Need's rules: NVML only where it adds something.
func TestNeed(t *testing.T) {
	mig := sched.Env{"CUDA_VISIBLE_DEVICES": "MIG-1234"}
	for _, tc := range []struct {
		name                string
		env                 sched.Env
		noGPU, seeAll, rank bool
		want                gpu.Need
	}{
		{"1: -G 0: the list only", sched.Env{}, true, false, false, gpu.NeedList},
		{"1: -G 0 in rank mode: the list only", sched.Env{}, true, false, true, gpu.NeedList},
		{"1: -G 0 of MIG devices: the list only", mig, true, false, true, gpu.NeedList},
		{"1: -G 0 but every GPU shown: not the list only", sched.Env{}, true, true, false, gpu.NeedAll},
		{"2: a rank: binding", sched.Env{}, false, false, true, gpu.NeedBinding},
		{"2: a rank given MIG devices: all", mig, false, false, true, gpu.NeedAll},
		{"3: a run with GPUs, info, plan: all", sched.Env{}, false, false, false, gpu.NeedAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Need(tc.env, tc.noGPU, tc.seeAll, tc.rank); got != tc.want {
				t.Fatalf("Need = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNVMLWait(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        time.Duration
		bad         bool
	}{
		{"unset: the default", "", gpu.DefaultNVMLWait, false},
		{"a duration", "30s", 30 * time.Second, false},
		{"not a duration: bad input", "soon", 0, true},
		{"zero: bad input", "0s", 0, true},
		{"negative: bad input", "-1s", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NVMLWait(tc.value)
			var bad InputError
			if got != tc.want || tc.bad != errors.As(err, &bad) || (tc.bad && !strings.Contains(err.Error(), "GPULAUNCH_NVML_WAIT="+tc.value)) {
				t.Fatalf("NVMLWait(%q) = %v, %v", tc.value, got, err)
			}
		})
	}
}
