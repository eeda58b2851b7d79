package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
	"github.com/gpulaunch/gpulaunch/pkg/study"
)

const scaleUsage = `Usage: gpulaunch scale (-G LIST | -n LIST [--ddp] | --per-gpu LIST [--mps]) [--metric REGEX] [flags] -- COMMAND [ARGS…]

Does my code scale? Runs COMMAND at several GPU counts inside the allocation,
one size after another, each as gpulaunch would run it (its own GPUs, NUMA-local
CPUs, memory policy), and prints per size the figure of merit (median and
spread over --repeat runs), the speedup over the smallest size, the parallel
efficiency, how busy each GPU was (GPU% (each GPU)) and the GPUs' memory, and
a verdict: the size beyond which efficiency drops below --efficiency.

  -G 1,2,4,8   one process on G GPUs (GPULAUNCH_GPUS lists them)
  -n 1,2,4,8   N instances of one GPU each; with --ddp one data-parallel job;
               with --share-gpus (and -O) more instances than GPUs, taking turns

How many instances per GPU? --per-gpu 1,2,4,8 runs K instances on every GPU
of the allocation (K × GPUs, taking turns as --share-gpus does) and, with
--mps, each size also under NVIDIA MPS, side by side. Per size and mode: the
instances' summed figure (--metric: each one's last match; else their runs
per second), the speedup over one per GPU, each instance's figure and GPU
memory, how busy each GPU was (one figure in both modes: per GPU its
instances' own summed, or its GPU's under MPS), and the headroom K of them
leave on their GPU; the verdict names the best packing ("4 per GPU under MPS:
4.3× one per GPU").

The figure of merit is --metric REGEX's number in the output (its group, or the
whole match): the last one instance 0 printed, their mean (--metric-mean), or
the sum of every instance's last (--metric-sum); bigger is better unless
--lower-is-better. Without --metric it is 1 / wall time (runs per second).
Strong scaling by default (the same work at every size); --weak when the work
grows with the GPUs (the app reads GPULAUNCH_SCALE_GPUS). A size that fails is
shown with its exit status and the study goes on (--halt stops it); Ctrl-C
stops it and keeps the sizes done. Exit status 0 when every size gave a figure,
1 when some did not, 130 after Ctrl-C. See docs/scaling.md.

Examples:
  gpulaunch scale -G 1,2,4,8 --metric 'throughput: ([0-9.]+)' --unit samples/s -- python train.py
  gpulaunch scale -n 1,2,4,8 --ddp --repeat 3 --json scale.json --svg scale.svg -- python train_ddp.py
  gpulaunch scale --per-gpu 1,2,4,8 --mps --metric 'samples/s: ([0-9.]+)' -- python infer.py
  gpulaunch scale -G 1,2 --simulate dgx-h100 -- ./app          # try the study on a simulated node`

// scaleOptions is scale's command line.
type scaleOptions struct {
	fs     *pflag.FlagSet
	common commonFlags
	shape  planFlags // -c, --mem-bind, --share-gpus, for each run
	run    runFlags  // every run flag, for each run
	gpus   string
	ntasks string
	perGPU string
	mps    bool
	repeat int
	metric string
	mean   bool
	sum    bool
	unit   string
	lower  bool
	weak   bool
	eff    float64
	json   string
	svg    string
	halt   bool
	argv   []string

	sizes []int
	axis  scaling.Axis
	modes []scaling.Mode
	m     *scaling.Metric
}

// scaleOnly are scale's own flags; every other flag it was given is a
// run flag, handed to every size's run as given.
var scaleOnly = map[string]bool{"gpus-per-task": true, "ntasks": true, "per-gpu": true, "mps": true, "repeat": true, "metric": true, "metric-mean": true, "metric-sum": true,
	"unit": true, "lower-is-better": true, "weak": true, "efficiency": true, "json": true, "svg": true, "halt": true, "help": true}

