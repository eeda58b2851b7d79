//go:build linux

package report

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// Run is `--report FILE`: the end-of-run summary as JSON, plus the
// plan and every warning. docs/report.md documents it and
// docs/report.schema.json is its schema; a test validates against that.
type Run struct {
	SchemaVersion int       `json:"schema_version"`
	Host          string    `json:"host"`
	Command       []string  `json:"command"`
	Started       time.Time `json:"started"`
	WallSeconds   float64   `json:"wall_seconds"`
	ExitCode      int       `json:"exit_code"`
	MonitorSecs   float64   `json:"monitor_interval_seconds"`
	// GPUTelemetry says why GPU use went unmeasured; absent when it was
	// measured or telemetry was off.
	GPUTelemetry string     `json:"gpu_telemetry,omitempty"`
	Plan         PlanDoc    `json:"plan"`
	Launch       Launch     `json:"launch"`
	Instances    []Instance `json:"instances"`
	// RootCause is the failure that ended a distributed group (--ddp);
	// absent when none did.
	RootCause *RootCause `json:"root_cause,omitempty"`
	Warnings  []string   `json:"warnings"`
}

// SchemaVersion is the version of Run this gpulaunch writes and reads
// (docs/report.schema.json's schema_version).
const SchemaVersion = 1

// RootCause is launcher.Failure in the report: the rank whose failure
// ended the group, and the exception it wrote in its error file.
type RootCause struct {
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
	// MPS is the GPU's MPS server's fault the instance caused (--mps);
	// absent for a --ddp group's failure.
	MPS *MPSCause `json:"mps,omitempty"`
}

// MPSCause is launcher.MPSFault in the report.
type MPSCause struct {
	GPU int `json:"gpu"`
	// ServerLog is the server's line that starts its list, PIDs the
	// clients it lists, in its order.
	ServerLog string `json:"server_log"`
	PIDs      []int  `json:"pids"`
	// NamedBy says how the cause was named: "list_order" (its client
	// listed first) or "first_exit" (the log lists every client, not
	// which faulted).
	NamedBy    string `json:"named_by"`
	FailedWith []int  `json:"failed_with"`
	Said       string `json:"said,omitempty"`
}

