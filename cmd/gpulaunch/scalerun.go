package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/chart"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

// scale is `gpulaunch scale`: every size is decided first (a size the
// allocation cannot hold stops the study before anything runs), then run
// --repeat rounds of every size, then the study is analysed, printed and
// written.
func (a *app) scale(args []string) error {
	o, err := a.parseScale(args)
	if o == nil {
		return err
	}
	log, err := o.common.loggerAt(a.stderr, zap.ErrorLevel)
	if err != nil {
		return err
	}
	path, err := lookPath(o.argv[0], a.env["PATH"])
	if err != nil {
		return err
	}
	alloc, src, usageDir, done, err := a.discoverToRun(o.common, true, false)
	if err != nil {
		return err
	}
	defer done()
	var points []scalePoint
	flag := o.sizeFlag()
	for _, size := range o.sizes {
		if err := o.sizeFits(size, alloc.GPUs, alloc.GPUReason); err != nil {
			return err
		}
		ro, err := a.parseRun(o.pointArgs(size))
		if err != nil {
			return err
		}
		l, err := a.newLaunch(ro, found{alloc, src, usageDir}, path, log)
		if err != nil {
			if said := fmt.Sprintf("%s %d", flag, size); !strings.HasPrefix(err.Error(), said+" ") && !strings.HasPrefix(err.Error(), said+":") {
				return usagef("%s: %v: nothing was started", said, err)
			}
			return usagef("%v: nothing was started", err)
		}
		if l.group.MultiNode() {
			return usagef("gpulaunch scale studies the GPUs of one node: run it on one (srun -N 1 gpulaunch scale …)")
		}
		points = append(points, scalePoint{size: size, opts: ro, l: l})
	}
	if err := a.checkStudyFiles(o, points, path); err != nil {
		return err
	}
	o.gpuNote = gpuNote(points, src)
	study := a.runStudy(o, points, log)
	return a.reportStudy(o, study)
}

// sizeFits refuses a size the allocation's GPUs cannot hold, before any
// size runs: more GPUs than there are for one process (-G), or more
// instances than GPUs unless they share them (-n with --share-gpus: they
// take turns, as `gpulaunch -n N --share-gpus` does).
func (o *scaleOptions) sizeFits(size int, gpus []gpu.GPU, reason string) error {
	switch {
	case size <= len(gpus), o.byInstances && o.shape.shareGPUs && len(gpus) > 0:
		return nil
	case !o.byInstances && o.shape.shareGPUs:
		return usagef("-G %d: one process on %d GPUs, and the allocation has %d (%s): --share-gpus lets instances take turns on GPUs, it cannot give one process more than there are; give sizes up to %d (or -n 1,2,4 --share-gpus to study instances sharing them); nothing was started",
			size, size, len(gpus), reason, len(gpus))
	}
	fix := "give sizes up to %d, --share-gpus for instances that take turns on them, or ask Slurm for more GPUs"
	if !o.byInstances || len(gpus) == 0 {
		fix = "give sizes up to %d, or ask Slurm for more GPUs"
	}
	return usagef("%s %d: the allocation has %d GPU(s) (%s): "+fix+"; nothing was started", o.sizeFlag(), size, len(gpus), reason, len(gpus))
}

// gpusUsed is how many distinct GPUs a plan's slots use: the size's GPUs,
// fewer than its instances when they share them.
func gpusUsed(p binding.Plan) int {
	seen := map[string]bool{}
	for _, s := range p.Slots {
		for _, g := range s.GPUs {
			seen[g.UUID+"|"+g.BusID] = true
		}
	}
	return len(seen)
}

// gpuNote says why a study's runs measure no GPU use: telemetry off, or
// a backend that cannot sample it (a node file, Intel's drivers, NVIDIA
// without NVML); "" when they do.
func gpuNote(points []scalePoint, src gpu.Source) string {
	if len(points) == 0 {
		return ""
	}
	l := points[0].l
	if l.monitor == 0 {
		return "telemetry off (--monitor-interval 0)"
	}
	if src == nil {
		return "no GPU backend"
	}
	if _, err := src.Usage(uuids(l.alloc.GPUs)); errors.Is(err, gpu.ErrNoTelemetry) {
		return strings.TrimPrefix(err.Error(), "no GPU telemetry: ")
	}
	return ""
}

