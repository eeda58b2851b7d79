package mps

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fate is one GPU whose instances share a fate under MPS: they are all
// clients of the one server its daemon starts, and one client's fatal
// fault (an illegal address, a kernel that asserted) makes the server set
// a sticky error on every client, so that each fails at its next CUDA
// call, and refuse new clients until every client has exited (NVIDIA's
// MPS documentation; on an H200 all 4 instances of a GPU exited 1 within
// 0.45 s: ../shared/research/gpu-h200.md). Taking turns (--share-gpus)
// has no such tie: each instance has its own context.
type Fate struct {
	// GPU is the GPU's UUID, Index its number in the plan.
	GPU   string
	Index int
	// Slots are its instances (its daemon's clients), LogDir its
	// daemon's log directory, where the server writes server.log.
	Slots  []int
	LogDir string
}

// Blame is where a process's end stands among its server's faults.
type Blame struct {
	// N is the fault's place in the server's log (ReadStickies), from 0;
	// Sticky the fault.
	N      int
	Sticky Sticky
	// Listed is where the process's pid is in the fault's list; -1: it
	// is not there.
	Listed int
}

// FaultOf says which of a server's faults (its log's, oldest first) a
// process that failed was failed by, if any: pids are the pids of its
// process tree that gpulaunch saw (its own, and each client its daemon's
// control.log named while it lived: ClientLog, OwnerOf), started when it
// started. The rules, in
// order:
//
//	C1. The newest fault whose list names one of pids: the server lists
//	    every client it set the sticky error on, so the process was a
//	    client of the context when the fault came — the faulting one or
//	    a neighbour; the log does not say which.
//	C2. Else the newest fault logged after the process started (the
//	    server's clock, to the millisecond): a client of the process
//	    gpulaunch did not see (a child that ended before its daemon's
//	    log was read), or one the server refused while sticky
//	    ("Error 807: MPS server is not ready to accept new MPS client
//	    requests"), which the list does not name.
//	C3. Else none: the process failed on its own. A fault logged before
//	    it started is an earlier one, whose clients had all exited
//	    before it could start (a restart waits for that).
func FaultOf(stickies []Sticky, pids []int, started time.Time) (Blame, bool) {
	for n := len(stickies) - 1; n >= 0; n-- { // C1
		for k, pid := range stickies[n].PIDs {
			if slices.Contains(pids, pid) {
				return Blame{N: n, Sticky: stickies[n], Listed: k}, true
			}
		}
	}
	since := started.Truncate(time.Millisecond)
	for n := len(stickies) - 1; n >= 0; n-- { // C2
		if !stickies[n].At.Before(since) {
			return Blame{N: n, Sticky: stickies[n], Listed: -1}, true
		}
	}
	return Blame{}, false // C3
}

// FateLine is the summary's and the plan's line that says which
// instances share a fate under MPS; "" when no GPU has two clients.
func FateLine(s *Sharing) string {
	if s == nil || s.Mode != "mps" {
		return ""
	}
	var groups []string
	for _, g := range s.GPUs {
		ids := make([]string, len(g.Instances))
		for i, n := range g.Instances {
			ids[i] = strconv.Itoa(n)
		}
		groups = append(groups, strings.Join(ids, ",")+" (GPU "+strconv.Itoa(g.Index)+")")
	}
	if len(groups) == 0 {
		return ""
	}
	line := "under MPS one client's fault fails every client of its GPU's server: instances " + strings.Join(groups, "; ") +
		" share a fate (--share-gpus instead: each its own context, a fault fails only its instance)"
	if s.GPUs[0].Threads == 0 { // the job's own MPS (ClientThreads, T2): its logs are not gpulaunch's
		line += "; the job's own MPS: gpulaunch reads none of its servers' logs and names no fault's cause"
	}
	return line
}
