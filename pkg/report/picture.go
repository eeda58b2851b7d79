//go:build linux

package report

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/chart"
	"github.com/gpulaunch/gpulaunch/pkg/table"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// Picture turns a report into what chart draws.
func Picture(r Run) chart.Run {
	title := strings.Join(r.Command, " ") + "  on " + r.Host + ", " + r.Started.UTC().Format("2006-01-02 15:04 UTC")
	if r.Launch.Nodes > 1 {
		title += fmt.Sprintf(" (node %d of %d)", r.Launch.Node, r.Launch.Nodes)
	}
	pic := chart.Run{Title: title, Summary: pictureTable(r), GPUNote: r.GPUTelemetry}
	for i, in := range r.Instances {
		ci := chart.Instance{Label: fmt.Sprintf("instance %d", in.Instance)}
		if i < len(r.Plan.Slots) && len(r.Plan.Slots[i].GPUs) > 0 {
			var bus []string
			for _, g := range r.Plan.Slots[i].GPUs {
				bus = append(bus, g.Address())
			}
			ci.Label += " (" + strings.Join(bus, ",") + ")"
		}
		if s := in.Series; s != nil {
			ci.T, ci.GPUUtil, ci.GPUMem, ci.CPU, ci.RSS = s.T, s.GPUUtil, s.GPUMem, s.CPU, s.RSS
		}
		ci.GPUUtilSource = in.GPUUtilSource
		if len(ci.T) == 0 {
			ci.Label += ": no samples"
		}
		for _, e := range in.Events {
			ci.Events = append(ci.Events, chart.Event{T: e.T, Kind: e.Kind})
		}
		pic.Instances = append(pic.Instances, ci)
	}
	return pic
}

// pictureTable is the summary beside the picture: narrower than the
// run's own, to fit.
func pictureTable(r Run) []string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INST\tEXIT\tWALL\tRESTARTS\tGPU% MEAN/PEAK\tGPU MEM")
	for _, in := range r.Instances {
		exit := fmt.Sprint(in.ExitCode)
		if in.Signal != "" {
			exit = in.Signal
		}
		util := table.Dash
		if in.GPUUtilMean != nil {
			util = fmt.Sprintf("%.0f/%d", *in.GPUUtilMean, in.GPUUtilPeak)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", in.Instance, exit, (time.Duration(in.WallSeconds * float64(time.Second))).Round(time.Second),
			in.Restarts, util, table.Bytes(in.GPUMemPeak))
	}
	tw.Flush()
	rows := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	rows = append(rows, "", fmt.Sprintf("exit status %d, wall %s", r.ExitCode, (time.Duration(r.WallSeconds*float64(time.Second))).Round(time.Second)))
	if note := sourceNote(r); note != "" {
		rows = append(rows, note)
	}
	if r.GPUTelemetry != "" {
		rows = append(rows, "GPU use not measured: "+strings.TrimPrefix(r.GPUTelemetry, "no GPU telemetry: "))
	}
	if n := len(r.Warnings); n > 0 {
		rows = append(rows, fmt.Sprintf("%d warning(s): see the report's warnings", n))
	}
	return rows
}

// sourceNote is the summary's line that names the instances whose GPU%
// is their GPU's, and why (telemetry.SourceNote).
func sourceNote(r Run) string {
	rows := make([]telemetry.Sourced, 0, len(r.Instances))
	for _, in := range r.Instances {
		if in.GPUUtilMean != nil {
			rows = append(rows, telemetry.Sourced{Index: in.Instance, Source: in.GPUUtilSource, MPS: in.MPSClient})
		}
	}
	return telemetry.SourceNote(rows)
}
