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
