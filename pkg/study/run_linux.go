//go:build linux

package study

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
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
		st.Points = append(st.Points, scaling.Point{GPUs: p.GPUs, Instances: p.Instances, GPUsPerInstance: p.GPUsPerInstance})
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
//	    its last lines say why.
//	P2. With a metric, the figure is what the metric read (none: why).
//	P3. Without one, it is the inverse of the run's wall time.
func (c Config) runPoint(p Point) scaling.Run {
	var run scaling.Run
	sink := &lineSink{tail: 20}
	if c.Metric != nil {
		sink.reading = c.Metric.NewReading()
	}
	spec := p.Spec
	spec.Instances, spec.Label, spec.Stdout, spec.Stderr = slices.Clone(p.Spec.Instances), true, sink, sink
	began := time.Now()
	res, err := c.launch(spec)
	run.WallSeconds = time.Since(began).Seconds()
	if err != nil {
		run.ExitCode, run.NoMetric = 2, err.Error()
		return run
	}
	run.ExitCode, run.Interrupted = res.ExitCode(), res.Signal != 0
	run.GPUUtil, run.GPUMemPerGPU = gpuUse(res.Outcomes, spec.Instances)
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

// say prints one run's line as the study goes.
func (c Config) say(st *scaling.Study, p Point, round int, run scaling.Run) {
	what := fmt.Sprintf("%s %d, run %d of %d", c.Axis.Flag, p.Size, round+1, c.Repeat)
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