// runStudy runs every size --repeat times, round after round, so that
// a slow drift of the machine spreads over every size instead of falling
// on the last. It stops at Ctrl-C, and at a failure with --halt.
func (a *app) runStudy(o *scaleOptions, points []scalePoint, log *zap.Logger) scaling.Study {
	st := newStudy(a, o)
	for _, p := range points {
		st.Points = append(st.Points, scaling.Point{GPUs: gpusUsed(p.l.plan), Instances: p.l.req.Instances, GPUsPerInstance: p.l.req.GPUsPerInstance})
	}
	// Ctrl-C between two runs must not kill gpulaunch: the study keeps
	// what it has. During a run the run's supervisor passes it on.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(stop)
	for round := range o.repeat {
		for i, p := range points {
			select {
			case <-stop:
				st.Interrupted = true
			default:
			}
			if st.Interrupted {
				return st
			}
			run := a.runPoint(o, p, log)
			st.Points[i].Runs = append(st.Points[i].Runs, run)
			a.sayRun(o, p, round, run)
			st.Interrupted = run.Interrupted
			if o.halt && run.Metric == nil && !run.Interrupted {
				fmt.Fprintf(a.stderr, "gpulaunch scale: --halt: stopping the study at the failed size\n")
				return st
			}
		}
	}
	return st
}

func newStudy(a *app, o *scaleOptions) scaling.Study {
	st := scaling.Study{SchemaVersion: 1, Command: o.argv, Host: a.hostname, Started: time.Now().UTC().Format(time.RFC3339),
		By: map[bool]string{false: "gpus", true: "instances"}[o.byInstances], DDP: o.run.ddp.ddp, Weak: o.weak, Threshold: o.eff, Repeat: o.repeat}
	if o.m != nil {
		st.Metric = &scaling.MetricInfo{Regex: o.metric, Of: o.m.Of, Unit: o.unit, LowerIsBetter: o.lower}
	}
	return st
}

// runPoint runs one size once and reads what it gave.
func (a *app) runPoint(o *scaleOptions, p scalePoint, log *zap.Logger) scaling.Run {
	env := append(a.baseEnv(), "GPULAUNCH_SCALE_GPUS="+strconv.Itoa(p.size),
		"GPULAUNCH_SCALE_WEAK="+map[bool]string{false: "0", true: "1"}[o.weak])
	var run scaling.Run
	insts, err := p.l.instances(env, p.opts)
	if err != nil {
		run.ExitCode, run.NoMetric = 2, err.Error()
		return run
	}
	sink := &lineSink{tail: 20}
	if o.m != nil {
		sink.reading = o.m.NewReading()
	}
	began := time.Now()
	res, err := launcher.Run(launcher.Spec{Instances: insts, Policy: p.opts.policy, Label: true, Log: log, GPUs: p.l.src,
		WatchGPUs: uuids(p.l.alloc.GPUs), Stdout: sink, Stderr: sink, OpenMode: p.opts.openMode()})
	run.WallSeconds = time.Since(began).Seconds()
	if err != nil {
		run.ExitCode, run.NoMetric = 2, err.Error()
		return run
	}
	run.ExitCode, run.Interrupted = res.ExitCode(), res.Signal != 0
	run.GPUUtil, run.GPUMemPerGPU = gpuUse(res.Outcomes, insts)
	switch {
	case run.ExitCode != 0 || run.Interrupted:
		run.NoMetric = "exit status " + strconv.Itoa(run.ExitCode) + "; its last lines:\n" + sink.lastLines()
	case sink.reading != nil:
		fig, why := sink.reading.Figure()
		if why != "" {
			run.NoMetric = why
		} else {
			run.Metric = &fig
		}
	default:
		fig := 1 / run.WallSeconds
		run.Metric = &fig
	}
	return run
}

// gpuUse is a run's mean GPU utilisation over its instances and its peak
// GPU memory over its GPUs; nil where nothing was measured.
func gpuUse(outs []launcher.Outcome, insts []launcher.Instance) (util, memPerGPU *float64) {
	var sum, mem float64
	var n, gpus int
	for i, out := range outs {
		gpus += len(insts[i].GPUUUIDs)
		if out.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			sum, n = sum+out.GPUUtilMean, n+1
			mem += float64(out.GPUMemPeak)
		}
	}
	if n == 0 {
		return nil, nil
	}
	u, m := sum/float64(n), mem/float64(max(gpus, 1))
	return &u, &m
}

// sayRun prints one run's line as the study goes.
func (a *app) sayRun(o *scaleOptions, p scalePoint, round int, run scaling.Run) {
	what := fmt.Sprintf("%s %d, run %d of %d", o.sizeFlag(), p.size, round+1, o.repeat)
	switch {
	case run.Interrupted:
		fmt.Fprintf(a.stderr, "gpulaunch scale: %s: interrupted; the study stops and keeps the sizes done\n", what)
	case run.Metric != nil && o.run.quiet: // -q: the table on stdout is the result
	case run.Metric != nil:
		fmt.Fprintf(a.stderr, "gpulaunch scale: %s: %s in %.1f s\n", what, metricString(*run.Metric, o), run.WallSeconds)
	default:
		fmt.Fprintf(a.stderr, "gpulaunch scale: %s: no figure: %s\n", what, run.NoMetric)
	}
}

