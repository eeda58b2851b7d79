package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// PlanDoc is `plan --json` (docs/plan.schema.json), and a run report's
// "plan".
type PlanDoc struct {
	Host     string         `json:"host,omitempty"`
	Backend  string         `json:"gpu_backend"`
	Request  RequestDoc     `json:"request"`
	CPUs     string         `json:"allowed_cpus"`
	Slots    []binding.Slot `json:"slots"`
	Locality float64        `json:"locality"`
	// Sharing is how instances share GPUs (mps.Sharing:
	// docs/plan.schema.json's gpu_sharing); absent when none is shared.
	Sharing  *mps.Sharing `json:"gpu_sharing,omitempty"`
	Warnings []string     `json:"warnings"`
}

// RequestDoc is the plan's request: -n, -G, -c, --mem-bind, --share-gpus.
type RequestDoc struct {
	Instances       int    `json:"instances"`
	GPUsPerInstance int    `json:"gpus_per_instance"`
	CPUsPerInstance int    `json:"cpus_per_instance"`
	MemPolicy       string `json:"mem_policy"`
	ShareGPUs       bool   `json:"share_gpus"`
}

// PlanJSON is the plan p of request r on allocation a as `plan --json`
// writes it; sharing is its GPU sharing, nil when none is shared.
// Lists are lists, empty ones too: never null (docs/plan.schema.json).
func PlanJSON(a binding.Allocation, r binding.Request, p binding.Plan, sharing *mps.Sharing) PlanDoc {
	warn := append(append([]string{}, a.Warnings...), p.Warnings...)
	p.Slots = append([]binding.Slot{}, p.Slots...)
	for i := range p.Slots {
		if p.Slots[i].GPUs == nil {
			p.Slots[i].GPUs = []gpu.GPU{}
		}
	}
	return PlanDoc{Host: a.Hostname, Backend: a.Backend, CPUs: a.CPUs.String(), Slots: p.Slots, Locality: p.Locality(), Warnings: warn, Sharing: sharing,
		Request: RequestDoc{r.Instances, r.GPUsPerInstance, r.CPUsPerInstance, string(r.MemPolicy), r.ShareGPUs}}
}

// WritePlan writes the plan as `plan` and --dry-run show it: a row per
// instance, the locality, then sharing (mps.Sharing.Write; nil when none
// is shared), then the allocation's and the plan's warnings.
func WritePlan(w io.Writer, a binding.Allocation, p binding.Plan, sharing *mps.Sharing) {
	fmt.Fprintf(w, "Plan for %d instance(s) on %s (%sGPUs from %s), %d allowed CPUs:\n", len(p.Slots), table.OrDash(a.Hostname), vendorWord(a.Vendor), a.Backend, a.CPUs.Size())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  INSTANCE\tGPU (PCI)\tUUID\tNUMA\tCPUS\tLOCAL\tMEMORY")
	for _, s := range p.Slots {
		var bus, uuid, numa []string
		for _, g := range s.GPUs {
			bus, uuid, numa = append(bus, g.Address()), append(uuid, table.ShortUUID(g.UUID)), append(numa, numaString(g.NUMANode))
		}
		local := table.Dash
		if s.LocalCPUs >= 0 {
			local = fmt.Sprintf("%d/%d", s.LocalCPUs, s.CPUs.Size())
		}
		mem := string(s.MemPolicy)
		if !s.MemNodes.IsEmpty() {
			mem += ":" + s.MemNodes.String()
		}
		cpus := s.CPUs.String()
		if s.SharedCPUs {
			cpus += " (shared)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Index, table.OrDash(strings.Join(bus, ",")), table.OrDash(strings.Join(uuid, ",")),
			table.OrDash(strings.Join(numa, ",")), cpus, local, mem)
	}
	tw.Flush()
	fmt.Fprintf(w, "Locality:  %.0f%% of the CPUs are local to their instance's GPU(s)\n", 100*p.Locality())
	sharing.Write(w)
	writeWarnings(w, append(append([]string{}, a.Warnings...), p.Warnings...))
}

// writeWarnings is the warnings under a plan or a node's description.
func writeWarnings(w io.Writer, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintln(w, "Warnings:")
	for _, x := range warnings {
		fmt.Fprintf(w, "  - %s\n", x)
	}
}

// numaString is a GPU's NUMA node: "?" when unknown.
func numaString(n int) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}
