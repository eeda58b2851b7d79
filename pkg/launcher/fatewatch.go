//go:build linux

package launcher

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/mps"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// The supervisor's part in a shared GPU's fate under MPS (fateMode's
// rules): what the GPU's server's log says of an exit, read before the
// exit is handed to the mode, and the wait for the server's recovery.

// awaitFault says which fault of its GPU's MPS server slot i's process
// failed with (mps.AwaitFault), on the slot's thread and without mu: nil
// for a slot of no shared GPU, a success, a process gpulaunch ended or
// one that ends as the run stops.
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
	if b, ok := mps.AwaitFault(s.stopped, s.spec.Fates[g].LogDir, pids, started, client); ok {
		return s.faultFact(g, b)
	}
	return nil
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
// recovered (mps.AwaitRecovery), and after at least delay; the run's end
// ends the wait. It runs on a goroutine of its own, as a timer would.
func (s *supervisor) awaitRecovery(f job.ServerFault, delay time.Duration) {
	begun := time.Now()
	recovered, ended := mps.AwaitRecovery(s.ctx.Done(), s.spec.Fates[f.GPU].LogDir, f.N)
	switch {
	case ended:
		return
	case !recovered:
		s.log.Warn(fmt.Sprintf("GPU %d's MPS server logged no recovery from its fault within %s: its instances start again anyway", s.spec.Fates[f.GPU].Index, mps.RecoverWait))
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

// followClients gives each shared GPU's new MPS clients to their slots
// (mps.Clients) until ctx ends.
func (s *supervisor) followClients(ctx context.Context) {
	tick := time.NewTicker(mps.ClientPoll)
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

// catchUpClients adds each client its GPU's daemon logged since the last
// call to the pids of the slot whose process it descends from
// (mps.OwnerOf: O1–O4).
func (s *supervisor) catchUpClients() {
	s.clients.CatchUp(func(g int, pids []int) []int {
		f := s.spec.Fates[g]
		s.mu.Lock()
		defer s.mu.Unlock()
		leaders := make([]int, len(f.Slots))
		for k, i := range f.Slots {
			leaders[k] = s.slots[i].pid
		}
		owned, pending := mps.Owners(pids, leaders, mps.ReadProcStat)
		for k, pids := range owned {
			sl := &s.slots[f.Slots[k]]
			for _, pid := range pids {
				sl.seenPIDs(map[int]bool{pid: true})
			}
			sl.mpsClient = true
		}
		return pending
	})
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
