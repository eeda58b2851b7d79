package scaling

import (
	"fmt"
	"io"
	"slices"
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
	if s.By == ByPerGPU.By {
		unit = "runs/s, instances/wall" // study.runPoint, P3
	}
	if s.Metric != nil {
		unit = s.Metric.Unit
	}
	metric := "METRIC"
	if u := strings.TrimSpace(unit); u != "" {
		metric += " (" + u + ")" // no --unit: no empty "()"
	}
	if s.By == ByPerGPU.By {
		s.writePacking(w, metric)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GPUS\tINSTANCES\t%s\tMIN..MAX\tSPEEDUP\tIDEAL\tEFFICIENCY\t%s\tGPU MEM/GPU\tSTATUS\n", metric, UtilColumn)
	for _, p := range s.Points {
		fmt.Fprintf(tw, "%d\t%d×%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.GPUs, p.Instances, p.GPUsPerInstance, num(p.Median, "%.4g"),
			spread(p), num(p.Speedup, "%.2f"), num(p.Ideal, "%.2g"), percent(p.Efficiency), num(p.GPUUtil, "%.0f"), table.BytesOf(p.GPUMemPerGPU), p.Status)
	}
	tw.Flush()
	fmt.Fprintf(w, "verdict: %s\n", s.Verdict)
}

// UtilColumn is the tables' GPU% column: how busy each GPU was
// (study.GPUBusy), the mean over the GPUs; not an instance's own figure,
// which the JSON's each_instance keeps.
const UtilColumn = "GPU% (each GPU)"

// writePacking is WriteTable of a packing study: a row per size and
// mode, the summed figure, its speedup over the baseline, the instances'
// own figures (their mean and min..max), how busy each GPU was, the most
// GPU memory one instance held and the headroom k of them leave on their
// GPU.
func (s *Study) writePacking(w io.Writer, metric string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PER GPU\tMODE\tINSTANCES\t%s\tMIN..MAX\tSPEEDUP\tEACH INSTANCE\t%s\tGPU MEM/INSTANCE\tHEADROOM/GPU\tSTATUS\n", metric, UtilColumn)
	for _, p := range s.Points {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.PerGPU, p.Mode.Words(p.PerGPU), p.Instances, num(p.Median, "%.4g"),
			spread(p), num(p.Speedup, "%.2f"), eachFigures(p.Each), num(p.GPUUtil, "%.0f"), table.BytesOf(p.InstanceMemPeak), headroom(p.Headroom), p.Status)
	}
	tw.Flush()
	fmt.Fprintf(w, "verdict: %s\n", s.Verdict)
}

// eachFigures is the instances' own figures: "mean (min..max)", or the
// one figure where they agree; "-" when none gave one.
func eachFigures(each []InstanceFigure) string {
	var figs []float64
	for _, e := range each {
		if e.Metric != nil {
			figs = append(figs, *e.Metric)
		}
	}
	if len(figs) == 0 {
		return "-"
	}
	lo, hi := slices.Min(figs), slices.Max(figs)
	if lo == hi {
		return fmt.Sprintf("%.4g", lo)
	}
	return fmt.Sprintf("%.4g (%.4g..%.4g)", *mean(figs), lo, hi)
}

// headroom is a headroom's bytes, "over by …" below 0.
func headroom(x *float64) string {
	if x != nil && *x < 0 {
		return "over by " + table.Bytes(uint64(-*x))
	}
	return table.BytesOf(x)
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