// metricString is a figure with its unit.
func metricString(x float64, o *scaleOptions) string {
	if o.m == nil {
		return fmt.Sprintf("%.4g runs/s", x)
	}
	return strings.TrimSpace(fmt.Sprintf("%.4g %s", x, o.unit))
}

// lineSink takes a run's labelled output ("3: text"), hands each line to
// the metric's reading, and keeps the last lines for a failure's report.
type lineSink struct {
	mu      sync.Mutex
	partial []byte
	reading *scaling.Reading
	tail    int
	last    []string
}

func (s *lineSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		s.line(string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
}

func (s *lineSink) line(l string) {
	if s.last = append(s.last, l); len(s.last) > s.tail {
		s.last = s.last[1:]
	}
	label, text, ok := strings.Cut(l, ": ")
	inst, err := strconv.Atoi(label)
	if ok && err == nil && s.reading != nil {
		s.reading.Line(inst, text)
	}
}

func (s *lineSink) lastLines() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "  " + strings.Join(s.last, "\n  ")
}

// reportStudy analyses the study, prints its table and verdict, writes
// --json and --svg, and says with the exit status whether it is whole.
func (a *app) reportStudy(o *scaleOptions, st scaling.Study) error {
	st.Analyse()
	writeStudyTable(a, o, st)
	if o.json != "" {
		data, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		if err := writeWhole(o.json, append(data, '\n')); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if o.svg != "" {
		var b strings.Builder
		if err := chart.StudySVG(studyPicture(o, st), &b); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
		if err := writeWhole(o.svg, []byte(b.String())); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	switch {
	case st.Interrupted:
		return exitCode(130)
	case !studyWhole(st):
		return exitCode(1)
	}
	return nil
}

// studyWhole: every size ran every round and gave a figure.
func studyWhole(st scaling.Study) bool {
	for _, p := range st.Points {
		if p.Status != "ok" || len(p.Runs) < st.Repeat {
			return false
		}
	}
	return true
}

// writeStudyTable prints a row per size, then the verdict.
func writeStudyTable(a *app, o *scaleOptions, st scaling.Study) {
	unit := "runs/s, 1/wall"
	if o.m != nil {
		unit = o.unit
	}
	metric := "METRIC"
	if u := strings.TrimSpace(unit); u != "" {
		metric += " (" + u + ")" // no --unit: no empty "()"
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GPUS\tINSTANCES\t%s\tMIN..MAX\tSPEEDUP\tIDEAL\tEFFICIENCY\tGPU%%\tGPU MEM/GPU\tSTATUS\n", metric)
	for _, p := range st.Points {
		fmt.Fprintf(tw, "%d\t%d×%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.GPUs, p.Instances, p.GPUsPerInstance, num(p.Median, "%.4g"),
			spread(p), num(p.Speedup, "%.2f"), num(p.Ideal, "%.2g"), percent(p.Efficiency), num(p.GPUUtil, "%.0f"), bytesOrDash(p.GPUMemPerGPU), p.Status)
	}
	tw.Flush()
	fmt.Fprintf(a.stdout, "verdict: %s\n", st.Verdict)
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
	return scaling.Pct(*x) // rounded as the verdict rounds it
}

func spread(p scaling.Point) string {
	if p.Min == nil || *p.Min == *p.Max {
		return "-"
	}
	return fmt.Sprintf("%.4g..%.4g", *p.Min, *p.Max)
}

func bytesOrDash(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f GiB", *x/(1<<30))
}

// studyPicture turns the study into what chart draws.
func studyPicture(o *scaleOptions, st scaling.Study) chart.Study {
	by := "GPUs (one process)"
	switch {
	case o.byInstances && st.Shared():
		by = "instances (taking turns on the GPUs)"
	case o.byInstances:
		by = "GPUs (one instance each)"
	}
	pic := chart.Study{Title: "gpulaunch scale: " + strings.Join(st.Command, " "), By: by, Threshold: st.Threshold, Verdict: st.Verdict,
		Figure: "1/wall time", GPUNote: o.gpuNote}
	if m := st.Metric; m != nil {
		pic.Figure = "the figure"
		if m.Unit != "" {
			pic.Figure += " (" + m.Unit + ")"
		}
	}
	for _, p := range st.Points {
		sp := chart.StudyPoint{GPUs: st.Size(p), Speedup: p.Speedup, Ideal: p.Ideal, Efficiency: p.Efficiency, Util: p.GPUUtil, Status: p.Status}
		if p.Speedup != nil && p.Min != nil {
			lo, hi := *p.Speedup**p.Min / *p.Median, *p.Speedup**p.Max / *p.Median
			if o.lower {
				lo, hi = *p.Speedup**p.Median / *p.Max, *p.Speedup**p.Median / *p.Min
			}
			sp.SpeedupLow, sp.SpeedupHigh = &lo, &hi
		}
		pic.Points = append(pic.Points, sp)
	}
	return pic
}
