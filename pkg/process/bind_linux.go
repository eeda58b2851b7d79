package process

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
)

// bindThread applies a slot's CPU affinity and memory policy to the
// calling thread.
func bindThread(b Binding) error {
	if !b.CPUs.IsEmpty() {
		ids := b.CPUs.List()
		mask := unix.NewCPUSet(ids[len(ids)-1] + 1)
		for _, c := range ids {
			mask.Set(c)
		}
		if err := unix.SchedSetaffinityDynamic(0, mask); err != nil {
			return fmt.Errorf("binding to CPUs %s: %w", b.CPUs, err)
		}
	}
	if b.MemNodes.IsEmpty() || b.MemPolicy == binding.MemNone || b.MemPolicy == "" {
		return nil
	}
	mode := unix.MPOL_PREFERRED
	if b.MemPolicy == binding.MemBind {
		mode = unix.MPOL_BIND
	}
	nodes := b.MemNodes.List()
	mask := unix.NewCPUSet(max(nodes[len(nodes)-1]+1, 64))
	for _, n := range nodes {
		mask.Set(n)
	}
	if err := unix.SetMemPolicyDynamic(mode, mask); err != nil {
		return fmt.Errorf("memory policy %s on NUMA node(s) %s: %w", b.MemPolicy, b.MemNodes, err)
	}
	return nil
}
