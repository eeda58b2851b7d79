package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// top on a terminal draws the run's last state, every exit in it, even
// when the run ends long before its next refresh: the socket closes with
// the run, so that state is asked for ahead.
func TestTopShowsTheExits(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	r := startLiveRun(t, nil, append([]string{"-n", "2", "-G", "0", "--monitor-interval", "0"}, helperArgs("await", gate, "top-test")...)...)
	r.waitRunning(t)
	ctl, term := openPty(t)
	defer ctl.Close()
	top := gpulaunch(t, "top", "--socket", r.socket(), "--interval", "1h")
	top.Env = append(top.Env, "NO_COLOR=1")
	top.Stdout, top.Stderr = term, term
	if err := top.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close()
	var out lockedBuffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&out, ctl); copied <- err }()
	waitFor(t, "top's first frame", func() bool { return strings.Contains(out.String(), "2 running") })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, r.stderr.String())
	}
	if err := top.Wait(); err != nil {
		t.Fatalf("top: %v\n%s", err, out.String())
	}
	if err := <-copied; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	screen := out.String()
	for i := range 2 {
		if !regexpMatch(fmt.Sprintf(`(?m)^%d +exited .* 0\x1b\[K\r?$`, i), screen) {
			t.Errorf("no exited row with its exit for instance %d:\n%q", i, screen)
		}
	}
	if !strings.Contains(screen, "has finished") {
		t.Errorf("top did not see the run finish:\n%q", screen)
	}
}
