//go:build linux

package launcher

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// The supervisor's part in a shared GPU's fate under MPS (fateMode's
// rules): what the GPU's server's log says of an exit, read before the
// exit is handed to the mode, and the wait for the server's recovery.

// Bounds of the waits on a server's log. The server writes its sticky
// list when the fault happens, before it tells any client, so a client's
// exit nearly always finds it written; the bound is for a log that is
// late on a loaded node (a real server may buffer its log), and is what
// an MPS client's own failure costs before it is handled (a restart,
// -K); not its recorded time, which is its reaping's, and nothing for a
// process that was never a client. A server that recovers destroys
// its context once its last client has exited (the H200: within 0.5 s
// of the fault).
const (
	faultWait   = 2 * time.Second
	recoverWait = 10 * time.Second
	logPoll     = 20 * time.Millisecond
)

// awaitFault says which fault of its GPU's MPS server slot i's process
// failed with (mps.FaultOf: C1–C3), on the slot's thread and without mu:
// nil for a slot of no shared GPU, a success, a process gpulaunch ended
// or one that ends as the run stops. It never depends on the order of
// the GPU's exits and the log's lines: what the log says now settles it
// when it names a fault; a process that was never a client of the
// server (its daemon logged none of its tree: followClients) failed on
// its own, at once; a client's exit reads the log until the fault is
// there, for faultWait at most, and a stop of the run ends the wait.
func (s *supervisor) awaitFault(i int, end process.Reaped) *job.ServerFault {
	if s.fateOf == nil || s.fateOf[i] < 0 || (end.Status.Exited() && end.Status.ExitStatus() == 0) {
		return nil
	}
	g := s.fateOf[i]
	s.catchUpClients() // a client logged since the last poll is the slot's too
	s.mu.Lock()
	sl := &s.slots[i]
	ours := sl.endedBy != job.EndedItself || s.stopping
	pids, started, client := slices.Clone(sl.clientPIDs), sl.started, sl.mpsClient
	s.mu.Unlock()
	if ours {
		return nil
	}
	deadline := time.NewTimer(faultWait)
	defer deadline.Stop()
	for {
		stickies, _ := mps.ReadStickies(s.spec.Fates[g].LogDir)
		if b, ok := mps.FaultOf(stickies, pids, started); ok {
			return s.faultFact(g, b)
		}
		if !client {
			return nil
		}
		select {
		case <-s.stopped:
			return nil
		case <-deadline.C:
			return nil
		case <-time.After(logPoll):
		}
	}
}

// faultFact is fault b of GPU g's server as an exit's fact: with the
// slot whose process its list names first (fateMode's F3).
func (s *supervisor) faultFact(g int, b mps.Blame) *job.ServerFault {
	f := &job.ServerFault{GPU: g, N: b.N, Line: b.Sticky.Line, PIDs: b.Sticky.PIDs, Listed: b.Listed, FirstSlot: -1}
	if len(b.Sticky.PIDs) == 0 {
		return f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.spec.Fates[g].Slots {
		if slices.Contains(s.slots[k].clientPIDs, b.Sticky.PIDs[0]) {
			f.FirstSlot = k
		}
	}
	return f
}

// awaitRecovery wakes the waiting slots once fault f's server has
// recovered (its log's "Destroy server context" after the fault:
// Sticky.Recovered), recoverWait at most, and after at least delay; the
// run's end ends the wait. It runs on a goroutine of its own, as a
// timer would.
func (s *supervisor) awaitRecovery(f job.ServerFault, delay time.Duration) {
	begun := time.Now()
	bound := time.NewTimer(recoverWait)
	defer bound.Stop()
	dir := s.spec.Fates[f.GPU].LogDir
wait:
	for {
		if st, _ := mps.ReadStickies(dir); f.N < len(st) && st[f.N].Recovered {
			break
		}
		select {
		case <-s.ctx.Done():
			return
		case <-bound.C:
			s.log.Warn(fmt.Sprintf("GPU %d's MPS server logged no recovery from its fault within %s: its instances start again anyway", s.spec.Fates[f.GPU].Index, recoverWait))
			break wait
		case <-time.After(logPoll):
		}
	}
	if left := delay - time.Since(begun); left > 0 {
		select {
		case <-time.After(left):
		case <-s.ctx.Done():
			return
		}
	}
	deliver(s.ctx, s.wakeC, struct{}{})
}

// clientPoll is how often each shared GPU's control.log is read for new
// clients: a client's pid says whose it is only while it lives, and a
// client lives at least from its connect to its first CUDA call's
// answer.
const clientPoll = 10 * time.Millisecond

// clientWatch is the run's record of its MPS clients: each shared GPU's
// control daemon logs every process that connects as a client (served
// or refused), and a client may be any process of an instance's tree (a
// wrapper script's python, run without exec), which the sampler's scans,
// once per --monitor-interval or never, miss. mu is taken before the
// supervisor's.
type clientWatch struct {
	mu   sync.Mutex
	logs []*mps.ClientLog
	// pending are, per GPU, the clients logged whose instance is not
	// known yet (its process is being started: startOn lets go of the
	// supervisor's mu while it forks); they are tried again while they
	// live.
	pending [][]int
}

func newClientWatch(fates []mps.Fate) *clientWatch {
	w := &clientWatch{pending: make([][]int, len(fates))}
	for _, f := range fates {
		w.logs = append(w.logs, mps.NewClientLog(f.LogDir))
	}
	return w
}

// followClients gives each GPU's new clients to their slots until ctx
// ends.
func (s *supervisor) followClients(ctx context.Context) {
	tick := time.NewTicker(clientPoll)
	defer tick.Stop()
	for {
		s.catchUpClients()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// catchUpClients reads the clients each GPU's daemon logged since the
// last call, and adds each to the pids of the slot whose process it
// descends from (mps.OwnerOf: O1–O4).
func (s *supervisor) catchUpClients() {
	w := s.clients
	w.mu.Lock()
	defer w.mu.Unlock()
	for g, f := range s.spec.Fates {
		w.pending[g] = append(w.pending[g], w.logs[g].New()...)
		if len(w.pending[g]) == 0 {
			continue
		}
		s.mu.Lock()
		leaders := make([]int, len(f.Slots))
		for k, i := range f.Slots {
			leaders[k] = s.slots[i].pid
		}
		kept := w.pending[g][:0]
		for _, pid := range w.pending[g] {
			k, alive := mps.OwnerOf(pid, leaders, mps.ReadProcStat)
			switch {
			case k >= 0:
				sl := &s.slots[f.Slots[k]]
				sl.seenPIDs(map[int]bool{pid: true})
				sl.mpsClient = true
			case alive:
				kept = append(kept, pid)
			}
		}
		w.pending[g] = kept
		s.mu.Unlock()
	}
}

// seenPIDs adds the pids of slot i's current process tree to those its
// process is known by (a fault's list names its clients by pid).
func (sl *slot) seenPIDs(tree map[int]bool) {
	for pid := range tree {
		if !slices.Contains(sl.clientPIDs, pid) {
			sl.clientPIDs = append(sl.clientPIDs, pid)
		}
	}
}

// lastLine is the last line of output r holds: a faulting client's CUDA
// error, as a rule; "" none.
func lastLine(r *process.Ring) string {
	if r == nil {
		return ""
	}
	data, _, _, _, _ := r.Since(-1)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	return strings.TrimSpace(string(lines[len(lines)-1]))
}
