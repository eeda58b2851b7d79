//go:build linux

package launcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/process"
	"github.com/gpulaunch/gpulaunch/pkg/runstatus"
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

// The board's rows and states, as pkg/runstatus defines them for the
// readers of a run's live state.
type (
	RunInfo        = runstatus.RunInfo
	InstanceStatus = runstatus.InstanceStatus
	Snapshot       = runstatus.Snapshot
)

// Instance states.
const (
	StateStarting   = runstatus.StateStarting
	StateRunning    = runstatus.StateRunning
	StateStopping   = runstatus.StateStopping
	StateRestarting = runstatus.StateRestarting
	StateWaiting    = runstatus.StateWaiting
	StateExited     = runstatus.StateExited
)

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
		if r.State != StateExited && r.State != StateRestarting && !r.First.IsZero() {
			r.Wall = s.Taken.Sub(r.First)
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
