//go:build linux

package study

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

// Point is one size of a study, decided before any run: what each of
// its runs starts.
type Point struct {
	Size int
	// Spec is the size's run as `gpulaunch run` would start it, its
	// instances told Env's variables; each run writes its output to the
	// study (Stdout and Stderr are set there).
	Spec launcher.Spec
	// GPUs is how many GPUs its plan uses (GPUsUsed); Instances and
	// GPUsPerInstance are what it asked.
	GPUs, Instances, GPUsPerInstance int
	// PerGPU and Mode are a packing study's size: PerGPU instances on
	// each GPU, taking turns or under MPS. GPUMemTotal is the memory of
	// its GPUs (the smallest's), for the headroom; 0: unknown.
	PerGPU      int
	Mode        scaling.Mode
	GPUMemTotal uint64
	// MPS is the size's MPS, decided before any run (mps.Prepare): each
	// of its runs starts the daemons before its instances and stops
	// them after; nil without.
	MPS *mps.Run
}

// ScaleGPUs is the size an instance is told (Env's GPULAUNCH_SCALE_GPUS):
// the size's GPUs (-G), instances (-n), or, in a packing study, the GPUs
// its instances are packed on.
func (p Point) ScaleGPUs() int {
	if p.PerGPU > 0 {
		return p.GPUs
	}
	return p.Size
}

// Config is a study: what was asked, and where its lines go.
type Config struct {
	Axis    scaling.Axis
	Command []string
	Host    string
	Repeat  int
	// Metric reads the figure from the output (Regex, Unit and
	// LowerIsBetter say how, for the JSON); nil: the figure is the
	// inverse of the wall time.
	Metric        *scaling.Metric
	Regex, Unit   string
	LowerIsBetter bool
	Weak, DDP     bool
	// Threshold is the efficiency below which a size is not worth it.
	Threshold float64
	// Halt stops the study at the first size that fails; Quiet leaves out
	// the line of each run that gave a figure.
	Halt, Quiet bool
	// Say is where each run's line goes as the study goes (stderr).
	Say io.Writer
	// launch runs one run: launcher.Run; a test's stand-in.
	launch func(launcher.Spec) (launcher.Result, error)
}

// Run runs every point --repeat times, round after round, so that a slow
// drift of the machine spreads over every size instead of falling on the
// last. It stops at Ctrl-C (INT, TERM or HUP between two runs; during a
// run its supervisor passes it on, and the run says it was stopped), and
// at a failure with Halt. The study it returns is not analysed yet.
func Run(c Config, points []Point) scaling.Study {
	if c.launch == nil {
		c.launch = launcher.Run
	}
	st := c.newStudy()
	for _, p := range points {
		sp := scaling.Point{GPUs: p.GPUs, Instances: p.Instances, GPUsPerInstance: p.GPUsPerInstance, PerGPU: p.PerGPU, Mode: p.Mode}
		if p.GPUMemTotal > 0 {
			sp.GPUMemTotal = ptr(float64(p.GPUMemTotal))
		}
		st.Points = append(st.Points, sp)
	}
	// Ctrl-C between two runs must not kill gpulaunch: the study keeps
	// what it has. During a run the run's supervisor passes it on.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(stop)
	for round := range c.Repeat {
		for i, p := range points {
			select {
			case <-stop:
				st.Interrupted = true
			default:
			}
			if st.Interrupted {
				return st
			}
			run := c.runPoint(p)
			st.Points[i].Runs = append(st.Points[i].Runs, run)
			c.say(&st, p, round, run)
			st.Interrupted = run.Interrupted
			if c.Halt && run.Metric == nil && !run.Interrupted {
				fmt.Fprintf(c.Say, "gpulaunch scale: --halt: stopping the study at the failed size\n")
				return st
			}
		}
	}
	return st
}

