package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// `plan --simulate alps-gh200` binds each instance's memory to its Grace's
// node (0-3), never to a GPU's memory node (4, 12, 20, 28), with NVML (the
// go-nvml mock; nil in a build without cgo) and without it.
func TestPlanGH200BindsMemoryToTheGrace(t *testing.T) {
	paths := map[string]gpu.NVML{"without NVML": nil}
	if nvml.Library != nil {
		paths["with NVML"] = nvml.Library
	}
	gpuMemory := cpuset.New(4, 12, 20, 28)
	for name, lib := range paths {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			a := &app{stdout: &out, stderr: &errb, env: nil, root: noGPUMachine(), nvml: lib, hostname: "testhost", uid: os.Getuid(), tmpRoot: t.TempDir()}
			if code := a.main([]string{"plan", "--simulate", "alps-gh200", "-n", "4", "--json"}); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var p planOut
			if err := json.Unmarshal(out.Bytes(), &p); err != nil {
				t.Fatalf("plan --json: %v\n%s", err, out.String())
			}
			if len(p.Slots) != 4 {
				t.Fatalf("%d slots", len(p.Slots))
			}
			for i, s := range p.Slots {
				if s.MemPolicy != "preferred" || !s.MemNodes.Equal(cpuset.New(i)) || s.MemNodes.Overlaps(gpuMemory) || s.GPUs[0].NUMA != i {
					t.Errorf("slot %d: GPU on node %d, memory %s:%s; want preferred:%d", i, s.GPUs[0].NUMA, s.MemPolicy, s.MemNodes, i)
				}
				if want := cpuset.Range(72*i, 72*i+71); !s.CPUs.Equal(want) {
					t.Errorf("slot %d: CPUs %s, want its Grace's %s", i, s.CPUs, want)
				}
			}
		})
	}
}
