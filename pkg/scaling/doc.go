// Package scaling holds the rules of a scaling study (`gpulaunch scale`):
// what a study may be asked (Choices.Check, C1–C11), what its sizes count
// and what a size is as a run (Axis: RunArgs, Fits F1–F8; a packing
// study's instances per GPU and its Modes, taking turns or under MPS), how
// a run's output gives its figure of merit (Metric), how the figures at
// several sizes give speedup, efficiency and a verdict (Analyse; a packing
// study's speedup over one per GPU, headroom and best packing, K1–K4 in
// packing.go), and how the
// study is shown: its table (WriteTable) and its picture (Picture). It
// runs nothing: pkg/study runs the points and hands their figures here,
// so the rules are tested with figures alone.
package scaling
