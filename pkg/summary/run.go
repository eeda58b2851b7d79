//go:build linux

package summary

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/table"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// Write prints the end-of-run table, its failure and warning
// cells painted by paint. An instance's WALL runs from its first start to
// its last exit, its restarts included; a line under the table says so
// when one restarted.
func Write(w io.Writer, insts []launcher.Instance, outs []launcher.Outcome, paint Paint) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Across nodes an instance's RANK is not its number on this node.
	ranks := false
	for _, inst := range insts {
		ranks = ranks || inst.Rank != inst.Index
	}
	rank := func(i int) string {
		if ranks {
			return strconv.Itoa(insts[i].Rank) + "\t"
		}
		return ""
	}
	fmt.Fprintln(tw, "INSTANCE\t"+map[bool]string{true: "RANK\t"}[ranks]+"PID\tGPU\tCPUS\tWALL\t"+paint.Plain("EXIT")+"\tRESTARTS\tGPU% MEAN/PEAK\tGPU MEM\tPEAK RSS\tCPU\t"+paint.Plain("ENDED BY"))
	var warnings []string
	restarted := false
	for i, o := range outs {
		failed := o.Code != 0 || o.Signal != 0
		endedBy := paint.Plain(table.Dash)
		if o.EndedBy != job.EndedItself {
			endedBy = paint.Warn(string(o.EndedBy))
		}
		fmt.Fprintf(tw, "%d\t%s%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%.1fs\t%s\n", o.Index, rank(i), o.PID, table.OrDash(insts[i].GPUs), table.OrDash(insts[i].CPUs),
			o.Wall.Round(time.Millisecond), paint.Exit(o.Status(), failed, o.EndedBy), o.Restarts, utilString(o, insts[i]), table.Bytes(o.GPUMemPeak), table.Bytes(o.PeakRSS), o.CPUSeconds, endedBy)
		warnings = append(warnings, o.Warnings...)
		restarted = restarted || o.Restarts > 0
	}
	tw.Flush()
	if restarted {
		fmt.Fprintln(w, "WALL: from an instance's first start to its last exit, its restarts and their back-off included")
	}
	writeSourceNote(w, insts, outs)
	writeFates(w, outs)
	writeWarnings(w, warnings, paint)
}

// writeFates prints, for each instance a fault of its GPU's MPS server
// touched, what it was to it: the cause, or failed with the server.
func writeFates(w io.Writer, outs []launcher.Outcome) {
	for _, o := range outs {
		if o.MPSFault != "" {
			fmt.Fprintf(w, "MPS: instance %d: %s\n", o.Index, o.MPSFault)
		}
	}
}

// writeSourceNote prints the line that says which instances' GPU% is
// their GPU's, not their own, and why (telemetry.SourceNote); none when
// every figure is their own.
func writeSourceNote(w io.Writer, insts []launcher.Instance, outs []launcher.Outcome) {
	rows := make([]telemetry.Sourced, 0, len(outs))
	for i, o := range outs {
		if o.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			rows = append(rows, telemetry.Sourced{Index: o.Index, Source: o.GPUUtilSource, MPS: telemetry.MPSClient(insts[i].Env)})
		}
	}
	if note := telemetry.SourceNote(rows); note != "" {
		fmt.Fprintln(w, note)
	}
}

// WriteWarnings prints the outcomes' warnings alone: the summary's part
// that -q keeps.
func WriteWarnings(w io.Writer, outs []launcher.Outcome, paint Paint) {
	var warnings []string
	for _, o := range outs {
		warnings = append(warnings, o.Warnings...)
	}
	writeWarnings(w, warnings, paint)
}

// utilString is the GPU% MEAN/PEAK column, the instance's own use of its
// GPUs (writeSourceNote says where it is its GPU's): "-" for an instance
// without GPUs or without a sample.
func utilString(o launcher.Outcome, inst launcher.Instance) string {
	if o.GPUUtilMean < 0 || len(inst.GPUUUIDs) == 0 {
		return table.Dash
	}
	return fmt.Sprintf("%.0f/%d", o.GPUUtilMean, o.GPUUtilPeak)
}

func writeWarnings(w io.Writer, warnings []string, paint Paint) {
	for _, msg := range warnings {
		fmt.Fprintf(w, "%s %s\n", paint.Warn("warning:"), msg)
	}
}
