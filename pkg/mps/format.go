package mps

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// Sharing is how a plan's instances share GPUs, for the plan, the
// summary and the report (its gpu_sharing): under MPS, or taking turns
// (--share-gpus); nil when no GPU is shared.
type Sharing struct {
	Mode string      `json:"mode"` // "mps" or "turns"
	GPUs []SharedGPU `json:"gpus"`
	// vendor is the GPUs' maker: only NVIDIA's are told of --mps.
	vendor gpu.Vendor
}

// SharedGPU is one GPU that two instances or more share.
type SharedGPU struct {
	GPU       string `json:"gpu"`
	Index     int    `json:"index"`
	Instances []int  `json:"instances"`
	// Threads is each instance's active thread percentage under MPS; 0
	// when it is the job's MPS's own (ClientThreads, T2).
	Threads int `json:"active_thread_percentage,omitempty"`
}

// PlanSharing is the sharing that `plan` and --dry-run show, the plan
// refused as a run would refuse it under --mps (Check, its client limit
// read from h).
func PlanSharing(p binding.Plan, vendor gpu.Vendor, s Settings, h Host) (*Sharing, error) {
	if s.On {
		if err := Check(p, vendor, h); err != nil {
			return nil, err
		}
	}
	return SharingOf(p, vendor, s, false), nil
}

// SharingOf is the plan's sharing: its GPUs of two instances or more, in
// the order the instances first name them, and, under MPS, each one's
// share (ClientThreads; jobsMPS: under the job's own MPS, with --mps or
// without: UnderJobsMPS); nil when no GPU is shared.
func SharingOf(p binding.Plan, vendor gpu.Vendor, s Settings, jobsMPS bool) *Sharing {
	shares := Shares(p)
	if !Shared(shares) {
		return nil
	}
	out := &Sharing{Mode: "turns", vendor: vendor}
	if s.On || jobsMPS {
		out.Mode = "mps"
	}
	for _, sh := range SharedGPUs(shares) {
		g := SharedGPU{GPU: sh.GPU.UUID, Index: sh.GPU.Index, Instances: sh.Slots}
		if s.On {
			g.Threads = ClientThreads(s.Threads, len(sh.Slots), jobsMPS)
		}
		out.GPUs = append(out.GPUs, g)
	}
	return out
}

// Write prints the sharing under a plan or a summary: its lines, and what
// a shared GPU's figures mean; nothing when s is nil.
func (s *Sharing) Write(w io.Writer) {
	for _, line := range s.Lines() {
		fmt.Fprintf(w, "Sharing:   %s\n", line)
	}
	if s != nil {
		fmt.Fprintln(w, "Sharing:   "+s.figures())
	}
	if line := FateLine(s); line != "" {
		fmt.Fprintln(w, "Sharing:   "+line)
	}
}

// figures says what a shared GPU's figures mean, by how it is shared.
// NVML's per-process samples (nvmlDeviceGetProcessUtilization) tell the
// instances taking turns on a GPU apart, as telemetry.InstanceUtil reads
// them; under MPS they give every client's use to the MPS server, so an
// MPS client's GPU% is the GPU's. The process list tells both apart, and
// under MPS lists each client (type M+C) with the memory it holds.
func (s *Sharing) figures() string {
	if s.Mode == "mps" {
		return "GPU% under MPS is the GPU's, the same for each of its instances (NVML gives the clients' use to the MPS server); GPU MEM is each instance's own processes'"
	}
	return "GPU% is each instance's own processes' SM% (NVML's per-process samples; the GPU's where the driver gives none); GPU MEM is each instance's own processes'"
}

// Lines are the sharing, a line per shared GPU: "GPU 0 (GPU-1a2b…):
// instances 0,4 under MPS, 50% of its SMs each"; none when s is nil.
func (s *Sharing) Lines() []string {
	if s == nil {
		return nil
	}
	var out []string
	how := map[string]string{"mps": "under MPS", "turns": "taking turns (time slicing)"}[s.Mode]
	if s.Mode == "turns" && s.vendor == gpu.NVIDIA {
		how = "taking turns (time slicing; --mps to share it through MPS)"
	}
	for _, g := range s.GPUs {
		ids := make([]string, len(g.Instances))
		for i, n := range g.Instances {
			ids[i] = strconv.Itoa(n)
		}
		share := ""
		if g.Threads > 0 {
			share = fmt.Sprintf(", %d%% of its SMs each", g.Threads)
		}
		out = append(out, fmt.Sprintf("GPU %d (%s): instances %s %s%s", g.Index, table.ShortUUID(g.GPU), strings.Join(ids, ","), how, share))
	}
	return out
}
