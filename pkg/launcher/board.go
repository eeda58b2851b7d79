//go:build linux

package launcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
	"github.com/gpulaunch/gpulaunch/pkg/telemetry"
)

// Board is a running supervisor's live state: what `gpulaunch status` and
// `top` show, the output rings `logs` reads, and the way in for `signal`.
// The supervisor writes it; the control socket reads it from other
// goroutines, so everything goes through its lock or its channel.
type Board struct {
	mu    sync.Mutex
	run   RunInfo
	rows  []InstanceStatus
	rings []*process.Ring
	queue *taskqueue.QueueStatus

	signals chan signalRequest
	done    chan struct{}
	endOnce sync.Once
}

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
	Wall  time.Duration `json:"wall_ns"`
	first time.Time     // the first start, from which a running row's Wall counts
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

// NewBoard prepares the board for n instances, before the run starts, so
// that a client can already follow an instance that is not running yet.
func NewBoard(run RunInfo, insts []Instance) *Board {
	b := &Board{run: run, signals: make(chan signalRequest), done: make(chan struct{})}
	for _, inst := range insts {
		b.rows = append(b.rows, InstanceStatus{Index: inst.Index, Rank: inst.Rank, State: StateStarting, GPUs: inst.GPUs, CPUs: inst.CPUs, GPUUtil: -1, GPUUtilMean: -1,
			MPSClient: telemetry.MPSClient(inst.Env)})
		b.rings = append(b.rings, process.NewRing(process.RingSize))
	}
	return b
}

// Snapshot copies the table.
func (b *Board) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{Run: b.run, Taken: time.Now(), Instances: make([]InstanceStatus, len(b.rows))}
	if b.queue != nil {
		q := *b.queue
		s.Queue = &q
	}
	for i, r := range b.rows {
		if r.State != StateExited && r.State != StateRestarting && !r.first.IsZero() {
			r.Wall = s.Taken.Sub(r.first)
		}
		r.Warnings = append([]string{}, r.Warnings...)
		r.GPUSamples = append([]telemetry.GPUSample(nil), r.GPUSamples...)
		r.OutputBytes = b.rings[i].Total()
		s.Instances[i] = r
	}
	return s
}

// Len is the number of instances.
func (b *Board) Len() int { return len(b.rings) }

// Output is instance i's output ring.
func (b *Board) Output(i int) *process.Ring { return b.rings[i] }

// Done is closed when the run has ended.
func (b *Board) Done() <-chan struct{} { return b.done }

// SetSocket records where the control socket listens.
func (b *Board) SetSocket(path string) {
	b.mu.Lock()
	b.run.Socket = path
	b.mu.Unlock()
}

func (b *Board) setGPUTelemetry(why string) {
	b.mu.Lock()
	b.run.GPUTelemetry = why
	b.mu.Unlock()
}

func (b *Board) setQueue(q taskqueue.QueueStatus) {
	b.mu.Lock()
	b.queue = &q
	b.mu.Unlock()
}

func (b *Board) update(i int, f func(*InstanceStatus)) {
	b.mu.Lock()
	f(&b.rows[i])
	b.mu.Unlock()
}

func (b *Board) finish() {
	b.endOnce.Do(func() {
		b.mu.Lock()
		b.run.Finished = true
		b.mu.Unlock()
		for _, r := range b.rings {
			r.Close()
		}
		close(b.done)
	})
}

// AllInstances is the Signal target that means every instance.
const AllInstances = -1

// Signalled is one process group a signal was sent to.
type Signalled struct {
	Instance int `json:"instance"`
	PID      int `json:"pid"`
}

type signalRequest struct {
	instance int
	sig      syscall.Signal
	reply    chan signalReply
}

type signalReply struct {
	sent []Signalled
	err  error
}

// ErrRunEnded answers requests that arrive after the run has ended.
var ErrRunEnded = errors.New("the run has ended")

// Signal sends sig to instance i's process group (AllInstances: every
// running instance). The supervisor sends it, so it never reaches a pid
// that has already been process.Reaped and reused. Instance policies apply as to
// any other signal: an instance that dies of it is restarted if it has
// --restarts left.
func (b *Board) Signal(ctx context.Context, i int, sig syscall.Signal) ([]Signalled, error) {
	if i != AllInstances && (i < 0 || i >= len(b.rings)) {
		return nil, fmt.Errorf("no instance %d: this run has instances 0 to %d", i, len(b.rings)-1)
	}
	req := signalRequest{instance: i, sig: sig, reply: make(chan signalReply, 1)}
	select {
	case b.signals <- req:
	case <-b.done:
		return nil, ErrRunEnded
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rep := <-req.reply
	return rep.sent, rep.err
}
