package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/chart"
	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

const pictureUsage = `Usage: gpulaunch report FILE [--svg OUT] [--html OUT]

Draws a run from its --report FILE: each instance's starts, exits and
warnings in a row of their own, its GPU utilisation, GPU memory, CPU use and
resident memory over time (the GPU panels only when GPU use was measured), and
the summary table. --svg writes a picture, --html one self-contained page
holding the picture; give either or both. OUT - is stdout. See docs/report.md.

Examples:
  gpulaunch -n 8 --report run.json -- python train.py
  gpulaunch report run.json --svg run.svg
  gpulaunch report run.json --svg run.svg --html run.html
  gpulaunch report run.json --svg - | rsvg-convert -o run.png
`

// report draws a run report (`gpulaunch report FILE --svg OUT`).
func (a *app) report(args []string) error {
	svgOut, htmlOut := new(string), new(string)
	fs := reportFlagSet(svgOut, htmlOut)
	if done, err := a.parseFlags(fs, args, pictureUsage); done || err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return usagef("give one report file: gpulaunch report run.json --svg run.svg")
	case *svgOut == "" && *htmlOut == "":
		return usagef("give --svg OUT, --html OUT or both: what to draw the report as")
	case *svgOut == "-" && *htmlOut == "-":
		return usagef("--svg - and --html -: both to stdout would be one stream of two documents; give one of them a file")
	}
	outs := []pictureOut{{"--svg", "the SVG picture", *svgOut, chart.RunSVG}, {"--html", "the HTML page", *htmlOut, chart.RunHTML}}
	r, err := readReport(fs.Arg(0))
	if err != nil {
		return err
	}
	uses := []outputs.Use{{Flag: "FILE", Path: fs.Arg(0), Reads: "the report to draw"}}
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if err := outputName("report "+o.flag, o.path, false); err != nil {
			return err
		}
		if o.path == "-" {
			continue
		}
		if err := checkWritable(o.path); err != nil {
			return usagef("%s %s: %v: nothing was written", o.flag, o.path, err)
		}
		uses = append(uses, outputs.Use{Flag: o.flag, Path: o.path, Writes: o.what})
	}
	if err := fileClash(uses, fileIdentity); err != nil {
		return err
	}
	pic := runPicture(r)
	for _, o := range outs {
		if err := o.write(a, pic, fs.Arg(0)); err != nil {
			return err
		}
	}
	return nil
}

// pictureOut is one of report's outputs: its flag, its file ("" none,
// "-" stdout) and how it is drawn.
type pictureOut struct {
	flag, what, path string
	draw             func(chart.Run, io.Writer) error
}

// write draws the picture and writes it whole.
func (o pictureOut) write(a *app, pic chart.Run, from string) error {
	if o.path == "" {
		return nil
	}
	var b strings.Builder
	if err := o.draw(pic, &b); err != nil {
		return fmt.Errorf("drawing %s: %w", from, err)
	}
	if o.path == "-" {
		_, err := io.WriteString(a.stdout, b.String())
		return err
	}
	return writeWhole(o.path, []byte(b.String()))
}

func reportFlagSet(svgOut, htmlOut *string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.StringVar(svgOut, "svg", "", "write the picture to OUT as SVG (- for stdout)")
	fs.StringVar(htmlOut, "html", "", "write a self-contained HTML page (the picture, with its table) to OUT (- for stdout)")
	return fs
}

// readReport reads a --report file, refusing what is not one: another
// JSON gpulaunch writes is named, with where its own picture comes from.
func readReport(path string) (runReport, error) {
	var r runReport
	data, err := os.ReadFile(path)
	if err != nil {
		return r, usagef("cannot read the report: %v: give the file a run's --report FILE wrote", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return r, usagef("%s is not a gpulaunch run report (%v): give the file a run's --report FILE wrote", path, jsonerr.Explain(path, data, err))
	}
	if what, fix := jsonKind(fields); what != "" {
		return r, usagef("%s is %s: %s", path, what, fix)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, usagef("%s is not a gpulaunch run report (%v): give the file a run's --report FILE wrote", path, jsonerr.Explain(path, data, err))
	}
	if r.SchemaVersion != reportSchemaVersion {
		return r, usagef("%s has schema_version %d; this gpulaunch reads %d: draw it with the gpulaunch that wrote it", path, r.SchemaVersion, reportSchemaVersion)
	}
	return r, nil
}

// jsonKind tells a run report from the other JSON gpulaunch writes, by
// the fields only each has; what is "" for a run report, else what the
// document is, and fix where its picture comes from. The rules, in order:
//  1. A run report has "plan", "instances" and "monitor_interval_seconds".
//  2. A scaling study (scale --json) has "points" and "verdict": scale
//     draws it itself, with --svg.
//  3. A plan (plan --json) has "slots" and "request".
//  4. A node's description (info --json) has "gpu_reason" and "topology".
//  5. A live run's status (status --json) has "run" and "taken".
//  6. Anything else is not gpulaunch's.
func jsonKind(fields map[string]json.RawMessage) (what, fix string) {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := fields[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("plan", "instances", "monitor_interval_seconds"):
		return "", ""
	case has("points", "verdict"):
		return "a scaling study (gpulaunch scale --json), not a run report", "its picture is drawn by the study itself: `gpulaunch scale … --svg OUT`; `gpulaunch report` draws a run's --report FILE"
	case has("slots", "request"):
		return "a plan (gpulaunch plan --json), not a run report", "a plan has nothing run to draw; run it with --report FILE and draw that"
	case has("gpu_reason", "topology"):
		return "a node's description (gpulaunch info --json), not a run report", "it has nothing run to draw; give the file a run's --report FILE wrote"
	case has("run", "taken"):
		return "a live run's status (gpulaunch status --json), not a run report", "draw the run's own --report FILE once it has ended"
	}
	return "not a gpulaunch run report (it has no \"plan\" and \"instances\")", "give the file a run's --report FILE wrote"
}

// runPicture turns a report into what chart draws.
func runPicture(r runReport) chart.Run {
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
func pictureTable(r runReport) []string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INST\tEXIT\tWALL\tRESTARTS\tGPU% MEAN/PEAK\tGPU MEM")
	for _, in := range r.Instances {
		exit := fmt.Sprint(in.ExitCode)
		if in.Signal != "" {
			exit = in.Signal
		}
		util := "-"
		if in.GPUUtilMean != nil {
			util = fmt.Sprintf("%.0f/%d", *in.GPUUtilMean, in.GPUUtilPeak)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", in.Instance, exit, (time.Duration(in.WallSeconds * float64(time.Second))).Round(time.Second),
			in.Restarts, util, sizeOrDash(in.GPUMemPeak))
	}
	tw.Flush()
	rows := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	rows = append(rows, "", fmt.Sprintf("exit status %d, wall %s", r.ExitCode, (time.Duration(r.WallSeconds*float64(time.Second))).Round(time.Second)))
	if r.GPUTelemetry != "" {
		rows = append(rows, "GPU use not measured: "+strings.TrimPrefix(r.GPUTelemetry, "no GPU telemetry: "))
	}
	if n := len(r.Warnings); n > 0 {
		rows = append(rows, fmt.Sprintf("%d warning(s): see the report's warnings", n))
	}
	return rows
}

func sizeOrDash(b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// checkWritable says why path could not be written whole (writeWhole),
// before anything is.
func checkWritable(path string) error {
	return outputs.NewWritableCheck().Replaced(filepath.Clean(path))
}
