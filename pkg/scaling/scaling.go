package scaling

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// MaxRepeat is the most rounds a study may run (--repeat): each runs
// every size once, and a median of more than 1,000 runs is no better
// measured than one of 1,000.
const MaxRepeat = 1000

// Study is a whole study: what was measured and what it says. It is also
// the study's JSON (docs/scale.schema.json).
type Study struct {
	SchemaVersion int      `json:"schema_version"`
	Command       []string `json:"command"`
	Host          string   `json:"host"`
	Started       string   `json:"started"` // RFC 3339, UTC
	// By is "gpus" (one process on G GPUs, -G), "instances" (N
	// instances of one GPU each, -n) or "per_gpu" (K instances on every
	// GPU, --per-gpu: a packing study).
	By   string `json:"by"`
	DDP  bool   `json:"ddp"`
	Weak bool   `json:"weak"`
	// Metric is how the figure was read; nil: the inverse of the wall time.
	Metric *MetricInfo `json:"metric"`
	// Threshold is the efficiency below which a size is not worth it.
	Threshold   float64 `json:"efficiency_threshold"`
	Repeat      int     `json:"repeat"`
	Points      []Point `json:"points"`
	Verdict     string  `json:"verdict"`
	Interrupted bool    `json:"interrupted"`
}

// MetricInfo says how the figure of merit was read from the output.
type MetricInfo struct {
	Regex string `json:"regex"`
	Of    string `json:"of"` // "last", "mean" or "sum" (Metric.Of)
	Unit  string `json:"unit"`
	// LowerIsBetter: the figure is a time or a cost; speedup is then
	// base / figure.
	LowerIsBetter bool `json:"lower_is_better"`
}

// Point is one size of the study and what it gave.
type Point struct {
	GPUs            int   `json:"gpus"`
	Instances       int   `json:"instances"`
	GPUsPerInstance int   `json:"gpus_per_instance"`
	Runs            []Run `json:"runs"` // a list, empty when none ran: never null
	// Status is "ok", "failed" (no run finished with status 0), "no
	// metric" (runs finished but none printed the figure), "interrupted"
	// (stopped before any run finished) or "not run" (the study stopped,
	// by Ctrl-C or --halt, before this size's turn).
	Status string `json:"status"`
	// The figure over the point's runs that gave one, and what it
	// means; nil where unknown.
	Median     *float64 `json:"metric_median"`
	Min        *float64 `json:"metric_min"`
	Max        *float64 `json:"metric_max"`
	Speedup    *float64 `json:"speedup"`
	Ideal      *float64 `json:"ideal_speedup"`
	Efficiency *float64 `json:"efficiency"`
	// GPUUtil and GPUMemPerGPU are the runs' means, from the sampler:
	// GPUUtil how busy each GPU was (Run's), whoever shared it and
	// however.
	GPUUtil      *float64 `json:"gpu_util_mean_pct"`
	GPUMemPerGPU *float64 `json:"gpu_mem_per_gpu_bytes"`
	// PerGPU and Mode are a packing study's: the instances on each GPU,
	// and how they share it (taking turns, or under MPS).
	PerGPU int  `json:"per_gpu,omitempty"`
	Mode   Mode `json:"mode,omitempty"`
	// Each are a packing point's instances: each one's figure (the
	// median of its runs'), GPU% (their mean) and GPU memory (their
	// peak).
	Each []InstanceFigure `json:"each_instance,omitempty"`
	// InstanceMemPeak is the most GPU memory one of a packing point's
	// instances held; GPUMemTotal is its GPU's memory, and Headroom what
	// PerGPU such instances leave of it. nil where unknown.
	InstanceMemPeak *float64 `json:"instance_gpu_mem_peak_bytes,omitempty"`
	GPUMemTotal     *float64 `json:"gpu_mem_total_bytes,omitempty"`
	Headroom        *float64 `json:"gpu_mem_headroom_bytes,omitempty"`
}

