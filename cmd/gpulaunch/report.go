package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/discover"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/report"
	"github.com/gpulaunch/gpulaunch/pkg/sitedefaults"
)

const infoUsage = `Usage: gpulaunch info [--json] [--simulate NODE|FILE]

Shows what this process was given: GPUs by UUID and PCI address with their
NUMA node and local CPUs, the CPUs and memory nodes it may use, the cgroup
memory limit, the Slurm job/step and MPI local rank, every guess made, and
the site defaults set in the environment (GPULAUNCH_MONITOR_INTERVAL,
GPULAUNCH_METRICS_FILE, GPULAUNCH_METRICS_LISTEN, GPULAUNCH_REPORT: a run's
flags when not given; docs/install.md, "Site defaults"). Where NVIDIA's NVML does not start (its init fails, or does not answer in
GPULAUNCH_NVML_WAIT, default 10s), the GPUs are read from /proc/driver/nvidia
and sysfs and NVML's error is among the warnings.`

func (a *app) info(args []string) error {
	var c commonFlags
	fs := infoFlagSet(&c)
	if done, err := a.parseFlags(fs, args, infoUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("info takes no arguments, got %q", fs.Arg(0))
	}
	log, err := c.logger(a.stderr)
	if err != nil {
		return err
	}
	alloc, err := a.discover(c, gpu.NeedAll)
	if err != nil {
		return err
	}
	log.Debug("allocation", zap.String("backend", alloc.Backend), zap.Int("gpus", len(alloc.GPUs)), zap.Stringer("cpus", alloc.CPUs))
	doc := infoDoc{InfoDoc: report.InfoJSON(alloc), SiteDefaults: sitedefaults.Show(a.env, checkSiteValue)}
	if gpuvendor.Of(alloc.Vendor).MPS && len(alloc.GPUs) > 0 {
		doc.MPS = mps.Describe(mps.NodeOf(a.env, controlOf(a).dirs()[0], a.uid))
	}
	if c.json {
		return writeJSON(a.stdout, doc)
	}
	report.WriteInfo(a.stdout, alloc)
	if m := doc.MPS; m != nil {
		fmt.Fprintf(a.stdout, "MPS:       %s\n", m.Says)
	}
	sitedefaults.WriteInfo(a.stdout, doc.SiteDefaults)
	return nil
}

func infoFlagSet(c *commonFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("info", pflag.ContinueOnError)
	c.register(fs)
	return fs
}

// infoDoc is `info --json`: the node's description (report.InfoDoc)
// and, on an NVIDIA node, what --mps would find.
type infoDoc struct {
	report.InfoDoc
	// MPS is what --mps would find on an NVIDIA node; absent elsewhere.
	MPS *mps.Info `json:"mps,omitempty"`
	// SiteDefaults are the site's defaults set in the environment, each
	// with why a run would refuse it; empty when none is set.
	SiteDefaults []sitedefaults.Shown `json:"site_defaults"`
}

const planUsage = `Usage: gpulaunch plan -n N [-G G] [-c C] [--mem-bind preferred|bind|none] [--json] [--simulate NODE|FILE]

Shows where each of N instances would run — its GPU(s), CPU set and memory
policy — without starting anything. The same plan is what a run uses.`

// planFlags are the flags that shape slots, shared by plan and run.
type planFlags struct {
	instances, gpus, cpus int
	memBind               string
	shareGPUs             bool
	overcommit            bool
	mps                   mpsFlags // run and plan only (register)
}

func (p *planFlags) register(fs *pflag.FlagSet) {
	fs.IntVarP(&p.instances, "ntasks", "n", 0, "number of instances N")
	p.registerOvercommit(fs)
	p.registerShape(fs, "instance", 1, "GPUs per instance; 0 runs instances without a GPU")
	p.mps.register(fs)
}

