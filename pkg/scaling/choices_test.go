package scaling

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/mps"
)

// C1–C8: what a study refuses, each by a command line that breaks it.
func TestChoicesCheck(t *testing.T) {
	ok := Choices{GPUs: "1,2", Repeat: 1, Efficiency: 0.6, Command: []string{"./app"}}
	given := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, g := range names {
				if g == n {
					return true
				}
			}
			return false
		}
	}
	with := func(f func(c *Choices)) Choices { c := ok; c.Given = given(); f(&c); return c }
	for _, tc := range []struct {
		name string
		c    Choices
		want string // "": accepted
	}{
		{"accepted", with(func(c *Choices) {}), ""},
		{"C1: no command", with(func(c *Choices) { c.Command = nil }), "no command to study"},
		{"C2: neither -G nor -n", with(func(c *Choices) { c.GPUs = "" }), "give the sizes with -G 1,2,4,8"},
		{"C2: both", with(func(c *Choices) { c.Instances = "1,2" }), "one of them"},
		{"C3: --ddp with -G", with(func(c *Choices) { c.DDP = true }), "--ddp is for -n"},
		{"C3: --ddp with -n", with(func(c *Choices) { c.GPUs, c.Instances, c.DDP = "", "1,2", true }), ""},
		{"C4: --repeat 0", with(func(c *Choices) { c.Repeat = 0 }), "--repeat 0: run every size at least once"},
		{"C5: --efficiency 0", with(func(c *Choices) { c.Efficiency = 0 }), "--efficiency 0: give a share between 0 and 1"},
		{"C5: --efficiency above 1", with(func(c *Choices) { c.Efficiency = 1.5 }), "--efficiency 1.5"},
		{"C5: --efficiency NaN", with(func(c *Choices) { c.Efficiency = math.NaN() }), "--efficiency NaN"},
		{"C5: --efficiency 1", with(func(c *Choices) { c.Efficiency = 1 }), ""},
		{"C6: mean and sum", with(func(c *Choices) { c.Mean, c.Sum = true, true }), "--metric-mean and --metric-sum exclude each other"},
		{"C7: --unit without --metric", with(func(c *Choices) { c.Given = given("unit") }), "--unit is about the figure --metric REGEX reads: give --metric"},
		{"C7: --unit with --metric", with(func(c *Choices) { c.Given = given("unit", "metric") }), ""},
		{"C8: --tmux", with(func(c *Choices) { c.Given = given("tmux") }), "--tmux is not for a study"},
		{"C8: --report", with(func(c *Choices) { c.Given = given("report") }), "`gpulaunch run --report …`"},
		{"C2: --per-gpu alone", with(func(c *Choices) { c.GPUs, c.PerGPU = "", "1,2" }), ""},
		{"C2: --per-gpu with -n", with(func(c *Choices) { c.GPUs, c.Instances, c.PerGPU = "", "1,2", "1,2" }), "one of them"},
		{"C2: --per-gpu with -G", with(func(c *Choices) { c.PerGPU = "1,2" }), "or --per-gpu 1,2,4,8 (K instances on every GPU), one of them"},
		{"C3: --ddp with --per-gpu", with(func(c *Choices) { c.GPUs, c.PerGPU, c.DDP = "", "1,2", true }), "--per-gpu packs independent instances"},
		{"C9: --mps with -n", with(func(c *Choices) { c.GPUs, c.Instances, c.MPS = "", "1,2", true }), "--mps is for a packing study: --per-gpu 1,2,4 --mps"},
		{"C9: --mps with -G", with(func(c *Choices) { c.MPS = true }), "--mps is for a packing study"},
		{"C9: --mps with --per-gpu", with(func(c *Choices) { c.GPUs, c.PerGPU, c.MPS = "", "1,2", true }), ""},
		{"C10: --metric-mean with --per-gpu", with(func(c *Choices) {
			c.GPUs, c.PerGPU, c.Mean, c.Given = "", "1,2", true, given("metric", "metric-mean")
		}), "drop --metric-mean"},
		{"C11: --weak with --per-gpu", with(func(c *Choices) { c.GPUs, c.PerGPU, c.Given = "", "1,2", given("weak") }), "drop --weak"},
		{"C10: --metric-sum with --per-gpu", with(func(c *Choices) { c.GPUs, c.PerGPU, c.Sum, c.Given = "", "1,2", true, given("metric", "metric-sum") }), ""},
	} {
		err := tc.c.Check()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c        Choices
		axis     Axis
		list, of string
	}{
		{Choices{GPUs: "1,2"}, ByGPUs, "1,2", "last"},
		{Choices{Instances: "4,8", Mean: true}, ByInstances, "4,8", "mean"},
		{Choices{Instances: "4", Sum: true}, ByInstances, "4", "sum"},
		{Choices{PerGPU: "1,4"}, ByPerGPU, "1,4", "sum"},
	} {
		if tc.c.Axis() != tc.axis || tc.c.List() != tc.list || tc.c.Of() != tc.of {
			t.Errorf("%+v: axis %v, list %q, of %q", tc.c, tc.c.Axis(), tc.c.List(), tc.c.Of())
		}
	}
	for _, tc := range []struct {
		c    Choices
		want string
	}{{Choices{GPUs: "1"}, "[]"}, {Choices{PerGPU: "1"}, "[turns]"}, {Choices{PerGPU: "1", MPS: true}, "[turns mps]"}} {
		if got := fmt.Sprint(tc.c.Modes()); got != tc.want {
			t.Errorf("%+v: modes %s, want %s", tc.c, got, tc.want)
		}
	}
}