// InstanceFigure is one instance of a packing study's run or point: its
// own figure (nil: none), its GPU% (its processes', or its GPU's where
// those are not told apart: GPUUtilSource says which, as the report's
// gpu_util_source does) and the most GPU memory it held; nil where not
// measured.
type InstanceFigure struct {
	Instance      int      `json:"instance"`
	Metric        *float64 `json:"metric"`
	GPUUtil       *float64 `json:"gpu_util_mean_pct"`
	GPUUtilSource string   `json:"gpu_util_source,omitempty"`
	GPUMemPeak    *float64 `json:"gpu_mem_peak_bytes"`
}

// Run is one run of a point.
type Run struct {
	Metric      *float64 `json:"metric"` // nil: no figure
	WallSeconds float64  `json:"wall_seconds"`
	ExitCode    int      `json:"exit_code"`
	Interrupted bool     `json:"interrupted"`
	// GPUUtil is how busy each GPU was, the mean over the run's GPUs
	// (study.GPUBusy: per GPU the sum of its instances' own figures, or
	// its figure where they are the GPU's); GPUMemPerGPU the instances'
	// peak GPU memory over the point's GPUs; nil: not measured.
	GPUUtil      *float64 `json:"gpu_util_mean_pct"`
	GPUMemPerGPU *float64 `json:"gpu_mem_per_gpu_bytes"`
	// NoMetric says why a run that finished gave no figure.
	NoMetric string `json:"no_metric,omitempty"`
	// Each are a packing run's instances, one each.
	Each []InstanceFigure `json:"each_instance,omitempty"`
}

// Analyse fills in every point's figure, speedup and efficiency, and the
// study's verdict. The rules, in order:
//  1. A point's figure is the median of its runs that gave one (a run
//     gives one when it finished with status 0 and the figure was read);
//     its spread is their min and max. A point is "interrupted" when the
//     study was stopped during its last run (its figure, if an earlier
//     round gave one, is still theirs: measured, but of fewer runs than
//     --repeat); else "ok" with a figure; without one "failed" when no
//     run finished with status 0, "no metric" when some did but printed no
//     figure, and "not run" when the study stopped before its turn (it
//     has no run).
//  2. The baseline is the smallest point with a figure. Speedup is its
//     figure over the baseline's — the other way round for a figure where
//     lower is better (a time).
//  3. The ideal speedup is the size over the baseline's: strong scaling,
//     and weak scaling of a throughput (work per second grows with the
//     work). Weak scaling of the wall time (no --metric) is the exception:
//     every GPU has the same work, so the ideal time stays the baseline's
//     and the ideal speedup is 1. A point's size is its GPUs, or its
//     instances in a study by instances (-n): the same, unless instances
//     share GPUs (--share-gpus), where more instances on the same GPUs
//     are what is measured.
//  4. Efficiency is the speedup over the ideal.
//  5. The verdict names the efficient size: the largest point before the
//     efficiency first drops below Threshold, or before a point slower
//     than a smaller one (a size past which more is slower is not
//     efficient, whatever its efficiency). It says when a larger point
//     is slower than a smaller one: by more than slowerBy, and, where
//     both ran several times, with spreads that do not overlap — a
//     difference within the runs' noise is not a slowdown. Percentages
//     are rounded as the table rounds them (pct).
func (s *Study) Analyse() {
	if s.By == ByPerGPU.By {
		s.analysePacking()
		return
	}
	base := -1
	for i := range s.Points {
		s.Points[i].settle()
		if base < 0 && s.Points[i].Median != nil {
			base = i
		}
	}
	if base >= 0 {
		for i := base; i < len(s.Points); i++ {
			s.Points[i].compare(s.Points[base], s.Size, s.idealGrows(), s.lowerBetter())
		}
	}
	s.Verdict = s.verdict()
}

