package mps

import (
	"sync"
	"time"
)

// The waits on a server's log of a run's shared GPUs (launcher's
// fatewatch.go), and the record of their clients.

// Bounds of the waits on a server's log. The server writes its sticky
// list when the fault happens, before it tells any client, so a client's
// exit nearly always finds it written; the bound is for a log that is
// late on a loaded node (a real server may buffer its log), and is what
// an MPS client's own failure costs before it is handled (a restart,
// -K); not its recorded time, which is its reaping's, and nothing for a
// process that was never a client. A server that recovers destroys its
// context once its last client has exited (the H200: within 0.5 s of
// the fault).
const (
	FaultWait   = 2 * time.Second
	RecoverWait = 10 * time.Second
	logPoll     = 20 * time.Millisecond
)

// AwaitFault says which of logDir's server's faults a process that
// failed was failed by (FaultOf: C1–C3): pids and started as FaultOf's;
// client whether its daemon logged one of pids as a client. What the log
// says now settles it when it names a fault; a process that was never a
// client failed on its own, at once; a client's end reads the log until
// the fault is there, FaultWait at most. A close of done ends the wait:
// none.
func AwaitFault(done <-chan struct{}, logDir string, pids []int, started time.Time, client bool) (Blame, bool) {
	deadline := time.NewTimer(FaultWait)
	defer deadline.Stop()
	for {
		stickies, _ := ReadStickies(logDir)
		if b, ok := FaultOf(stickies, pids, started); ok || !client {
			return b, ok
		}
		select {
		case <-done:
			return Blame{}, false
		case <-deadline.C:
			return Blame{}, false
		case <-time.After(logPoll):
		}
	}
}

// AwaitRecovery waits until logDir's server has recovered from its
// fault n (its log's "Destroy server context" after it:
// Sticky.Recovered), RecoverWait at most: recovered false when the bound
// came first; ended when done was closed first.
func AwaitRecovery(done <-chan struct{}, logDir string, n int) (recovered, ended bool) {
	bound := time.NewTimer(RecoverWait)
	defer bound.Stop()
	for {
		if st, _ := ReadStickies(logDir); n < len(st) && st[n].Recovered {
			return true, false
		}
		select {
		case <-done:
			return false, true
		case <-bound.C:
			return false, false
		case <-time.After(logPoll):
		}
	}
}

// ClientPoll is how often each shared GPU's control.log is read for new
// clients: a client's pid says whose it is only while it lives, and a
// client lives at least from its connect to its first CUDA call's
// answer.
const ClientPoll = 10 * time.Millisecond

// Clients is a run's record of its MPS clients: each shared GPU's
// control daemon logs every process that connects as a client (served
// or refused), and a client may be any process of an instance's tree (a
// wrapper script's python, run without exec), which a launcher's
// periodic scans of its processes miss.
type Clients struct {
	mu   sync.Mutex
	logs []*ClientLog
	// pending are, per GPU, the clients logged whose instance is not
	// known yet (its process is being started); they are tried again
	// while they live.
	pending [][]int
}

// NewClients follows the daemons of fates.
func NewClients(fates []Fate) *Clients {
	c := &Clients{pending: make([][]int, len(fates))}
	for _, f := range fates {
		c.logs = append(c.logs, NewClientLog(f.LogDir))
	}
	return c
}

// CatchUp reads the clients each GPU's daemon logged since the last call
// and hands them, with those still pending, to own: g the GPU's place
// in fates, and own answers the clients to try again (OwnerOf's living
// ones that it could give to no instance).
func (c *Clients) CatchUp(own func(g int, pids []int) (pending []int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for g, l := range c.logs {
		c.pending[g] = append(c.pending[g], l.New()...)
		if len(c.pending[g]) > 0 {
			c.pending[g] = own(g, c.pending[g])
		}
	}
}

// Owners gives each of pids to the leader it belongs to (OwnerOf: O1–
// O4): owned[k] are leader k's; pending those alive that belong to none
// yet.
func Owners(pids, leaders []int, stat ProcStat) (owned map[int][]int, pending []int) {
	owned = map[int][]int{}
	for _, pid := range pids {
		k, alive := OwnerOf(pid, leaders, stat)
		switch {
		case k >= 0:
			owned[k] = append(owned[k], pid)
		case alive:
			pending = append(pending, pid)
		}
	}
	return owned, pending
}
