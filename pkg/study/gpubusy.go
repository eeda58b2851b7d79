package study

// InstanceUse is one instance of a run as GPUBusy reads it: its GPUs
// (their UUIDs), its mean GPU% over the run (negative: not sampled) and
// where that comes from (launcher.Outcome.GPUUtilSource: "processes",
// its own processes' SM%; "gpu", its GPU's figure, whoever used it).
type InstanceUse struct {
	GPUs   []string
	Util   float64
	Source string
}

// GPUBusy is how busy a run's GPUs were, in percent: a study's GPU% (a
// point's gpu_util_mean_pct, the table's "GPU% (each GPU)", the
// picture's GPU line). It is one quantity whoever shares the GPUs and
// however — an instance's own figure is not: two instances taking turns
// at 30% each show 30 each, and the same two under MPS show their GPU's
// 60 each (NVML gives the clients' use to the MPS server), so a mean of
// the instances' own figures made MPS look twice as busy as taking turns
// on the same load. The rules, in order:
//
//  1. An instance counts on each of its GPUs with its figure (one of
//     several GPUs: its mean over them, as its figure is); an instance
//     not sampled counts on none.
//  2. A GPU whose counted instances' figures are all their own
//     processes' ("processes") was as busy as their sum, at most 100:
//     a study's instances run together, each its share of the GPU's time.
//  3. Otherwise the GPU's figure is the mean of its instances' figures
//     that are not their own processes' (the GPU's, whoever used it,
//     read over each one's lifetime): those already count every process
//     on it, the own figures mixed in among them too.
//  4. The run's figure is the mean over its GPUs that were measured;
//     ok is false when none was.
func GPUBusy(insts []InstanceUse) (pct float64, ok bool) {
	var order []string
	on := map[string]*gpuFigures{}
	for _, in := range insts {
		if in.Util < 0 {
			continue
		}
		for _, g := range in.GPUs {
			f := on[g]
			if f == nil {
				f = &gpuFigures{}
				on[g] = f
				order = append(order, g)
			}
			if in.Source == "processes" {
				f.own = append(f.own, in.Util)
			} else {
				f.gpus = append(f.gpus, in.Util)
			}
		}
	}
	if len(order) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, g := range order {
		sum += on[g].busy()
	}
	return sum / float64(len(order)), true
}

// gpuFigures are the figures of one GPU's instances: their own
// processes' (own) and the GPU's (gpus).
type gpuFigures struct{ own, gpus []float64 }

// busy is the GPU's figure: rule 2, or rule 3 where any figure is the
// GPU's.
func (f gpuFigures) busy() float64 {
	xs := f.own
	if len(f.gpus) > 0 {
		xs = f.gpus
	}
	total := 0.0
	for _, x := range xs {
		total += x
	}
	if len(f.gpus) > 0 {
		return total / float64(len(xs))
	}
	return min(100, total)
}
