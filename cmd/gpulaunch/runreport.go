package main

import (
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/report"
)

// buildReport is the report (`--report FILE`, pkg/report) of launch l,
// the run run, whose instances insts ended as res and whose exit status
// is code; sh is how they shared GPUs.
func buildReport(l *launch, sh *mps.Sharing, run launcher.RunInfo, insts []launcher.Instance, res launcher.Result, code int) report.Run {
	g := l.group
	return report.Build(report.Facts{
		Host: l.alloc.Hostname, Command: l.argv, Monitor: l.monitor,
		Plan: report.PlanJSON(l.alloc, l.req, l.plan, sh), Warnings: l.plan.Warnings,
		Launch: report.Launch{Node: g.Rank, Nodes: g.Size, WorldSize: g.Ranks(0).WorldSize, NodeFrom: g.Source, Hosts: g.Hosts, Rendezvous: l.rdv},
		Run:    run, Instances: insts, Result: res, ExitCode: code,
	})
}
