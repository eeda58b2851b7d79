package mps

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOwnerOf is OwnerOf's rules, one row each, on a table of processes:
// instances 100 and 200 (each its group's leader); 101 a wrapper's child
// in 100's group; 102 a child of 101 in a group of its own (setsid); 300
// of no instance; 400 a child reparented to a subreaper (pid 50).
func TestOwnerOf(t *testing.T) {
	procs := map[int][3]int{ // pid: ppid, pgrp
		100: {50, 100}, 200: {50, 200}, 101: {100, 100}, 102: {101, 102}, 300: {1, 300}, 400: {50, 100},
	}
	stat := func(pid int) (int, int, bool) {
		p, ok := procs[pid]
		return p[0], p[1], ok
	}
	leaders := []int{100, 200}
	for _, c := range []struct {
		rule       string
		pid, owner int
		alive      bool
	}{
		{"O1 a process gone belongs to none", 999, -1, false},
		{"O2 an instance's own process", 200, 1, true},
		{"O2 a wrapper's child in its instance's group", 101, 0, true},
		{"O2 a child reparented still in its instance's group", 400, 0, true},
		{"O3 a descendant in a group of its own", 102, 0, true},
		{"O4 a process of no instance", 300, -1, true},
	} {
		owner, alive := OwnerOf(c.pid, leaders, stat)
		if owner != c.owner || alive != c.alive {
			t.Errorf("%s: OwnerOf(%d) = %d, %v; want %d, %v", c.rule, c.pid, owner, alive, c.owner, c.alive)
		}
	}
	if owner, _ := OwnerOf(101, []int{0, 0}, stat); owner != -1 {
		t.Errorf("a slot with no process (pid 0) owns %d's client", owner)
	}
}

// ClientLog reads each NEW CLIENT line once, the served and the refused,
// and a line the daemon is still writing only once it is whole.
func TestClientLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ControlLog)
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	c := NewClientLog(dir)
	if got := c.New(); got != nil {
		t.Fatalf("no log yet: %v", got)
	}
	write("[2026-11-27 01:38:20.101 Control   455] Starting control daemon using socket /tmp/nvidia-mps/control\n" +
		"[2026-11-27 01:38:24.611 Control   455] NEW CLIENT 466 from user 0: Server is not ready, push client to pending list\n" +
		"[2026-11-27 01:38:24.612 Control   455] Starting new server 490 for user 0\n" +
		"[2026-11-27 01:38:25.003 Control   455] NEW CLIENT 467 from user 0: Server already exists\n[2026-11-27 01:38:25.0")
	if got := c.New(); !slices.Equal(got, []int{466, 467}) {
		t.Errorf("first read: %v, want [466 467]", got)
	}
	write("04 Control   455] NEW CLIENT 468 from user 0: Server already exists\n")
	if got := c.New(); !slices.Equal(got, []int{468}) {
		t.Errorf("the line finished: %v, want [468]", got)
	}
	if got := c.New(); got != nil {
		t.Errorf("nothing new: %v", got)
	}
}