func (c Config) newStudy() scaling.Study {
	st := scaling.Study{SchemaVersion: 1, Command: c.Command, Host: c.Host, Started: time.Now().UTC().Format(time.RFC3339),
		By: c.Axis.By, DDP: c.DDP, Weak: c.Weak, Threshold: c.Threshold, Repeat: c.Repeat}
	if c.Metric != nil {
		st.Metric = &scaling.MetricInfo{Regex: c.Regex, Of: c.Metric.Of, Unit: c.Unit, LowerIsBetter: c.LowerIsBetter}
	}
	return st
}

// runPoint runs one size once and reads what it gave. The rules:
//
//	P1. A run that could not start, or ended other than with status 0,
//	    or was stopped, gives no figure; its status and, where it ran,
//	    its last lines say why: its failing instances' first
//	    (lineSink.lastLines, failedOnItsOwn).
//	P2. With a metric, the figure is what the metric read (none: why).
//	P3. Without one, it is the inverse of the run's wall time: the runs
//	    per second; in a packing study its instances over it, the runs
//	    per second they give together (not the sum of their own 1/wall:
//	    an instance's wall is the supervisor's, from its start to its
//	    reaping, which for a run of milliseconds is not the time it had).
//	P4. In a packing study each instance has its own figure (its last
//	    match, or the inverse of its own wall), GPU% and GPU memory
//	    (Each).
//	P5. A size under MPS has its daemons up before its instances start,
//	    and stopped after they end; daemons that do not come up give no
//	    figure, and a signal while they come up stops the study. Its
//	    wall time is its instances', from their start: the daemons'
//	    start is not the packing's (a job's own MPS has none).
func (c Config) runPoint(p Point) scaling.Run {
	var run scaling.Run
	sink := &lineSink{tail: 20}
	if c.Metric != nil {
		sink.reading = c.Metric.NewReading()
	}
	spec := p.Spec
	spec.Instances, spec.Label, spec.Stdout, spec.Stderr = slices.Clone(p.Spec.Instances), true, sink, sink
	if p.MPS != nil {
		stop, err := startMPS(p.MPS, &spec)
		if stop != nil {
			defer stop()
		}
		var by launcher.StoppedBy
		switch {
		case errors.As(err, &by):
			run.ExitCode, run.Interrupted, run.NoMetric = by.ExitCode(false), true, err.Error()
			return run
		case err != nil:
			run.ExitCode, run.NoMetric = 2, err.Error()
			return run
		}
	}
	began := time.Now()
	res, err := c.launch(spec)
	run.WallSeconds = time.Since(began).Seconds()
	if err != nil {
		run.ExitCode, run.NoMetric = 2, err.Error()
		return run
	}
	run.ExitCode, run.Interrupted = res.ExitCode(), res.Signal != 0
	run.GPUUtil, run.GPUMemPerGPU = gpuUse(res.Outcomes, spec.Instances)
	if c.Axis == scaling.ByPerGPU {
		run.Each = each(res.Outcomes, spec.Instances, sink.reading)
	}
	switch {
	case run.ExitCode != 0 || run.Interrupted:
		run.NoMetric = "exit status " + strconv.Itoa(run.ExitCode) + "; its last lines:\n" + sink.lastLines(failing(res.Outcomes))
	case sink.reading == nil && run.Each != nil:
		fig := float64(len(run.Each)) / run.WallSeconds
		run.Metric = &fig
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

// failing are the instances of a run that failed on their own
// (failedOnItsOwn).
func failing(outs []launcher.Outcome) []int {
	var out []int
	for i, o := range outs {
		if failedOnItsOwn(o) {
			out = append(out, i)
		}
	}
	return out
}

// failedOnItsOwn: an instance ended with a status other than 0 or by a
// signal, and gpulaunch did not stop it for another's sake (an instance
// that failed first, --wait, --halt, a group's restart) or for a signal
// to gpulaunch: its own last lines say why (its --timeout and memory cap
// are its own too).
func failedOnItsOwn(o launcher.Outcome) bool {
	if o.Code == 0 && o.Signal == 0 {
		return false
	}
	switch o.EndedBy {
	case job.EndedItself, job.EndedTimeout, job.EndedMemory:
		return true
	}
	return false
}

// startMPS starts a size's MPS daemons for one of its runs (mps.Run.Start)
// and tells each instance of spec its GPU's, as `gpulaunch run --mps`
// does; stop stops them after the run. A signal while they come up stops
// the start (the error wraps launcher.StoppedBy); the signals are the
// run's from then on (Spec.Signals).
func startMPS(r *mps.Run, spec *launcher.Spec) (stop func(), err error) {
	wait := launcher.StartWaiting()
	d, err := r.Start(wait.Context(), wait.Hurry(), spec.Log)
	if err != nil {
		wait.Stop()
		if by, ok := wait.Stopped(); ok {
			return nil, fmt.Errorf("%w: stopped while the MPS control daemons came up (%v)", by, err)
		}
		return nil, err
	}
	for slot, env := range r.ClientEnvs(d) {
		spec.Instances[slot].Env = append(slices.Clip(spec.Instances[slot].Env), env...)
	}
	if d != nil {
		spec.Spare = d.Keepers()
	}
	spec.Signals = wait.HandOver()
	return func() { d.StopAfterRun(spec.Log); wait.Stop() }, nil
}

// each is a packing run's instances (P4): each one's figure — its last
// match, or without a metric its 1/wall when it ended with 0 —, its GPU%
// and its peak GPU memory where it was sampled.
func each(outs []launcher.Outcome, insts []launcher.Instance, reading *scaling.Reading) []scaling.InstanceFigure {
	out := make([]scaling.InstanceFigure, len(outs))
	for i, o := range outs {
		out[i].Instance = i
		switch {
		case reading != nil:
			if fig, ok := reading.Last(i); ok {
				out[i].Metric = ptr(fig)
			}
		case o.Code == 0 && o.Signal == 0 && o.Wall > 0:
			out[i].Metric = ptr(1 / o.Wall.Seconds())
		}
		if o.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			out[i].GPUUtil, out[i].GPUMemPeak = ptr(o.GPUUtilMean), ptr(float64(o.GPUMemPeak))
			out[i].GPUUtilSource = o.GPUUtilSource
		}
	}
	return out
}

func ptr(x float64) *float64 { return &x }

// gpuUse is a run's GPU% — how busy its GPUs were (GPUBusy), not its
// instances' own figures — and its peak GPU memory over its GPUs; nil
// where nothing was measured.
func gpuUse(outs []launcher.Outcome, insts []launcher.Instance) (util, memPerGPU *float64) {
	var mem float64
	gpus := 0
	use := make([]InstanceUse, len(outs))
	for i, out := range outs {
		gpus += len(insts[i].GPUUUIDs)
		use[i] = InstanceUse{GPUs: insts[i].GPUUUIDs, Util: out.GPUUtilMean, Source: out.GPUUtilSource}
		if out.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			mem += float64(out.GPUMemPeak)
		}
	}
	busy, ok := GPUBusy(use)
	if !ok {
		return nil, nil
	}
	return &busy, ptr(mem / float64(max(gpus, 1)))
}

// say prints one run's line as the study goes.
func (c Config) say(st *scaling.Study, p Point, round int, run scaling.Run) {
	what := fmt.Sprintf("%s %d, run %d of %d", c.Axis.Flag, p.Size, round+1, c.Repeat)
	if p.Mode == scaling.MPS {
		what = fmt.Sprintf("%s %d under MPS, run %d of %d", c.Axis.Flag, p.Size, round+1, c.Repeat)
	}
	switch {
	case run.Interrupted:
		fmt.Fprintf(c.Say, "gpulaunch scale: %s: interrupted; the study stops and keeps the sizes done\n", what)
	case run.Metric != nil && c.Quiet: // -q: the table on stdout is the result
	case run.Metric != nil:
		fmt.Fprintf(c.Say, "gpulaunch scale: %s: %s in %.1f s\n", what, st.FigureString(*run.Metric), run.WallSeconds)
	default:
		fmt.Fprintf(c.Say, "gpulaunch scale: %s: no figure: %s\n", what, run.NoMetric)
	}
}
