//go:build linux

package process

import (
	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// Binding is what a process is bound to before exec; empty CPUs: no affinity.
type Binding struct {
	CPUs      cpuset.Set
	MemPolicy binding.MemPolicy
	MemNodes  cpuset.Set
}

// BindingOf is the binding of a plan's slot.
func BindingOf(s binding.Slot) Binding {
	return Binding{CPUs: s.CPUs, MemPolicy: s.MemPolicy, MemNodes: s.MemNodes}
}

// DescribeCPUs is a binding's CPUs for the log: "not bound" without any.
func (b Binding) DescribeCPUs() string {
	if b.CPUs.IsEmpty() {
		return "not bound"
	}
	return b.CPUs.String()
}

// DescribeMemory is a binding's memory policy for the log.
func (b Binding) DescribeMemory() string {
	mem := string(b.MemPolicy)
	if !b.MemNodes.IsEmpty() {
		mem += " on NUMA " + b.MemNodes.String()
	}
	return mem
}
