package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

const scaleUsage = `Usage: gpulaunch scale (-G LIST | -n LIST [--ddp]) [--metric REGEX] [flags] -- COMMAND [ARGS…]

Does my code scale? Runs COMMAND at several GPU counts inside the allocation,
one size after another, each as gpulaunch would run it (its own GPUs, NUMA-local
CPUs, memory policy), and prints per size the figure of merit (median and
spread over --repeat runs), the speedup over the smallest size, the parallel
efficiency, the GPUs' mean utilisation and memory, and a verdict: the size
beyond which efficiency drops below --efficiency.

  -G 1,2,4,8   one process on G GPUs (GPULAUNCH_GPUS lists them)
  -n 1,2,4,8   N instances of one GPU each; with --ddp one data-parallel job

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
  gpulaunch scale -G 1,2 --simulate dgx-h100 -- ./app          # try the study on a simulated node`

// scaleOptions is scale's command line.
type scaleOptions struct {
	fs     *pflag.FlagSet
	common commonFlags
	shape  planFlags // -c, --mem-bind, --share-gpus, for each run
	run    runFlags  // every run flag, for each run
	gpus   string
	ntasks string
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

	sizes       []int
	byInstances bool
	m           *scaling.Metric
	// gpuNote says why GPU use is not measured on this node ("" when it
	// is), for the picture's utilisation panel.
	gpuNote string
}

// scaleOnly are scale's own flags; every other flag it was given is a
// run flag, handed to every size's run as given.
var scaleOnly = map[string]bool{"gpus-per-task": true, "ntasks": true, "repeat": true, "metric": true, "metric-mean": true, "metric-sum": true,
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

// notForAStudy are run's flags that scale refuses: each is about one run.
// scale's flag set has them, hidden, so that they are refused with the
// reason instead of "unknown flag"; --help, the man page and the
// completions leave them out.
var notForAStudy = []string{"tmux", "dry-run", "report", "ranks", "kill-on-bad-exit", "wait", "metrics-file", "metrics-listen"}

// newScaleOptions is scale's flag set, registered into fresh options.
func newScaleOptions() *scaleOptions {
	o := &scaleOptions{fs: pflag.NewFlagSet("scale", pflag.ContinueOnError)}
	o.fs.SetInterspersed(false)
	o.register(o.fs)
	for _, name := range notForAStudy {
		_ = o.fs.MarkHidden(name)
	}
	return o
}

// parseScale reads and checks scale's command line: a bad one stops here.
func (a *app) parseScale(args []string) (*scaleOptions, error) {
	o := newScaleOptions()
	if done, err := a.parseFlags(o.fs, args, scaleUsage); done || err != nil {
		return nil, err
	}
	o.argv = o.fs.Args()
	if err := o.check(); err != nil {
		return nil, err
	}
	var err error
	list := o.gpus
	if o.byInstances = o.ntasks != ""; o.byInstances {
		list = o.ntasks
	}
	most := binding.MaxGPUsPerInstance
	if o.byInstances {
		most = binding.MaxInstances
	}
	if o.sizes, err = scaling.Sizes(o.sizeFlag(), list, most); err != nil {
		return nil, usageError{err}
	}
	if o.fs.Changed("metric") {
		of := map[bool]string{false: "last", true: "mean"}[o.mean]
		if o.sum {
			of = "sum"
		}
		if o.m, err = scaling.NewMetric(o.metric, of); err != nil {
			return nil, usageError{err}
		}
	}
	return o, nil
}

// sizeFlag is the flag the sizes came with: -n (instances) or -G (GPUs).
func (o *scaleOptions) sizeFlag() string {
	if o.byInstances {
		return "-n"
	}
	return "-G"
}

// check refuses what a study cannot do.
func (o *scaleOptions) check() error {
	fs := o.fs
	switch {
	case o.run.quiet && o.common.verbose:
		return usagef("-q/--quiet and -v/--verbose ask for less and more of gpulaunch's lines: give one of them")
	case len(o.argv) == 0:
		return usagef("no command to study: gpulaunch scale -G 1,2,4,8 -- COMMAND [ARGS…]")
	case (o.gpus == "") == (o.ntasks == ""):
		return usagef("give the sizes with -G 1,2,4,8 (one process on G GPUs) or -n 1,2,4,8 (N instances of one GPU each), one of them")
	case o.gpus != "" && o.run.ddp.ddp:
		return usagef("--ddp is for -n: N instances that form one data-parallel job; -G runs one process on G GPUs")
	case o.repeat < 1:
		return usagef("--repeat %d: run every size at least once", o.repeat)
	case !(o.eff > 0 && o.eff <= 1): // NaN too
		return usagef("--efficiency %g: give a share between 0 and 1, e.g. 0.6", o.eff)
	case o.mean && o.sum:
		return usagef("--metric-mean and --metric-sum exclude each other: the mean of instance 0's matches, or the sum of every instance's last")
	}
	for _, name := range []string{"metric-mean", "metric-sum", "unit", "lower-is-better"} {
		if fs.Changed(name) && !fs.Changed("metric") {
			return usagef("--%s is about the figure --metric REGEX reads: give --metric", name)
		}
	}
	for _, name := range notForAStudy {
		if fs.Changed(name) {
			return usagef("--%s is not for a study: each size is one run, and gpulaunch scale reports them all; drop it (or run one size with `gpulaunch run --%s …`)", name, name)
		}
	}
	for flag, file := range map[string]string{"--json": o.json, "--svg": o.svg} {
		if file != "" {
			if err := outputName("scale "+flag, file, false); err != nil {
				return err
			}
			if err := checkWritable(file); err != nil {
				return usagef("%s %s: %v: nothing was started", flag, file, err)
			}
		}
	}
	return checkArgv(o.argv)
}

// pointArgs is the run command line of one size: every run flag scale
// was given, the size, the command.
func (o *scaleOptions) pointArgs(size int) []string {
	var args []string
	o.fs.Visit(func(f *pflag.Flag) {
		if !scaleOnly[f.Name] {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	if o.byInstances {
		args = append(args, "-n", strconv.Itoa(size), "-G", "1")
	} else {
		args = append(args, "-n", "1", "-G", strconv.Itoa(size))
	}
	return append(append(args, "--"), o.argv...)
}

// scalePoint is one size, decided before any runs: its options and launch.
type scalePoint struct {
	size int
	opts *runOptions
	l    *launch
}

// checkStudyFiles checks, before any size runs, every file the study
// writes: each size's -o and -e files can be written, and none of them,
// --json or --svg is a file the study reads or one of another kind
// (fileClash). --json's and --svg's own writability is check's.
func (a *app) checkStudyFiles(o *scaleOptions, points []scalePoint, path string) error {
	uses := append(a.nodeInputs(o.common), outputs.Use{Flag: "the command", Path: path, Reads: "the program the study starts"})
	c := outputs.NewWritableCheck()
	for _, p := range points {
		insts, err := p.l.instances(nil, p.opts)
		if err != nil {
			return err
		}
		for _, inst := range insts {
			who := fmt.Sprintf("%s %d, instance %d", o.sizeFlag(), p.size, inst.Index)
			if err := c.Files("-o "+p.opts.flags.output, inst.Stdout, "-e "+p.opts.flags.error, inst.Stderr, who); err != nil {
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
	return fileClash(uses, fileIdentity)
}