func (o *scaleOptions) register(fs *pflag.FlagSet) {
	o.common.registerNode(fs)
	o.common.registerLog(fs)
	o.shape.registerCPUs(fs, "instance")
	o.shape.registerOvercommit(fs)
	o.run.register(fs)
	// a study's runs are no queue: -o and --open-mode in its own words
	fs.Lookup("output").Usage = "each run's stdout (and, without -e, stderr) to this file pattern: %t instance, %j job, %s step, %N host, %n node index; without %t every instance of a run writes the one file. Each size's run starts it afresh"
	fs.Lookup("open-mode").Usage = "truncate (the default: each run starts its -o/-e files afresh) or append (every run of the study adds to them)"
	fs.Lookup("master-port").Usage = "--ddp: the rendezvous port (default: MASTER_PORT, else derived from the job and step ids)"
	fs.Lookup("master-addr").Usage = "--ddp: rank 0's host (default: MASTER_ADDR, else the first node of the step)"
	fs.StringVarP(&o.gpus, "gpus-per-task", "G", "", "GPU counts of one process, e.g. 1,2,4,8")
	fs.StringVarP(&o.ntasks, "ntasks", "n", "", "instance counts, one GPU each, e.g. 1,2,4,8 (with --ddp: one data-parallel job)")
	fs.StringVar(&o.perGPU, "per-gpu", "", "instances on every GPU, e.g. 1,2,4,8: a packing study (K × GPUs instances, taking turns)")
	fs.BoolVar(&o.mps, "mps", false, "--per-gpu: run each size under NVIDIA MPS too, side by side with taking turns")
	fs.IntVar(&o.repeat, "repeat", 1, "run every size this many times: the figure is their median, the spread their min..max")
	fs.StringVar(&o.metric, "metric", "", "the figure of merit: a regex on the output whose group is the number, e.g. 'throughput: ([0-9.]+)'")
	fs.BoolVar(&o.mean, "metric-mean", false, "the mean of instance 0's matches instead of its last")
	fs.BoolVar(&o.sum, "metric-sum", false, "the sum of every instance's last match (independent instances)")
	fs.StringVar(&o.unit, "unit", "", "the metric's unit, for the table and the plot (e.g. samples/s)")
	fs.BoolVar(&o.lower, "lower-is-better", false, "the metric is a time or a cost: speedup is the smallest size's over each size's")
	fs.BoolVar(&o.weak, "weak", false, "weak scaling: the work grows with the GPUs (the app reads GPULAUNCH_SCALE_GPUS)")
	fs.Float64Var(&o.eff, "efficiency", 0.6, "the parallel efficiency below which more GPUs are not worth it (0..1)")
	fs.StringVar(&o.json, "json", "", "write the study as JSON to FILE (docs/scale.schema.json)")
	fs.StringVar(&o.svg, "svg", "", "write the plot to FILE: speedup against ideal, efficiency, GPU utilisation")
	fs.BoolVar(&o.halt, "halt", false, "stop the study at the first size that fails")
}

// newScaleOptions is scale's flag set, registered into fresh options.
func newScaleOptions() *scaleOptions {
	o := &scaleOptions{fs: pflag.NewFlagSet("scale", pflag.ContinueOnError)}
	o.fs.SetInterspersed(false)
	o.register(o.fs)
	// run's flags that scale refuses (scaling.Choices, C8): hidden, so
	// that they are refused with the reason instead of "unknown flag";
	// --help, the man page and the completions leave them out
	for _, name := range scaling.NotForAStudy {
		_ = o.fs.MarkHidden(name)
	}
	return o
}

// read checks scale's parsed command line and decides its sizes and
// metric: a bad one stops here.
func (o *scaleOptions) read() error {
	o.argv = o.fs.Args()
	if err := o.check(); err != nil {
		return err
	}
	c := o.choices()
	o.axis, o.modes = c.Axis(), c.Modes()
	most := binding.MaxGPUsPerInstance
	if o.axis != scaling.ByGPUs {
		most = binding.MaxInstances
	}
	var err error
	if o.sizes, err = scaling.Sizes(o.axis.Flag, c.List(), most); err != nil {
		return usageError{err}
	}
	if o.fs.Changed("metric") {
		if o.m, err = scaling.NewMetric(o.metric, c.Of()); err != nil {
			return usageError{err}
		}
	}
	return nil
}