// Size is a point's size (rule 3): its GPUs, its instances in a study
// by instances, its instances per GPU in a packing study.
func (s *Study) Size(p Point) int {
	switch s.By {
	case ByInstances.By:
		return p.Instances
	case ByPerGPU.By:
		return p.PerGPU
	}
	return p.GPUs
}

// Shared: some point's instances take turns on fewer GPUs than they are.
func (s *Study) Shared() bool {
	for _, p := range s.Points {
		if p.Instances*max(p.GPUsPerInstance, 1) > p.GPUs {
			return true
		}
	}
	return false
}

// sizeWord is what the verdict counts sizes in: GPUs, or instances where
// they share GPUs.
func (s *Study) sizeWord() string {
	if s.By == "instances" && s.Shared() {
		return "instance(s)"
	}
	return "GPU(s)"
}

func (s *Study) lowerBetter() bool { return s.Metric != nil && s.Metric.LowerIsBetter }

// idealGrows: the ideal speedup grows with the GPUs (rule 3).
func (s *Study) idealGrows() bool { return !s.Weak || s.Metric != nil }

// settle computes a point's figure and its means from its runs (rule 1).
func (p *Point) settle() {
	if p.Runs == nil {
		p.Runs = []Run{} // the JSON's list: empty, not null
	}
	var figs, utils, mems []float64
	finished, interrupted := false, len(p.Runs) > 0 && p.Runs[len(p.Runs)-1].Interrupted
	for _, r := range p.Runs {
		finished = finished || (r.ExitCode == 0 && !r.Interrupted)
		if r.Metric != nil {
			figs = append(figs, *r.Metric)
		}
		if r.GPUUtil != nil {
			utils = append(utils, *r.GPUUtil)
		}
		if r.GPUMemPerGPU != nil {
			mems = append(mems, *r.GPUMemPerGPU)
		}
	}
	p.GPUUtil, p.GPUMemPerGPU = mean(utils), mean(mems)
	if len(figs) > 0 {
		sort.Float64s(figs)
		p.Median, p.Min, p.Max = ptr(median(figs)), ptr(figs[0]), ptr(figs[len(figs)-1])
	}
	switch {
	case len(p.Runs) == 0:
		p.Status = "not run"
	case interrupted:
		p.Status = "interrupted"
	case len(figs) > 0:
		p.Status = "ok"
	case finished:
		p.Status = "no metric"
	default:
		p.Status = "failed"
	}
}

// compare sets p's speedup, ideal and efficiency against base (rules 2-4).
func (p *Point) compare(base Point, size func(Point) int, idealGrows, lowerBetter bool) {
	if p.Median == nil || *base.Median == 0 || *p.Median == 0 {
		return
	}
	speedup := *p.Median / *base.Median
	if lowerBetter {
		speedup = *base.Median / *p.Median
	}
	ideal := 1.0
	if idealGrows {
		ideal = float64(size(*p)) / float64(size(base))
	}
	p.Speedup, p.Ideal, p.Efficiency = ptr(speedup), ptr(ideal), ptr(speedup/ideal)
}

// verdict is rule 5's sentence.
func (s *Study) verdict() string {
	var ok []Point
	for _, p := range s.Points {
		if p.Efficiency != nil {
			ok = append(ok, p)
		}
	}
	word := s.sizeWord()
	switch {
	case len(ok) == 0:
		return "no point gave a figure: nothing to compare (see each point's status)"
	case len(ok) == 1 && len(s.Points) == 1:
		return fmt.Sprintf("one size, %d %s: nothing to compare", s.Size(ok[0]), word)
	case len(ok) == 1:
		return fmt.Sprintf("only %d %s gave a figure: nothing to compare", s.Size(ok[0]), word)
	}
	var out string
	last := ok[len(ok)-1]
	efficient := ok[0]
	for i, p := range ok[1:] {
		if *p.Efficiency < s.Threshold {
			out = fmt.Sprintf("beyond %d %s efficiency drops below %s (%s at %d): %d %s is the efficient size",
				s.Size(efficient), word, Pct(s.Threshold), Pct(*p.Efficiency), s.Size(p), s.Size(efficient), word)
			break
		}
		if slower := s.slowerThanAny(p, ok[:i+1]); slower != nil {
			out = fmt.Sprintf("beyond %d %s more is slower: %d %s is the efficient size", s.Size(efficient), word, s.Size(efficient), word)
			break
		}
		efficient = p
	}
	if out == "" {
		out = fmt.Sprintf("scales to %d %s: efficiency %s at %d (at least %s at every size)", s.Size(last), word, Pct(*last.Efficiency), s.Size(last), Pct(s.Threshold))
	}
	if slow := s.slower(ok); slow != "" {
		out += "; " + slow
	}
	if s.Interrupted {
		out += "; the study was interrupted: the figures are those of the runs that finished"
	}
	return out
}

