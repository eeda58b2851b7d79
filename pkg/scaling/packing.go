package scaling

import (
	"fmt"
	"slices"
	"sort"

	"github.com/gpulaunch/gpulaunch/pkg/table"
)

// analysePacking is Analyse for a packing study (By "per_gpu": K
// instances on every GPU, taking turns and, with --mps, under MPS). The
// rules, in order:
//
//	K1. A point's figure, spread and status are Analyse's rule 1. Its
//	    instances' own (Each) are each instance's median figure over the
//	    runs, its mean GPU% and its peak GPU memory; the headroom is its
//	    GPU's memory less PerGPU times the largest instance's peak (what
//	    is left for more, or bigger, instances; below 0 it did not fit).
//	K2. The baseline is the smallest size taking turns with a figure:
//	    one per GPU, where 1 is a size. Speedup is each point's figure
//	    over it (the other way round where lower is better). A packing
//	    has no ideal speedup — whether k instances gain on one GPU is
//	    what is measured —, so ideal and efficiency stay null.
//	K3. The best packing is the point of the largest speedup; a point of
//	    fewer instances per GPU (at the same count: taking turns before
//	    MPS) within slowerBy of it is preferred: a gain within the runs'
//	    noise is not worth more instances on a GPU.
//	K4. The verdict names the best packing and mode with its speedup
//	    ("4 per GPU under MPS: 4.3× one per GPU"), the GPU memory it
//	    leaves where measured, and that it was the largest size tried
//	    (more may pay); or that the baseline is best.
func (s *Study) analysePacking() {
	base := -1
	for i := range s.Points {
		p := &s.Points[i]
		p.settle()
		p.settleEach()
		if p.Median != nil && p.Mode == Turns && (base < 0 || p.PerGPU < s.Points[base].PerGPU) {
			base = i
		}
	}
	if base >= 0 {
		for i := range s.Points {
			s.Points[i].packingSpeedup(s.Points[base], s.lowerBetter())
		}
	}
	s.Verdict = s.packingVerdict(base)
}

// settleEach is rule K1's instances, memory and headroom.
func (p *Point) settleEach() {
	n := 0
	for _, r := range p.Runs {
		n = max(n, len(r.Each))
	}
	if n == 0 {
		return
	}
	p.Each = make([]InstanceFigure, n)
	for i := range p.Each {
		var figs, utils []float64
		var mem *float64
		source := ""
		for _, r := range p.Runs {
			if i >= len(r.Each) {
				continue
			}
			e := r.Each[i]
			if e.Metric != nil {
				figs = append(figs, *e.Metric)
			}
			if e.GPUUtil != nil {
				utils = append(utils, *e.GPUUtil)
			}
			// one run's figure that is its GPU's makes the mean partly
			// the GPU's: say so (telemetry.JoinSources' rule)
			if source == "" || e.GPUUtilSource == "gpu" {
				source = e.GPUUtilSource
			}
			if e.GPUMemPeak != nil && (mem == nil || *e.GPUMemPeak > *mem) {
				mem = e.GPUMemPeak
			}
		}
		p.Each[i] = InstanceFigure{Instance: i, GPUUtil: mean(utils), GPUUtilSource: source, GPUMemPeak: mem}
		if len(figs) > 0 {
			sort.Float64s(figs)
			p.Each[i].Metric = ptr(median(figs))
		}
		if mem != nil && (p.InstanceMemPeak == nil || *mem > *p.InstanceMemPeak) {
			p.InstanceMemPeak = ptr(*mem)
		}
	}
	if p.InstanceMemPeak != nil && p.GPUMemTotal != nil {
		p.Headroom = ptr(*p.GPUMemTotal - float64(p.PerGPU)**p.InstanceMemPeak)
	}
}

// packingSpeedup is rule K2's speedup of p over base; no ideal.
func (p *Point) packingSpeedup(base Point, lowerBetter bool) {
	if p.Median == nil || *base.Median == 0 || *p.Median == 0 {
		return
	}
	speedup := *p.Median / *base.Median
	if lowerBetter {
		speedup = *base.Median / *p.Median
	}
	p.Speedup = ptr(speedup)
}

// bestPacking is rule K3: the index of the best point; -1 when none has
// a speedup.
func (s *Study) bestPacking() int {
	order := make([]int, 0, len(s.Points))
	top := 0.0
	for i, p := range s.Points {
		if p.Speedup != nil {
			order = append(order, i)
			top = max(top, *p.Speedup)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := s.Points[a], s.Points[b]
		if pa.PerGPU != pb.PerGPU {
			return pa.PerGPU - pb.PerGPU
		}
		return modeRank(pa.Mode) - modeRank(pb.Mode)
	})
	for _, i := range order {
		if *s.Points[i].Speedup >= top*(1-slowerBy) {
			return i
		}
	}
	return -1
}

func modeRank(m Mode) int {
	if m == MPS {
		return 1
	}
	return 0
}

// PackingName is how the verdict names a point: "one per GPU", "4 per
// GPU under MPS", "2 per GPU taking turns".
func PackingName(p Point) string {
	if p.PerGPU == 1 {
		return "one per GPU"
	}
	return fmt.Sprintf("%d per GPU %s", p.PerGPU, p.Mode.Words(p.PerGPU))
}

// packingVerdict is rule K4's sentence; base is K2's baseline (-1: none).
func (s *Study) packingVerdict(base int) string {
	out := ""
	best := s.bestPacking()
	figures := 0
	for _, p := range s.Points {
		if p.Median != nil {
			figures++
		}
	}
	switch {
	case figures == 0:
		out = "no point gave a figure: nothing to compare (see each point's status)"
	case base < 0:
		out = "no size taking turns gave a figure: nothing to compare with (see each point's status)"
	case figures == 1:
		out = fmt.Sprintf("only %s gave a figure: nothing to compare", PackingName(s.Points[base]))
	case best == base:
		out = fmt.Sprintf("%s is best: no packing gained more than %s over it", PackingName(s.Points[base]), Pct(slowerBy))
		if top := s.topOther(base); top >= 0 {
			out += fmt.Sprintf(" (the most: %s, %.2f×)", PackingName(s.Points[top]), *s.Points[top].Speedup)
		}
	default:
		b := s.Points[best]
		out = fmt.Sprintf("%s: %.1f× %s", PackingName(b), *b.Speedup, PackingName(s.Points[base]))
		if b.Headroom != nil && *b.Headroom >= 0 {
			out += fmt.Sprintf(", leaving %s of each GPU's memory", table.Bytes(uint64(*b.Headroom)))
		}
		if b.PerGPU == s.largestPerGPU() {
			out += "; it is the largest size tried: more per GPU may gain more"
		}
	}
	if s.Interrupted {
		out += "; the study was interrupted: the figures are those of the runs that finished"
	}
	return out
}

// topOther is the point of the largest speedup other than base; -1 if
// none.
func (s *Study) topOther(base int) int {
	top := -1
	for i, p := range s.Points {
		if i != base && p.Speedup != nil && (top < 0 || *p.Speedup > *s.Points[top].Speedup) {
			top = i
		}
	}
	return top
}

func (s *Study) largestPerGPU() int {
	k := 0
	for _, p := range s.Points {
		k = max(k, p.PerGPU)
	}
	return k
}
