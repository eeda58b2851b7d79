package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/chart"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/report"
)

const pictureUsage = `Usage: gpulaunch report FILE [--svg OUT] [--html OUT]

Draws a run from its --report FILE: each instance's starts, exits and
warnings in a row of their own, its GPU use (its own processes' SM %, or its
GPU's under MPS and where the driver cannot tell processes apart: the panel
says which), GPU memory, CPU use and resident memory over time (the GPU panels
only when GPU use was measured), and the summary table. --svg writes a picture, --html one self-contained page
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
	r, err := report.Read(fs.Arg(0))
	if err != nil {
		return usageError{err}
	}
	uses := []outputs.Use{{Flag: "FILE", Path: fs.Arg(0), Reads: "the report to draw"}}
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if err := outputs.Document("report "+o.flag, o.path, "nothing was written"); err != nil {
			return usageError{err}
		}
		if o.path != "-" {
			uses = append(uses, outputs.Use{Flag: o.flag, Path: o.path, Writes: o.what})
		}
	}
	if err := asUsage(outputs.Clash(uses, outputs.Identity)); err != nil {
		return err
	}
	pic := report.Picture(r)
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
	return outputs.WriteWhole(o.path, []byte(b.String()))
}

func reportFlagSet(svgOut, htmlOut *string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.StringVar(svgOut, "svg", "", "write the picture to OUT as SVG (- for stdout)")
	fs.StringVar(htmlOut, "html", "", "write a self-contained HTML page (the picture, with its table) to OUT (- for stdout)")
	return fs
}