// slowerBy is the least shortfall in speedup that rule 5 calls slower:
// one run of the same size on a shared node varies by a few percent
// (a 0.4% difference was called "slower" before).
const slowerBy = 0.05

// slower names the first point slower than a smaller one (rule 5), with
// both speedups and the difference.
func (s *Study) slower(ok []Point) string {
	for i := 1; i < len(ok); i++ {
		if j := s.slowerThanAny(ok[i], ok[:i]); j != nil {
			return fmt.Sprintf("%d %s are slower than %d (speedup %.2f against %.2f), %s less",
				s.Size(ok[i]), s.sizeWord(), s.Size(*j), *ok[i].Speedup, *j.Speedup, Pct(1 - *ok[i].Speedup / *j.Speedup))
		}
	}
	return ""
}

// slowerThanAny is the first of smaller that p is slower than; nil if none.
func (s *Study) slowerThanAny(p Point, smaller []Point) *Point {
	for j := range smaller {
		if s.isSlower(p, smaller[j]) {
			return &smaller[j]
		}
	}
	return nil
}

// isSlower: big's speedup is below small's by more than slowerBy, and
// their spreads (where both ran several times) do not overlap. Where the
// ideal is flat (weak scaling of the wall time: more GPUs, more work, the
// same time at best) a lower speedup is the efficiency's to judge.
func (s *Study) isSlower(big, small Point) bool {
	if !s.idealGrows() || *big.Speedup >= *small.Speedup*(1-slowerBy) {
		return false
	}
	if big.Min == nil || small.Min == nil || *big.Min == *big.Max || *small.Min == *small.Max {
		return true
	}
	if s.lowerBetter() { // a time: big's best must be worse than small's worst
		return *big.Min > *small.Max
	}
	return *big.Max < *small.Min
}

func ptr(x float64) *float64 { return &x }

func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return ptr(sum / float64(len(xs)))
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Pct is a share as the study's table and verdict write it: whole
// percents, but one decimal under 10% ("5.1%", not the "5%" that hides
// why 5.1% passed a 5% bound).
func Pct(x float64) string {
	if p := math.Round(1000*x) / 10; math.Abs(p) < 10 && math.Round(p) != p {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", math.Round(100*x))
}

// Sizes parses a list of GPU or instance counts ("1,2,4,8"): whole
// numbers from 1 to most, each once; they come back in increasing order.
// A count above most is refused here, before any size is planned (each
// allocates by its count).
func Sizes(flag, list string, most int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		word := strings.TrimSpace(f)
		n, err := strconv.Atoi(word)
		if errors.Is(err, strconv.ErrRange) || err == nil && n > most {
			return nil, fmt.Errorf("%s %q: %s is too large: a size is 1..%d", flag, list, word, most)
		}
		if err != nil || n < 1 || strconv.Itoa(n) != word {
			return nil, fmt.Errorf("%s %q: %q is not a count from 1: give a list like 1,2,4,8", flag, list, f)
		}
		if seen[n] {
			return nil, fmt.Errorf("%s %q: %d twice", flag, list, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}