// What a size is as a run: -G's one process on G GPUs, -n's N
// instances of one GPU; the run flags first, the command last.
func TestAxisRunArgs(t *testing.T) {
	flags := []string{"--monitor-interval=1s"}
	for _, tc := range []struct {
		axis Axis
		mode Mode
		want string
	}{
		{ByGPUs, "", "--monitor-interval=1s -n 1 -G 4 -- ./app x"},
		{ByInstances, "", "--monitor-interval=1s -n 4 -G 1 -- ./app x"},
		{ByPerGPU, Turns, "--monitor-interval=1s -n 32 -G 1 --share-gpus -- ./app x"},
		{ByPerGPU, MPS, "--monitor-interval=1s -n 32 -G 1 --share-gpus --mps -- ./app x"},
	} {
		if got := strings.Join(tc.axis.RunArgs(flags, 4, 8, tc.mode, []string{"./app", "x"}), " "); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.axis.Flag, tc.mode, got, tc.want)
		}
	}
	if len(flags) != 1 {
		t.Errorf("RunArgs changed the flags it was given: %q", flags)
	}
}

// F1–F8: the sizes an allocation of 4 GPUs (or none) holds.
func TestAxisFits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		axis       Axis
		size, gpus int
		share      bool
		want       string // "": fits
		mps        bool
	}{
		{"F1: -G 4 on 4", ByGPUs, 4, 4, false, "", false},
		{"F1: -n 2 on 4", ByInstances, 2, 4, false, "", false},
		{"F2: -n 8 on 4, taking turns", ByInstances, 8, 4, true, "", false},
		{"F2: no GPU to take turns on", ByInstances, 2, 0, true, "-n 2: the allocation has 0 GPU(s) (slurm): give sizes up to 0, or ask Slurm for more GPUs; nothing was started", false},
		{"F3: -G 8 on 4, sharing or not", ByGPUs, 8, 4, true, "-G 8: one process on 8 GPUs, and the allocation has 4 (slurm): --share-gpus lets instances take turns on GPUs", false},
		{"F4: -G 8 on 4", ByGPUs, 8, 4, false, "-G 8: the allocation has 4 GPU(s) (slurm): give sizes up to 4, or ask Slurm for more GPUs; nothing was started", false},
		{"F4: -n 8 on 4 offers turns", ByInstances, 8, 4, false, "-n 8: the allocation has 4 GPU(s) (slurm): give sizes up to 4, --share-gpus for instances that take turns on them, or ask Slurm for more GPUs", false},
		{"F5: --per-gpu without a GPU", ByPerGPU, 2, 0, false, "--per-gpu: the allocation has no GPU (slurm): a packing study puts instances on GPUs; run it where the job has GPUs", false},
		{"F6: --per-gpu past a node's instances", ByPerGPU, 4096, 4, false, "--per-gpu 4096: 4096 per GPU on 4 GPUs is 16384 instances, and one node runs at most 8192: give sizes up to 2048", false},
		{"F7: --per-gpu --mps past MPS's clients", ByPerGPU, 64, 4, false, "--per-gpu 64 --mps: MPS serves at most 48 clients per GPU", true},
		{"F7: 48 under MPS", ByPerGPU, 48, 4, false, "", true},
		{"F7: 49 under MPS, the limit the room says", ByPerGPU, 49, 4, false, "MPS serves at most 48 clients per GPU here (CUDA 12.4, Volta or later; NVIDIA's MPS documentation): give sizes up to 48, or drop --mps to study taking turns alone; nothing was started", true},
		{"F8: --per-gpu 64 taking turns", ByPerGPU, 64, 4, false, "", false},
		{"F8: --per-gpu 8 on one GPU, --share-gpus or not", ByPerGPU, 8, 1, true, "", false},
	} {
		// under MPS, what mps.NodeLimit says of a Hopper node of CUDA 12.4
		room := Room{GPUs: tc.gpus, Reason: "slurm", ShareGPUs: tc.share, MPS: tc.mps, MPSLimit: mps.Limit{Clients: 48, Why: "CUDA 12.4, Volta or later"}}
		err := tc.axis.Fits(tc.size, room)
		if err == nil && tc.mps && tc.size > 12 {
			// the same room with CSCS's 8 connections per client (mps's L5)
			room.MPSLimit = mps.Limit{Clients: 12, Why: "CUDA 12.4, Volta or later, and CUDA_DEVICE_MAX_CONNECTIONS=8", Connections: 8}
			if err := tc.axis.Fits(tc.size, room); err == nil || !strings.Contains(err.Error(), "give sizes up to 12, or drop --mps to study taking turns alone, or lower CUDA_DEVICE_MAX_CONNECTIONS; nothing was started") {
				t.Errorf("%s, at 8 connections: Fits = %v, want the lower limit and its fix", tc.name, err)
			}
		}
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Fits = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A size's refusal names the size once.
func TestAxisRefused(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"the plan needs 16 GPUs", "-n 16: the plan needs 16 GPUs: nothing was started"},
		{"-n 16: 16 instances over 8 GPUs", "-n 16: 16 instances over 8 GPUs: nothing was started"},
		{"-n 16 instances are too many", "-n 16 instances are too many: nothing was started"},
		{"-n 160: another size", "-n 16: -n 160: another size: nothing was started"},
	} {
		if got := ByInstances.Refused(16, "", errors.New(tc.err)).Error(); got != tc.want {
			t.Errorf("Refused(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
	// a reason that says nothing was started is not told so twice; a
	// size under MPS says so
	got := ByPerGPU.Refused(4, MPS, errors.New("--mps: nvidia-cuda-mps-control is not on PATH: load the CUDA module; nothing was started")).Error()
	if want := "--per-gpu 4 under MPS: --mps: nvidia-cuda-mps-control is not on PATH: load the CUDA module: nothing was started"; got != want {
		t.Errorf("Refused = %q, want %q", got, want)
	}
}
