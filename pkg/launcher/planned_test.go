package launcher

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Planned.Instances, rule by rule, for two slots of a node.
func TestPlannedInstances(t *testing.T) {
	slots := []binding.Slot{
		{Index: 0, GPUs: []gpu.GPU{{UUID: "GPU-a", BusID: "0000:18:00.0"}}, CPUs: cpuset.MustParse("0-3")},
		{Index: 1, GPUs: []gpu.GPU{{UUID: "GPU-b", BusID: "0000:2a:00.0"}, {UUID: "GPU-c", BusID: "0000:3a:00.0"}}, CPUs: cpuset.MustParse("4-7")},
	}
	p := Planned{Slots: slots, Group: nodegroup.Local(2, "n1"), Base: []string{"HOME=/h"}, Path: "/bin/app", Argv: []string{"app", "--shard", "%t"},
		Stdout: "out-%t.log", Names: instance.Names{Host: "n1"}}
	for _, bind := range []bool{false, true} {
		p.Bind = bind
		insts, err := p.Instances()
		if err != nil || len(insts) != 2 {
			t.Fatalf("bind %v: %d instances, %v", bind, len(insts), err)
		}
		one := insts[1]
		if !slices.Contains(one.Env, "HOME=/h") || !slices.Contains(one.Env, "RANK=1") || one.Rank != 1 {
			t.Errorf("1: instance 1's environment %q, rank %d", one.Env, one.Rank)
		}
		if strings.Join(one.Args, " ") != "app --shard 1" || one.Path != "/bin/app" {
			t.Errorf("2: instance 1 runs %s %q", one.Path, one.Args)
		}
		if got := one.Binding.CPUs.String(); (got == "4-7") != bind {
			t.Errorf("3: bind %v: instance 1 bound to %q", bind, got)
		}
		if one.GPUs != "0000:2a:00.0,0000:3a:00.0" || one.CPUs != "4-7" || !slices.Equal(one.GPUUUIDs, []string{"GPU-b", "GPU-c"}) {
			t.Errorf("4: instance 1 shows GPUs %q CPUs %q UUIDs %q", one.GPUs, one.CPUs, one.GPUUUIDs)
		}
		if one.Stdout != "out-1.log" || one.Stderr != "" {
			t.Errorf("5: instance 1 writes %q and %q", one.Stdout, one.Stderr)
		}
	}
}

// StartWarnings, rule by rule, in their order.
func TestStartWarnings(t *testing.T) {
	alloc := binding.Allocation{Warnings: []string{"alloc"}, Sched: sched.Allocation{BatchShellPID: 10}}
	plan := binding.Plan{Warnings: []string{"plan"}}
	const batch, simulated = "child of the batch script", "simulated node"
	for _, tc := range []struct {
		name          string
		gpus, pid, pp int
		bind          bool
		want          []string
	}{
		{"1: with GPUs, the allocation's then the plan's", 1, 20, 1, true, []string{"alloc", "plan"}},
		{"1: without GPUs, the plan's only", 0, 20, 1, true, []string{"plan"}},
		{"2: forked by the batch shell", 0, 20, 10, true, []string{"plan", batch}},
		{"2: exec'd by it: no warning", 0, 10, 1, true, []string{"plan"}},
		{"3: a simulated node, last", 1, 20, 10, false, []string{"alloc", "plan", batch, simulated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := StartWarnings(alloc, plan, tc.gpus, tc.pid, tc.pp, tc.bind)
			if len(got) != len(tc.want) {
				t.Fatalf("%q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d %q, want %q", i, got[i], w)
				}
			}
		})
	}
}
