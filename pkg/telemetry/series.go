//go:build linux

package telemetry

import "time"

// Series is one instance's samples over the run, for the report's
// pictures (`gpulaunch report FILE --svg`). It stays small however long
// the run: at most seriesMax points, each the mean of the samples it
// stands for (seriesBuf). Columns, one value per point; a GPU figure is -1
// where it was not measured (no GPU, no telemetry). GPUUtil is the
// instance's own use of its GPUs (GPUWatch.LastUtil), from the source its
// GPUWatch says.
type Series struct {
	T       []float64 `json:"t_seconds"` // since the run began, the mean of the point's samples
	GPUUtil []float64 `json:"gpu_util_pct"`
	GPUMem  []float64 `json:"gpu_mem_bytes"`
	CPU     []float64 `json:"cpu_pct"`
	RSS     []float64 `json:"rss_bytes"`
}

// Event is something that happened to an instance, for the pictures: a
// start, an exit, a warning.
type Event struct {
	T      float64 `json:"t_seconds"`
	Kind   string  `json:"kind"` // "start", "exit", "warning"
	Detail string  `json:"detail"`
}

// seriesMax bounds a series: a week of samples every 2 s is 302,400,
// which would make a report of tens of megabytes; 1,000 points are more
// than a picture of it can show.
const seriesMax = 1000

// eventsMax bounds an instance's events: a task queue's slot would log a
// start and an exit per task, so a queue's slots keep warnings only, and
// every instance at most this many.
const eventsMax = 200

// seriesBuf decimates as it goes: samples are averaged in buckets of
// every samples; when the series is full, neighbouring points are merged
// and every doubles. Memory and the report stay bounded, and a point
// always stands for as many samples as its neighbours.
type seriesBuf struct {
	s      Series
	every  int    // samples per point
	bucket sample // the samples of the point being made
	n      int    // how many are in it
}

// sample is one sample's figures, or a sum of them.
type sample struct {
	t, cpu, rss float64
	util, mem   float64 // sums over the samples that measured a GPU
	gpuN        int     // how many did
}

func (b *seriesBuf) add(t, util, mem, cpu, rss float64) {
	if b.every == 0 {
		b.every = 1
	}
	x := &b.bucket
	x.t, x.cpu, x.rss = x.t+t, x.cpu+cpu, x.rss+rss
	if util >= 0 {
		x.util, x.mem, x.gpuN = x.util+util, x.mem+mem, x.gpuN+1
	}
	if b.n++; b.n < b.every {
		return
	}
	b.push(b.bucket, b.n)
	b.bucket, b.n = sample{}, 0
	if len(b.s.T) >= seriesMax {
		b.halve()
	}
}

// push appends the mean of n samples summed in x.
func (b *seriesBuf) push(x sample, n int) {
	k := float64(n)
	util, mem := -1.0, -1.0
	if x.gpuN > 0 {
		util, mem = x.util/float64(x.gpuN), x.mem/float64(x.gpuN)
	}
	s := &b.s
	s.T, s.CPU, s.RSS = append(s.T, x.t/k), append(s.CPU, x.cpu/k), append(s.RSS, x.rss/k)
	s.GPUUtil, s.GPUMem = append(s.GPUUtil, util), append(s.GPUMem, mem)
}

// halve merges neighbouring points, so the series has half as many, each
// standing for twice the samples.
func (b *seriesBuf) halve() {
	s := b.s
	var out Series
	for i := 0; i+1 < len(s.T); i += 2 {
		out.T = append(out.T, (s.T[i]+s.T[i+1])/2)
		out.CPU = append(out.CPU, (s.CPU[i]+s.CPU[i+1])/2)
		out.RSS = append(out.RSS, (s.RSS[i]+s.RSS[i+1])/2)
		out.GPUUtil = append(out.GPUUtil, meanMeasured(s.GPUUtil[i], s.GPUUtil[i+1]))
		out.GPUMem = append(out.GPUMem, meanMeasured(s.GPUMem[i], s.GPUMem[i+1]))
	}
	b.s, b.every = out, 2*b.every
}

// meanMeasured is the mean of the measured ones of a and b (-1: not measured).
func meanMeasured(a, b float64) float64 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return (a + b) / 2
}

// series is the decimated series so far, with the point being made. Its
// columns are copies, and empty lists, never nil, when nothing was
// sampled (a run shorter than the monitor interval, telemetry off): the
// report's schema, and its readers, want a list.
func (b *seriesBuf) series() *Series {
	out := Series{T: columnCopy(b.s.T), GPUUtil: columnCopy(b.s.GPUUtil), GPUMem: columnCopy(b.s.GPUMem),
		CPU: columnCopy(b.s.CPU), RSS: columnCopy(b.s.RSS)}
	if b.n > 0 {
		tmp := seriesBuf{s: out}
		tmp.push(b.bucket, b.n)
		out = tmp.s
	}
	return &out
}

// columnCopy is a copy of a column, an empty one for none.
func columnCopy(c []float64) []float64 { return append([]float64{}, c...) }

// Timeline is an instance's series and events, kept by its slot.
type Timeline struct {
	Begun   time.Time // the run's start: the series' time zero
	buf     seriesBuf
	Events  []Event
	Dropped int // events past eventsMax
}

// Sample adds one sample's figures at t seconds since Begun: the GPUs'
// utilisation and memory (-1: not measured), the CPU rate and the
// resident memory.
func (tl *Timeline) Sample(t, util, mem, cpu, rss float64) { tl.buf.add(t, util, mem, cpu, rss) }

// Series is the decimated series so far (seriesBuf.series).
func (tl *Timeline) Series() *Series { return tl.buf.series() }

// Event records something that happened at now: a start, an exit, a
// warning; past eventsMax it is only counted (Dropped).
func (tl *Timeline) Event(now time.Time, kind, detail string) {
	if len(tl.Events) >= eventsMax {
		tl.Dropped++
		return
	}
	tl.Events = append(tl.Events, Event{T: now.Sub(tl.Begun).Seconds(), Kind: kind, Detail: detail})
}
