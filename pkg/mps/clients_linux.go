package mps

import (
	"bytes"
	"os"
	"strconv"
)

// ReadProcStat is ProcStat from /proc/<pid>/stat. A zombie still
// counts: its pid is not free until its parent has reaped it, and its
// parent and group still say whose it was.
func ReadProcStat(pid int) (ppid, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// comm may hold spaces and parentheses: the fields start after the
	// last ')': state, ppid, pgrp, …
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgrp, err1 == nil && err2 == nil
}
