//go:build linux

package runstatus

import (
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// RunInfo says which run this is, for clients choosing among several.
type RunInfo struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	JobID   string    `json:"job_id,omitempty"`
	StepID  string    `json:"step_id,omitempty"`
	Command []string  `json:"command"`
	Started time.Time `json:"started"`
	Monitor string    `json:"monitor_interval"` // "0s": telemetry off
	// GPUTelemetry says why GPU use is not measured ("no GPU
	// telemetry: <why>"); "" while it is, or before the first sample.
	GPUTelemetry string `json:"gpu_telemetry,omitempty"`
	// Node and Nodes place this gpulaunch in a launch over several nodes
	// (Nodes 0 or 1: one node); WorldSize is the launch's instances.
	Node      int    `json:"node,omitempty"`
	Nodes     int    `json:"nodes,omitempty"`
	WorldSize int    `json:"world_size,omitempty"`
	Socket    string `json:"socket,omitempty"`
	// Sharing says which instances share which GPU, under MPS or taking
	// turns, a line per shared GPU; empty when none is shared.
	Sharing  []string `json:"gpu_sharing,omitempty"`
	Finished bool     `json:"finished"`
}

// Instance states.
const (
	StateStarting   = "starting"
	StateRunning    = "running"
	StateStopping   = "stopping"   // TERM sent by gpulaunch, waiting for it to exit
	StateRestarting = "restarting" // failed, waits out its backoff
	StateWaiting    = "waiting"    // a queue slot waits for a task from the queue's holder
	StateExited     = "exited"
)

// InstanceStatus is one row of the live table.
type InstanceStatus struct {
	Index    int       `json:"instance"`
	Rank     int       `json:"rank"`
	State    string    `json:"state"`
	PID      int       `json:"pid"` // the current or last process
	GPUs     string    `json:"gpus"`
	CPUs     string    `json:"cpus"`
	Restarts int       `json:"restarts"`
	Started  time.Time `json:"started"` // of the current or last process
	// Wall is the time since the instance's first start: to now while
	// it runs, to its last exit after (a restarted instance's whole time,
	// as in the summary and the report).
	Wall time.Duration `json:"wall_ns"`
	// First is the first start, from which a running row's Wall counts
	// (the board's; not shown).
	First time.Time `json:"-"`
	// Exit is the last exit status ("0", "3", "SIGKILL"), "" while the first runs.
	Exit    string    `json:"exit,omitempty"`
	EndedBy job.Ended `json:"ended_by,omitempty"`
	// Telemetry from the last sample; negative GPU utilisation: not
	// sampled. GPUUtil is the instance's own use of its GPUs, and
	// GPUUtilSource where it comes from (Outcome's); GPUUtilMean its mean
	// so far.
	CPUPercent    float64 `json:"cpu_pct"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	RSS           uint64  `json:"rss_bytes"`
	PeakRSS       uint64  `json:"peak_rss_bytes"`
	GPUUtil       int     `json:"gpu_util_pct"`
	GPUUtilSource string  `json:"gpu_util_source"`
	GPUMem        uint64  `json:"gpu_mem_bytes"`
	GPUUtilMean   float64 `json:"gpu_util_mean_pct"`
	// MPSClient: the instance is an MPS client (telemetry.MPSClient), whose
	// use the driver gives to the MPS server: its GPU% is its GPU's.
	MPSClient bool `json:"mps_client,omitempty"`
	// GPUSamples are the last sample of each of its GPUs; absent before
	// the first, and without GPU telemetry.
	GPUSamples []telemetry.GPUSample `json:"gpu_samples,omitempty"`
	Warnings   []string              `json:"warnings"`
	// MPSFault says what a fault of its GPU's MPS server was to the
	// instance: its cause, or failed with it (Outcome's); absent: none.
	MPSFault string `json:"mps_fault,omitempty"`
	// OutputBytes is how much output the instance has written so far.
	OutputBytes int64 `json:"output_bytes"`
	// Task and Command are the task a queue slot runs (Restarts then
	// counts its retries).
	Task    int    `json:"task,omitempty"`
	Command string `json:"command,omitempty"`
}

// Snapshot is the whole live table at one moment.
type Snapshot struct {
	Run       RunInfo          `json:"run"`
	Taken     time.Time        `json:"taken"`
	Instances []InstanceStatus `json:"instances"`
	// Queue is the task queue's counts; nil in a run of N instances.
	Queue *taskqueue.QueueStatus `json:"queue,omitempty"`
}
