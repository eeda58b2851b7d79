package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// runReport is `--report FILE`: the end-of-run summary as JSON, plus the
// plan and every warning. docs/report.md documents it and
// docs/report.schema.json is its schema; a test validates against that.
type runReport struct {
	SchemaVersion int       `json:"schema_version"`
	Host          string    `json:"host"`
	Command       []string  `json:"command"`
	Started       time.Time `json:"started"`
	WallSeconds   float64   `json:"wall_seconds"`
	ExitCode      int       `json:"exit_code"`
	MonitorSecs   float64   `json:"monitor_interval_seconds"`
	// GPUTelemetry says why GPU use went unmeasured; absent when it was
	// measured or telemetry was off.
	GPUTelemetry string           `json:"gpu_telemetry,omitempty"`
	Plan         planDoc          `json:"plan"`
	Launch       launchReport     `json:"launch"`
	Instances    []instanceReport `json:"instances"`
	// RootCause is the failure that ended a distributed group (--ddp);
	// absent when none did.
	RootCause *rootCauseReport `json:"root_cause,omitempty"`
	Warnings  []string         `json:"warnings"`
}

// rootCauseReport is launcher.Failure in the report: the rank whose
// failure ended the group, and the exception it wrote in its error file.
type rootCauseReport struct {
	Instance  int    `json:"instance"`
	Rank      int    `json:"rank"`
	Attempt   int    `json:"attempt"`
	ExitCode  int    `json:"exit_code"`
	Signal    string `json:"signal,omitempty"`
	ErrorFile string `json:"error_file,omitempty"`
	// From the error file; absent when the rank wrote none (NoError says
	// why).
	Type      string     `json:"type,omitempty"`
	Message   string     `json:"message,omitempty"`
	Where     string     `json:"where,omitempty"`
	Traceback string     `json:"traceback,omitempty"`
	Time      *time.Time `json:"time,omitempty"`
	NoError   string     `json:"no_error,omitempty"`
}

func rootCauseOf(f *launcher.Failure) *rootCauseReport {
	if f == nil {
		return nil
	}
	r := &rootCauseReport{Instance: f.Instance, Rank: f.Rank, Attempt: f.Attempt, ExitCode: f.Code, NoError: f.NoError}
	if f.Wrote { // kept; a file never written is not named
		r.ErrorFile = f.ErrorFile
	}
	if f.Signal != 0 {
		r.Signal = f.Status()
	}
	if e := f.Error; e != nil {
		r.Type, r.Message, r.Where, r.Traceback = e.Type, e.Message, e.Where(), e.Traceback
		if !e.Time.IsZero() {
			t := e.Time.UTC()
			r.Time = &t
		}
	}
	return r
}

// launchReport places this node's report among the other nodes' reports
// of a launch over several nodes: each node's gpulaunch writes its own.
type launchReport struct {
	Node       int                 `json:"node"`
	Nodes      int                 `json:"nodes"`
	WorldSize  int                 `json:"world_size"`
	NodeFrom   string              `json:"node_from"`
	Hosts      []string            `json:"hosts"`
	Rendezvous *binding.Rendezvous `json:"rendezvous"`
}

type instanceReport struct {
	Instance    int      `json:"instance"`
	Rank        int      `json:"rank"`
	Host        string   `json:"host"`
	PID         int      `json:"pid"`
	GPUs        []string `json:"gpus"`
	CPUs        string   `json:"cpus"`
	WallSeconds float64  `json:"wall_seconds"`
	ExitCode    int      `json:"exit_code"`
	Signal      string   `json:"signal"`
	EndedBy     string   `json:"ended_by"`
	Restarts    int      `json:"restarts"`
	// GPUUtilMean is null when no GPU sample was taken.
	GPUUtilMean *float64 `json:"gpu_util_mean_pct"`
	GPUUtilPeak int      `json:"gpu_util_peak_pct"`
	GPUMemPeak  uint64   `json:"gpu_mem_peak_bytes"`
	RSSPeak     uint64   `json:"rss_peak_bytes"`
	CPUSeconds  float64  `json:"cpu_seconds"`
	Warnings    []string `json:"warnings"`
	// Series and Events are the instance's timeline (launcher.Series),
	// for `gpulaunch report FILE --svg`.
	Series        *launcher.Series `json:"series,omitempty"`
	Events        []launcher.Event `json:"events,omitempty"`
	EventsDropped int              `json:"events_dropped,omitempty"`
}

const reportSchemaVersion = 1

// buildReport is the report of launch l, the run run, whose instances
// ended as outs and whose exit status is code.
func buildReport(l *launch, run launcher.RunInfo, insts []launcher.Instance, res launcher.Result, code int) runReport {
	outs := res.Outcomes
	g := l.group
	r := runReport{
		SchemaVersion: reportSchemaVersion, Host: l.alloc.Hostname, Command: l.argv, Started: run.Started.UTC(),
		WallSeconds: time.Since(run.Started).Seconds(), ExitCode: code, MonitorSecs: l.monitor.Seconds(), GPUTelemetry: run.GPUTelemetry,
		Plan: planJSON(l.alloc, l.req, l.plan, l.sharing), Warnings: append([]string{}, l.plan.Warnings...), Instances: []instanceReport{},
		Launch: launchReport{Node: g.Rank, Nodes: g.Size, WorldSize: g.Ranks(0).WorldSize, NodeFrom: g.Source,
			Hosts: append([]string{}, g.Hosts...), Rendezvous: l.rdv},
		RootCause: rootCauseOf(res.RootCause),
	}
	for i, o := range outs {
		ir := instanceReport{
			Instance: o.Index, Rank: insts[i].Rank, Host: l.alloc.Hostname, PID: o.PID, GPUs: append([]string{}, insts[i].GPUUUIDs...), CPUs: insts[i].CPUs,
			WallSeconds: o.Wall.Seconds(), ExitCode: o.Code, Signal: signalString(o), EndedBy: string(o.EndedBy),
			Restarts: o.Restarts, GPUUtilPeak: o.GPUUtilPeak, GPUMemPeak: o.GPUMemPeak, RSSPeak: o.PeakRSS,
			CPUSeconds: o.CPUSeconds, Warnings: append([]string{}, o.Warnings...),
			Series: o.Series, Events: o.Events, EventsDropped: o.EventsDropped,
		}
		if o.GPUUtilMean >= 0 && len(insts[i].GPUUUIDs) > 0 {
			m := o.GPUUtilMean
			ir.GPUUtilMean = &m
		}
		r.Instances = append(r.Instances, ir)
		r.Warnings = append(r.Warnings, o.Warnings...)
	}
	return r
}

func signalString(o launcher.Outcome) string {
	if o.Signal == 0 {
		return ""
	}
	return o.Status()
}

// reportPath expands the --report pattern (%N host, %n node index, as
// for -o). Over several nodes every node writes its own report: a path
// that names no node gets ".<host>" before its extension, so that the
// nodes do not overwrite each other's on a shared filesystem.
func reportPath(pattern string, names instance.Names, multiNode bool) (string, error) {
	return instance.NodePath("--report", pattern, names, multiNode)
}

// writeReport writes the file whole or not at all: a reader never sees
// half a report.
func writeReport(file string, r runReport) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := writeWhole(file, append(b, '\n')); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}