func (o *scaleOptions) choices() scaling.Choices {
	return scaling.Choices{GPUs: o.gpus, Instances: o.ntasks, PerGPU: o.perGPU, MPS: o.mps, DDP: o.run.ddp.ddp, Repeat: o.repeat, Efficiency: o.eff,
		Mean: o.mean, Sum: o.sum, Command: o.argv, Given: o.fs.Changed}
}

// check refuses what a study cannot do (scaling.Choices), and --json or
// --svg files that cannot be written.
func (o *scaleOptions) check() error {
	if o.run.quiet && o.common.verbose {
		return usagef("-q/--quiet and -v/--verbose ask for less and more of gpulaunch's lines: give one of them")
	}
	if err := o.choices().Check(); err != nil {
		return usageError{err}
	}
	for flag, file := range map[string]string{"--json": o.json, "--svg": o.svg} {
		if file != "" {
			if err := outputs.Document("scale "+flag, file, "nothing was started"); err != nil {
				return usageError{err}
			}
		}
	}
	return checkArgv(o.argv)
}

// runFlags are the run flags scale was given, as each size's run is given
// them.
func (o *scaleOptions) runFlags() []string {
	var args []string
	o.fs.Visit(func(f *pflag.Flag) {
		if !scaleOnly[f.Name] {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

// scale is `gpulaunch scale`: every size is decided first (a size the
// allocation cannot hold stops the study before anything runs), then
// study.Run runs --repeat rounds of every size, then the study is
// analysed, printed and written.
func (a *app) scale(args []string) error {
	o := newScaleOptions()
	if done, err := a.parseFlags(o.fs, args, scaleUsage); done || err != nil {
		return err
	}
	// GPULAUNCH_MONITOR_INTERVAL, given to every size's run (sitedefaults' rule 4)
	if _, err := a.siteDefaults("scale", o.fs, true); err != nil {
		return err
	}
	if err := o.read(); err != nil {
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
	alloc, src, usageDir, done, err := a.discoverToRun(o.common, true, gpu.NeedAll)
	if err != nil {
		return err
	}
	defer done()
	runs, launches, points, err := o.decide(a, found{alloc, src, usageDir}, path, log)
	if err != nil {
		return err
	}
	if err := o.checkFiles(points, runs, path, a.env); err != nil {
		return err
	}
	note := ""
	if len(launches) > 0 {
		note = study.GPUNote(launches[0].monitor, src, uuids(launches[0].alloc.GPUs))
	}
	st := study.Run(study.Config{Axis: o.axis, Command: o.argv, Host: a.hostname, Repeat: o.repeat, Metric: o.m, Regex: o.metric, Unit: o.unit,
		LowerIsBetter: o.lower, Weak: o.weak, DDP: o.run.ddp.ddp, Threshold: o.eff, Halt: o.halt, Quiet: o.run.quiet, Say: a.stderr}, points)
	return o.report(st, note, a.stdout)
}

// decide decides every size's run in every mode before any runs: a size
// the allocation cannot hold (Axis.Fits), a run refused, or MPS that
// cannot be had (mps.Prepare) stops the study here. One per GPU under MPS
// is no size: it shares nothing (mps.Check, M3), and is the same run as
// one per GPU taking turns.
func (o *scaleOptions) decide(a *app, f found, path string, log *zap.Logger) ([]*runOptions, []*launch, []study.Point, error) {
	var runs []*runOptions
	var launches []*launch
	var points []study.Point
	gpus := len(f.alloc.GPUs)
	for _, size := range o.sizes {
		for _, mode := range o.modes {
			if mode == scaling.MPS && size == 1 {
				continue
			}
			room := scaling.Room{GPUs: gpus, Reason: f.alloc.GPUReason, ShareGPUs: o.shape.shareGPUs, MPS: o.mps,
				MPSLimit: mps.NodeLimit(f.alloc.GPUs, mps.Host{CUDAVersion: f.alloc.CUDAVersion, Env: a.env})}
			if err := o.axis.Fits(size, room); err != nil {
				return nil, nil, nil, usageError{err}
			}
			ro, err := a.parseRun(o.axis.RunArgs(o.runFlags(), size, gpus, mode, o.argv), false)
			if err != nil {
				return nil, nil, nil, err
			}
			l, err := a.newLaunch(ro, f, path, log)
			if err != nil {
				return nil, nil, nil, usageError{o.axis.Refused(size, mode, err)}
			}
			if l.group.MultiNode() {
				return nil, nil, nil, usagef("gpulaunch scale studies the GPUs of one node: run it on one (srun -N 1 gpulaunch scale …)")
			}
			p := study.Point{Size: size, GPUs: study.GPUsUsed(l.plan), Instances: l.req.Instances, GPUsPerInstance: l.req.GPUsPerInstance, Mode: mode}
			if o.axis == scaling.ByPerGPU {
				p.PerGPU, p.GPUMemTotal = size, study.GPUMemory(l.plan)
			}
			if mode == scaling.MPS {
				if p.MPS, err = mps.Prepare(context.Background(), l.plan, l.alloc.Vendor, mps.Settings{On: true}, a.mpsNode(l.alloc)); err != nil {
					return nil, nil, nil, usageError{o.axis.Refused(size, mode, err)}
				}
			}
			runs, launches, points = append(runs, ro), append(launches, l), append(points, p)
		}
	}
	for i, l := range launches {
		insts, err := l.instances(study.Env(a.env.List(), points[i].ScaleGPUs(), o.weak), runs[i])
		if err != nil {
			return nil, nil, nil, err
		}
		points[i].Spec = launcher.Spec{Instances: insts, Policy: runs[i].policy, Log: log, GPUs: l.src, WatchGPUs: uuids(l.alloc.GPUs), OpenMode: runs[i].openMode()}
	}
	return runs, launches, points, nil
}

// checkFiles checks, before any size runs, every file the study
// writes: each size's -o and -e files can be written, and none of them,
// --json or --svg is a file the study reads or one of another kind
// (outputs.Clash). --json's and --svg's own writability is check's.
func (o *scaleOptions) checkFiles(points []study.Point, runs []*runOptions, path string, env sched.Env) error {
	uses := outputs.Reads{Simulate: o.common.simulate, NodeFile: o.common.nodeFile, EnvNodeFile: env["GPULAUNCH_NODE_FILE"], Program: path, Starter: "the study"}.Uses()
	c := outputs.NewWritableCheck()
	for i, p := range points {
		for _, inst := range p.Spec.Instances {
			who := fmt.Sprintf("%s %d, instance %d", o.axis.Flag, p.Size, inst.Index)
			if err := c.Files("-o "+runs[i].flags.output, inst.Stdout, "-e "+runs[i].flags.error, inst.Stderr, who); err != nil {
				return usageError{err}
			}
			uses = append(uses, outputs.Outputs(inst.Stdout, inst.Stderr)...)
		}
	}
	if o.json != "" {
		uses = append(uses, outputs.Use{Flag: "--json", Path: o.json, Writes: "the study's JSON"})
	}
	if o.svg != "" {
		uses = append(uses, outputs.Use{Flag: "--svg", Path: o.svg, Writes: "the study's picture"})
	}
	return asUsage(outputs.Clash(uses, outputs.Identity))
}

// report analyses the study, prints its table and verdict on w, writes
// --json and --svg, and says with the exit status whether it is whole.
func (o *scaleOptions) report(st scaling.Study, gpuNote string, w io.Writer) error {
	st.Analyse()
	st.WriteTable(w)
	if o.json != "" {
		data, err := st.JSON()
		if err != nil {
			return err
		}
		if err := outputs.WriteWhole(o.json, data); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if o.svg != "" {
		data, err := st.SVG(gpuNote)
		if err == nil {
			err = outputs.WriteWhole(o.svg, data)
		}
		if err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	if code := st.ExitStatus(); code != 0 {
		return exitCode(code)
	}
	return nil
}
