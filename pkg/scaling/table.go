package scaling

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// Whole says whether every size ran every round and gave a figure: the
// study's exit status is 0 only then.
func (s *Study) Whole() bool {
	for _, p := range s.Points {
		if p.Status != "ok" || len(p.Runs) < s.Repeat {
			return false
		}
	}
	return true
}

// ExitStatus is the study's exit status: 130 when it was interrupted
// (Ctrl-C), else 1 when it is not whole (Whole), else 0.
func (s *Study) ExitStatus() int {
	switch {
	case s.Interrupted:
		return 130
	case !s.Whole():
		return 1
	}
	return 0
}

// FigureString is a figure with its unit: "12.5 samples/s", or "0.25
// runs/s" for the inverse of the wall time (no --metric).
func (s *Study) FigureString(x float64) string {
	if s.Metric == nil {
		return fmt.Sprintf("%.4g runs/s", x)
	}
	return strings.TrimSpace(fmt.Sprintf("%.4g %s", x, s.Metric.Unit))
}

// WriteTable prints the analysed study: a row per size, then the
// verdict. "-" stands for what a size does not have.
func (s *Study) WriteTable(w io.Writer) {
	unit := "runs/s, 1/wall"
	if s.Metric != nil {
		unit = s.Metric.Unit
	}
	metric := "METRIC"
	if u := strings.TrimSpace(unit); u != "" {
		metric += " (" + u + ")" // no --unit: no empty "()"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GPUS\tINSTANCES\t%s\tMIN..MAX\tSPEEDUP\tIDEAL\tEFFICIENCY\tGPU%%\tGPU MEM/GPU\tSTATUS\n", metric)
	for _, p := range s.Points {
		fmt.Fprintf(tw, "%d\t%d×%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.GPUs, p.Instances, p.GPUsPerInstance, num(p.Median, "%.4g"),
			spread(p), num(p.Speedup, "%.2f"), num(p.Ideal, "%.2g"), percent(p.Efficiency), num(p.GPUUtil, "%.0f"), table.BytesOf(p.GPUMemPerGPU), p.Status)
	}
	tw.Flush()
	fmt.Fprintf(w, "verdict: %s\n", s.Verdict)
}

func num(x *float64, format string) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf(format, *x)
}

func percent(x *float64) string {
	if x == nil {
		return "-"
	}
	return Pct(*x) // rounded as the verdict rounds it
}

func spread(p Point) string {
	if p.Min == nil || *p.Min == *p.Max {
		return "-"
	}
	return fmt.Sprintf("%.4g..%.4g", *p.Min, *p.Max)
}