func rootCauseOf(f *launcher.Failure) *RootCause {
	if f == nil {
		return nil
	}
	r := &RootCause{Instance: f.Instance, Rank: f.Rank, Attempt: f.Attempt, ExitCode: f.Code, NoError: f.NoError}
	if f.Wrote { // kept; a file never written is not named
		r.ErrorFile = f.ErrorFile
	}
	if f.Signal != 0 {
		r.Signal = f.Status()
	}
	if m := f.MPS; m != nil {
		r.MPS = &MPSCause{GPU: m.GPU, ServerLog: m.Line, PIDs: m.PIDs, NamedBy: "first_exit", FailedWith: append([]int{}, m.With...), Said: m.Said}
		if m.Listed {
			r.MPS.NamedBy = "list_order"
		}
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

// Launch places this node's report among the other nodes' reports of a
// launch over several nodes: each node's gpulaunch writes its own.
type Launch struct {
	Node       int                   `json:"node"`
	Nodes      int                   `json:"nodes"`
	WorldSize  int                   `json:"world_size"`
	NodeFrom   string                `json:"node_from"`
	Hosts      []string              `json:"hosts"`
	Rendezvous *nodegroup.Rendezvous `json:"rendezvous"`
}

// Instance is one instance's line of the report.
type Instance struct {
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
	// GPUUtilMean and GPUUtilPeak are its own use of its GPUs
	// (launcher.Outcome's), GPUUtilSource where it comes from
	// ("processes", "gpu"); the mean is null and the source "" when no
	// GPU sample was taken.
	GPUUtilMean   *float64 `json:"gpu_util_mean_pct"`
	GPUUtilPeak   int      `json:"gpu_util_peak_pct"`
	GPUUtilSource string   `json:"gpu_util_source"`
	// MPSClient: the instance was an MPS client, whose use the driver
	// gives to the MPS server (why its GPU% is its GPU's).
	MPSClient bool `json:"mps_client,omitempty"`
	// MPSFault says what a fault of its GPU's MPS server was to the
	// instance: its cause, or failed with it; absent: none.
	MPSFault   string   `json:"mps_fault,omitempty"`
	GPUMemPeak uint64   `json:"gpu_mem_peak_bytes"`
	RSSPeak    uint64   `json:"rss_peak_bytes"`
	CPUSeconds float64  `json:"cpu_seconds"`
	Warnings   []string `json:"warnings"`
	// Series and Events are the instance's timeline (telemetry.Series),
	// for `gpulaunch report FILE --svg`.
	Series        *telemetry.Series `json:"series,omitempty"`
	Events        []telemetry.Event `json:"events,omitempty"`
	EventsDropped int               `json:"events_dropped,omitempty"`
}

// Facts are what a run's report is made of: the launch's values, and
// how the run went.
type Facts struct {
	Host    string   // this node's name
	Command []string // COMMAND [ARGS…]
	// Monitor is the telemetry interval; 0: none.
	Monitor time.Duration
	// Plan is the plan as `plan --json` writes it (PlanJSON); Warnings
	// the plan's own, which the report's warnings begin with.
	Plan     PlanDoc
	Warnings []string
	Launch   Launch // this node among the launch's nodes
	Run      launcher.RunInfo
	// Instances and Result are the run's instances and how they ended,
	// in the same order; ExitCode is gpulaunch's exit status.
	Instances []launcher.Instance
	Result    launcher.Result
	ExitCode  int
}

// Build is the report of a run.
func Build(f Facts) Run {
	r := Run{
		SchemaVersion: SchemaVersion, Host: f.Host, Command: f.Command, Started: f.Run.Started.UTC(),
		WallSeconds: time.Since(f.Run.Started).Seconds(), ExitCode: f.ExitCode, MonitorSecs: f.Monitor.Seconds(), GPUTelemetry: f.Run.GPUTelemetry,
		Plan: f.Plan, Warnings: append([]string{}, f.Warnings...), Instances: []Instance{},
		Launch: f.Launch, RootCause: rootCauseOf(f.Result.RootCause),
	}
	r.Launch.Hosts = append([]string{}, f.Launch.Hosts...)
	for i, o := range f.Result.Outcomes {
		in := f.Instances[i]
		ir := Instance{
			Instance: o.Index, Rank: in.Rank, Host: f.Host, PID: o.PID, GPUs: append([]string{}, in.GPUUUIDs...), CPUs: in.CPUs,
			WallSeconds: o.Wall.Seconds(), ExitCode: o.Code, Signal: signalString(o), EndedBy: string(o.EndedBy),
			Restarts: o.Restarts, GPUUtilPeak: o.GPUUtilPeak, MPSClient: telemetry.MPSClient(in.Env), MPSFault: o.MPSFault, GPUMemPeak: o.GPUMemPeak, RSSPeak: o.PeakRSS,
			CPUSeconds: o.CPUSeconds, Warnings: append([]string{}, o.Warnings...),
			Series: o.Series, Events: o.Events, EventsDropped: o.EventsDropped,
		}
		if o.GPUUtilMean >= 0 && len(in.GPUUUIDs) > 0 {
			m := o.GPUUtilMean
			ir.GPUUtilMean, ir.GPUUtilSource = &m, o.GPUUtilSource
		}
		r.Instances = append(r.Instances, ir)
		r.Warnings = append(r.Warnings, o.Warnings...)
	}
	return r
}

// signalString is an instance's signal in the report: "" when no signal
// ended it.
func signalString(o launcher.Outcome) string {
	if o.Signal == 0 {
		return ""
	}
	return o.Status()
}

// Marshal is the report's file: indented JSON, a newline at its end.
func Marshal(r Run) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteFile writes the report to file whole or not at all
// (outputs.WriteWhole): a reader never sees half a report.
func WriteFile(file string, r Run) error {
	b, err := Marshal(r)
	if err != nil {
		return err
	}
	if err := outputs.WriteWhole(file, b); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}
