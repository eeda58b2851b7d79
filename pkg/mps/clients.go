package mps

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// ControlLog is the name of the control daemon's log in its log
// directory (CUDA_MPS_LOG_DIRECTORY), beside server.log.
const ControlLog = "control.log"

// newClientLine is the control daemon's line for each process that
// connects as a client, served or refused: "[2026-11-27 01:38:32.611
// Control 455] NEW CLIENT 466 from user 0: Server already exists" (the
// H200's, driver 580; ../shared/research/gpu-h200.md).
var newClientLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\] NEW CLIENT (\d+) from user \d+`)
})

// ClientLog follows a control daemon's control.log: the pids of the
// processes that became its server's clients, as the daemon logs them.
// A fault's list (Sticky.PIDs) names clients by pid, and a client may be
// any process of an instance's tree (a wrapper script's child); the pid
// is worth something only while the process lives, when its ancestry
// says whose it is (OwnerOf). Not safe for concurrent use.
type ClientLog struct {
	path string
	off  int64
	// part is a line the daemon had not finished writing at the last
	// read.
	part []byte
}

// NewClientLog follows logDir's control.log from its beginning (a
// daemon of gpulaunch's own logs only this run's clients).
func NewClientLog(logDir string) *ClientLog {
	return &ClientLog{path: filepath.Join(logDir, ControlLog)}
}

// New returns the pids of the clients logged since the last call, in
// the log's order; none while the log is not there or has not grown.
func (c *ClientLog) New() []int {
	f, err := os.Open(c.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, c.off, 1<<40))
	if err != nil || len(data) == 0 {
		return nil
	}
	c.off += int64(len(data))
	data = append(c.part, data...)
	cut := bytes.LastIndexByte(data, '\n') + 1
	c.part = append([]byte(nil), data[cut:]...)
	return ParseNewClients(data[:cut])
}

// ParseNewClients reads the pids of control.log's NEW CLIENT lines.
func ParseNewClients(data []byte) []int {
	var pids []int
	for _, m := range newClientLine().FindAllSubmatch(data, -1) {
		if pid, err := strconv.Atoi(string(m[1])); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ProcStat is what a process's stat says of its place among processes:
// its parent and its process group; ok false when the process is gone.
type ProcStat func(pid int) (ppid, pgrp int, ok bool)

// OwnerOf says which of leaders' processes client pid belongs to (its
// index, -1 none) and whether pid still lives. Each leader is an
// instance's process, which leads a process group of its own. The
// rules, in order:
//
//	O1. A process that is gone belongs to none: its pid may be anyone's
//	    by now.
//	O2. The leader of pid's process group: every process an instance
//	    starts stays in its group unless it makes one of its own (a
//	    wrapper script's python, run without exec, among them).
//	O3. Else the first leader on its chain of parents: a process in a
//	    group of its own (setsid, a shell with job control) that is
//	    still a descendant of the instance.
//	O4. Else none: a process of no instance's (a client that outlived
//	    its instance and was reparented, or another program's).
func OwnerOf(pid int, leaders []int, stat ProcStat) (int, bool) {
	ppid, pgrp, ok := stat(pid)
	if !ok { // O1
		return -1, false
	}
	if k := leaderIndex(leaders, pgrp); k >= 0 { // O2
		return k, true
	}
	for seen := 0; ppid > 1 && seen < 64; seen++ { // O3 (a chain deeper than 64 is no instance's)
		if k := leaderIndex(leaders, ppid); k >= 0 {
			return k, true
		}
		if ppid, _, ok = stat(ppid); !ok {
			break
		}
	}
	return -1, true // O4
}

func leaderIndex(leaders []int, pid int) int {
	for k, l := range leaders {
		if l == pid && pid > 0 {
			return k
		}
	}
	return -1
}
