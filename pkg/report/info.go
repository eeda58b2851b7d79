package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// InfoDoc is `info --json` (docs/info.schema.json), but for its "mps",
// which the CLI adds beside it on an NVIDIA node.
type InfoDoc struct {
	binding.Allocation
	Topology TopologySummary `json:"topology"`
}

// TopologySummary is the node's CPUs in `info --json`.
type TopologySummary struct {
	CPUs           string `json:"cpus"`
	Sockets        int    `json:"sockets"`
	NUMANodes      []int  `json:"numa_nodes"`
	ThreadsPerCore int    `json:"threads_per_core"`
}

// InfoJSON is what `info --json` says of allocation a; lists are lists,
// empty ones too.
func InfoJSON(a binding.Allocation) InfoDoc {
	if a.GPUs == nil {
		a.GPUs = []gpu.GPU{}
	}
	if a.Warnings == nil {
		a.Warnings = []string{}
	}
	t := a.Topology
	return InfoDoc{Allocation: a, Topology: TopologySummary{
		CPUs: t.CPUs().String(), Sockets: t.Sockets(), NUMANodes: t.NUMANodes(), ThreadsPerCore: t.ThreadsPerCore(),
	}}
}

// WriteInfo writes what `info` says of allocation a, a fact a line.
func WriteInfo(w io.Writer, a binding.Allocation) {
	t := a.Topology
	fmt.Fprintf(w, "Host:      %s (%sGPUs from %s", table.OrDash(a.Hostname), vendorWord(a.Vendor), a.Backend)
	if a.Driver != "" {
		fmt.Fprintf(w, ", driver %s", a.Driver)
	}
	fmt.Fprintln(w, ")")
	if len(a.GPUs) == 0 {
		fmt.Fprintf(w, "GPUs:      none found: %s\n", a.GPUReason)
	} else {
		fmt.Fprintf(w, "GPUs:      %d — %s\n", len(a.GPUs), a.GPUReason)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\tUUID\tPCI\tNUMA\tLOCAL CPUS\tMEMORY\tNAME\n", ordinalHeader(a))
		for i, g := range a.GPUs {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", i, g.UUID, g.BusID, numaString(g.NUMANode),
				table.OrDash(g.LocalCPUs.String()), table.Bytes(g.MemoryBytes), g.Name)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "CPUs:      %d allowed (%s) of %d; %d socket(s), NUMA nodes %s, %d thread(s) per core\n",
		a.CPUs.Size(), a.CPUs, t.CPUs().Size(), t.Sockets(), intsString(t.NUMANodes()), t.ThreadsPerCore())
	mem := "no cgroup memory limit"
	if a.MemoryLimit > 0 {
		mem = "cgroup memory limit " + table.Bytes(a.MemoryLimit)
	}
	fmt.Fprintf(w, "Memory:    NUMA nodes %s; %s\n", a.MemNodes, mem)
	writeScheduler(w, a)
	writeWarnings(w, a.Warnings)
}

// writeScheduler is what info says of the scheduler's job and step
// (sched.Allocation.Words), and of the launcher's local rank.
func writeScheduler(w io.Writer, a binding.Allocation) {
	fmt.Fprintln(w, a.Sched.Words())
	if a.LocalRank != nil {
		fmt.Fprintf(w, "Launcher:  local rank %d", a.LocalRank.Rank)
		if a.LocalRank.Size > 0 {
			fmt.Fprintf(w, " of %d", a.LocalRank.Size)
		}
		fmt.Fprintf(w, " (%s)\n", a.LocalRank.Source)
	}
}

// vendorWord names the vendor before "GPUs", "" for a node without any.
func vendorWord(v gpu.Vendor) string {
	if w := gpuvendor.Of(v).Word; w != "" {
		return w + " "
	}
	return ""
}

// ordinalHeader names the runtime whose device numbers the GPU table's
// first column gives: what the app sees as device i in this environment
// (gpuvendor.Vendor.OrdinalName: Level Zero's are FLAT ordinals, a tile
// each, unless the hierarchy is COMPOSITE, where the app sees cards).
func ordinalHeader(a binding.Allocation) string {
	return gpuvendor.Of(a.Vendor).OrdinalName(a.ZEHierarchy)
}

// intsString is a list of ids, comma-separated.
func intsString(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
