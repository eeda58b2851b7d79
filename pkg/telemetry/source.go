//go:build linux

package telemetry

import (
	"strconv"
	"strings"
)

// Sourced is one instance's GPU% and where it comes from, as a table of
// instances shows it: its index, its source (SourceProcesses, SourceGPU,
// "") and whether it is an MPS client (MPSClient).
type Sourced struct {
	Index  int
	Source string
	MPS    bool
}

// SourceNote is the line under a table of instances' GPU% (the summary,
// `status`, `top`, the report's picture) that says whose use each figure
// is. The rules:
//  1. No instance's figure is its GPU's: none ("") — every figure is its
//     own processes', as the column's name says, or not measured.
//  2. Otherwise it names the instances whose figure is their GPU's,
//     whoever used it, and why: the MPS clients (NVML gives a client's
//     use to the MPS server), and the others (the driver gave no
//     per-process samples: MIG, AMD, Intel, NVML's error). Where some
//     instance's figure is its processes', the line says so first.
func SourceNote(rows []Sourced) string {
	var mps, other []int
	own := false
	for _, r := range rows {
		switch {
		case r.Source == SourceGPU && r.MPS:
			mps = append(mps, r.Index)
		case r.Source == SourceGPU:
			other = append(other, r.Index)
		case r.Source == SourceProcesses:
			own = true
		}
	}
	if len(mps)+len(other) == 0 {
		return ""
	}
	var parts []string
	if len(mps) > 0 {
		parts = append(parts, instancesWord(mps)+": "+theirs(mps)+" GPU's, whoever used it (under MPS, NVML gives a client's use to the MPS server)")
	}
	if len(other) > 0 {
		parts = append(parts, instancesWord(other)+": "+theirs(other)+" GPU's, whoever used it (the driver gave no per-process samples: MIG, AMD, Intel, or NVML's error)")
	}
	head := "GPU%: "
	if own {
		head = "GPU%: each instance's own processes', but "
	}
	return head + strings.Join(parts, "; ")
}

// theirs is the possessive for the instances idx.
func theirs(idx []int) string {
	if len(idx) == 1 {
		return "its"
	}
	return "their"
}

// instancesWord is "instance 3", or "instances 0-3,6" for several: runs
// of consecutive indices as ranges.
func instancesWord(idx []int) string {
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	if len(idx) == 1 {
		return "instance " + b.String()
	}
	return "instances " + b.String()
}