// registerShape registers the flags that shape one slot; rank mode has
// them too, without -n (the launcher decides how many ranks there are).
// gpus is -G's default; rank mode's, decided from the node when -G is not
// given, is in gpusHelp, and it registers 0 so that help shows one default.
func (p *planFlags) registerShape(fs *pflag.FlagSet, unit string, gpus int, gpusHelp string) {
	fs.IntVarP(&p.gpus, "gpus-per-task", "G", gpus, gpusHelp)
	p.registerCPUs(fs, unit)
}

// registerOvercommit registers -O (run, plan and scale).
func (p *planFlags) registerOvercommit(fs *pflag.FlagSet) {
	fs.BoolVarP(&p.overcommit, "overcommit", "O", false, "allow more instances than allowed CPUs; they share them (as srun -O)")
}

// registerCPUs registers the flags that shape a slot's CPUs and memory.
func (p *planFlags) registerCPUs(fs *pflag.FlagSet, unit string) {
	fs.IntVarP(&p.cpus, "cpus-per-task", "c", 0, "CPUs per "+unit+" (default: an even share of the GPU-local CPUs)")
	fs.StringVar(&p.memBind, "mem-bind", "preferred", "NUMA memory policy: preferred, bind or none")
	fs.BoolVar(&p.shareGPUs, "share-gpus", false, "allow more "+unit+"s than GPUs; they take turns on them")
}

// request builds the Request; without -n, Instances stays 0 unless -n is
// required (plan), and the caller decides it from the allocation (run).
func (p planFlags) request(fs *pflag.FlagSet, requireN bool) (binding.Request, error) {
	if requireN && !fs.Changed("ntasks") {
		return binding.Request{}, usagef("-n N is required: how many instances to plan")
	}
	// the counts here, with the other flags, so that a command line that
	// parses is one a plan can be asked of (FuzzParseArgs); --share-gpus
	// as given: --mps's own checks say what --mps needs
	var given binding.Given
	if fs != nil {
		given = binding.Given{Instances: fs.Changed("ntasks"), GPUs: fs.Changed("gpus-per-task"), CPUs: fs.Changed("cpus-per-task")}
	}
	counts := binding.Request{Instances: p.instances, GPUsPerInstance: p.gpus, CPUsPerInstance: p.cpus, ShareGPUs: p.shareGPUs}
	if err := counts.CheckCounts(given); err != nil {
		return binding.Request{}, usageError{err}
	}
	if fs != nil {
		if err := p.mps.check(fs); err != nil {
			return binding.Request{}, err
		}
	}
	pol, err := binding.ParseMemPolicy(p.memBind)
	if err != nil {
		return binding.Request{}, usageError{err}
	}
	// --mps shares GPUs: more instances than GPUs is what it is for
	r := binding.Request{Instances: p.instances, GPUsPerInstance: p.gpus, CPUsPerInstance: p.cpus, MemPolicy: pol, ShareGPUs: p.shareGPUs || p.mps.on, Overcommit: p.overcommit}
	return r, nil
}

func (a *app) plan(args []string) error {
	var c commonFlags
	var p planFlags
	fs := planFlagSet(&c, &p)
	if done, err := a.parseFlags(fs, args, planUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("plan takes no command; to run one use `gpulaunch -n N -- %s`", fs.Arg(0))
	}
	req, err := p.request(fs, true)
	if err != nil {
		return err
	}
	if _, err := c.logger(a.stderr); err != nil {
		return err
	}
	// a plan of instances without a GPU is what their run would see
	alloc, err := a.discover(c, discover.Need(a.env, req.GPUsPerInstance == 0, false, false))
	if err != nil {
		return err
	}
	plan, err := binding.NewPlan(alloc, req)
	if err != nil {
		return usageError{err}
	}
	sh, err := planSharing(plan, alloc, a.env, p.mps)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(a.stdout, report.PlanJSON(alloc, req, plan, sh))
	}
	report.WritePlan(a.stdout, alloc, plan, sh)
	return nil
}

func planFlagSet(c *commonFlags, p *planFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	c.register(fs)
	p.register(fs)
	return fs
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return errors.New("writing JSON: " + err.Error())
	}
	return nil
}
