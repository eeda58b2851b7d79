package main

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/metrics"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/report"
)

// launch is one run as decided before anything starts: what the
// allocation holds, what was asked, where each instance goes, how this
// node sits among the others, and what every instance is told. It is
// built once (newLaunch) and read by the instances, the board and the
// report, so that they cannot tell different stories.
type launch struct {
	alloc binding.Allocation
	src   gpu.Source // the GPU backend, for telemetry
	req   binding.Request
	plan  binding.Plan
	group nodegroup.NodeGroup
	rdv   *nodegroup.Rendezvous // --ddp's; nil without
	argv  []string              // COMMAND [ARGS…]
	path  string                // argv[0] resolved; "" for a task queue
	names instance.Names        // what output patterns expand to
	// report is --report's file for this node; "" without.
	report string
	// metricsFile is --metrics-file's file for this node; "" without.
	// metricsExpanded: its pattern expanded to another name (%j, a node's
	// host), which the run says once everything is checked.
	metricsFile     string
	metricsExpanded bool
	// bind: the plan's CPUs are this machine's, so binding is applied
	// (always, unless --simulate describes another machine).
	bind bool
	// usageDir is where apps on a simulated node declare their GPU use.
	usageDir string
	// monitor is the telemetry interval; 0: none.
	monitor time.Duration
	// need is what the run needed of NVIDIA's GPUs (discover.Need).
	need gpu.Need
	// nodes is this node's part in a queue over several nodes.
	nodes nodeQueue
}

// found is what discovery found to run on: the allocation, the GPU
// backend and, on a simulated node, where its apps declare their GPU use.
type found struct {
	alloc    binding.Allocation
	src      gpu.Source
	usageDir string
}

// newLaunch plans the run on what was found and places this node among
// the others, by the rules of a run's shape (launcher's S1-S3).
func (a *app) newLaunch(o *runOptions, f found, path string, log *zap.Logger) (*launch, error) {
	alloc := f.alloc
	l := &launch{alloc: alloc, src: f.src, usageDir: f.usageDir, need: o.need(a.env), req: o.req, argv: o.argv, path: path, monitor: o.policy.Monitor,
		names: instance.Names{JobID: alloc.Sched.JobID, StepID: alloc.Sched.StepID, Host: a.hostname}}
	var err error
	if o.auto() {
		if l.req.Instances, err = launcher.AutoInstances(len(alloc.GPUs), l.req.GPUsPerInstance, alloc.GPUReason); err != nil {
			return nil, usageError{err}
		}
	}
	if l.plan, err = binding.NewPlan(alloc, l.req); err != nil {
		return nil, usageError{err}
	}
	sameN := launcher.SameNEverywhere(o.auto(), alloc.Sched.GPUsPerNode, len(alloc.GPUs), o.tasks.queueMode())
	if l.group, err = nodegroup.Find(a.env, alloc.Sched, a.hostname, len(l.plan.Slots), sameN, o.flags.ranks == "local"); err != nil {
		return nil, usageError{err}
	}
	g := l.group
	if l.nodes, err = newNodeQueue(o, g, a.env); err != nil {
		return nil, err
	}
	if err := o.policy.CheckNodes(g.Size); err != nil {
		return nil, usageError{err}
	}
	if g.MultiNode() {
		l.names.NodeIndex, l.names.Host = g.Rank, g.Host
		log.Debug(fmt.Sprintf("node %d of %d (%s): ranks %d..%d of %d", g.Rank, g.Size, g.Source,
			g.Ranks(0).Rank, g.Ranks(len(l.plan.Slots)-1).Rank, g.Ranks(0).WorldSize))
	}
	if l.rdv, err = o.flags.ddp.rendezvous(a.env, a.pid, alloc.Sched, g, g.Rank == 0); err != nil {
		return nil, err
	}
	l.report, err = siteFile(o, "report", "report",
		func() (string, error) { return report.FileFor(o.flags.report, l.names, g.MultiNode()) },
		func() (string, error) { return report.Path(o.flags.report, l.names, g.MultiNode()) }, log)
	if err != nil {
		return nil, usageError{err}
	}
	if l.report != "" && l.report != o.flags.report {
		log.Info("--report: this node writes " + l.report)
	}
	metricsFile := func() (string, error) { return metrics.FileName(o.flags.metricsFile, l.names, g.MultiNode()) }
	l.metricsFile, err = siteFile(o, "metrics-file", "metrics file", metricsFile, metricsFile, log)
	if err != nil {
		return nil, usageError{err}
	}
	l.metricsExpanded = l.metricsFile != "" && l.metricsFile != o.flags.metricsFile
	l.bind = o.common.simulate == "" || binding.Bindable(a.root, l.plan)
	return l, nil
}

// instances are the plan's slots made ready to start (launcher.Planned),
// from the environment base.
func (l *launch) instances(base []string, o *runOptions) ([]launcher.Instance, error) {
	if l.usageDir != "" {
		base = append(base, gpu.SimulatedUsageEnv+"="+l.usageDir)
	}
	insts, err := launcher.Planned{Slots: l.plan.Slots, Group: l.group, Base: base, Env: instance.OptionsFor(l.alloc, o.ids, o.vis, l.rdv),
		Path: l.path, Argv: l.argv, Bind: l.bind, Stdout: o.flags.output, Stderr: o.flags.error, Names: l.names}.Instances()
	return insts, asUsage(err)
}

// runInfo says which run this is, for `gpulaunch status`.
// sh is how the instances share GPUs (checkStart's).
func (l *launch) runInfo(a *app, started time.Time, sh *mps.Sharing) launcher.RunInfo {
	return launcher.RunInfo{PID: a.pid, Host: a.hostname, JobID: l.alloc.Sched.JobID, StepID: l.alloc.Sched.StepID,
		Command: l.argv, Started: started, Monitor: l.monitor.String(), Node: l.group.Rank, Nodes: l.group.Size, WorldSize: l.group.Ranks(0).WorldSize,
		Sharing: sh.Lines()}
}

// watched are the GPUs the run's telemetry watches: the allocation's, so
// that launch verification sees an instance on a GPU not its own — none
// where no instance sees a GPU (gpu.NeedList): each is told no device,
// so none of theirs is on a GPU, and on this machine no NVML was loaded
// to watch them with.
func (l *launch) watched() []string {
	if l.need == gpu.NeedList {
		return nil
	}
	return uuids(l.alloc.GPUs)
}

func uuids(gpus []gpu.GPU) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = g.UUID
	}
	return out
}
