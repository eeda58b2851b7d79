package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/summary"
)

// openPty opens a pseudo-terminal: its controller and its terminal end.
func openPty(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ctl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ctl, term
}

// stderrOn runs cmd with its stderr on a terminal (a pty) or a pipe, and
// returns what it wrote there and its exit status.
func stderrOn(t *testing.T, cmd *exec.Cmd, terminal bool) (string, int) {
	t.Helper()
	if !terminal {
		var b bytes.Buffer
		cmd.Stderr = &b
		code := exitOf(t, cmd.Run(), &b)
		return b.String(), code
	}
	ctl, term := openPty(t)
	defer ctl.Close()
	cmd.Stderr = term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close()
	var b bytes.Buffer
	// read until every writer has closed the terminal: EIO
	if _, err := io.Copy(&b, ctl); err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	return b.String(), exitOf(t, cmd.Wait(), &b)
}

func exitOf(t *testing.T, err error, out *bytes.Buffer) int {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v\n%s", err, out)
	}
	if ee != nil {
		return ee.ExitCode()
	}
	return 0
}

// The summary's failed exit is red on a terminal, and no escape code
// reaches a pipe or a terminal when NO_COLOR is set.
func TestSummaryColour(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		noColor  string
		colour   bool
	}{
		{"terminal", true, "", true},
		{"terminal with NO_COLOR", true, "1", false},
		{"pipe", false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := gpulaunch(t, append([]string{"-n", "2", "-G", "0", "--monitor-interval", "0"}, helperArgs("exitn", "0", "3")...)...)
			cmd.Env = append(cmd.Env, "NO_COLOR="+tc.noColor, "TERM=xterm")
			out, code := stderrOn(t, cmd, tc.terminal)
			if code != 3 || !strings.Contains(out, "INSTANCE") {
				t.Fatalf("exit %d, want 3 and a summary:\n%s", code, out)
			}
			red := strings.Contains(out, "\x1b[31m3\x1b[0m")
			if red != tc.colour || (!tc.colour && strings.Contains(out, "\x1b[")) {
				t.Errorf("failed exit in red: %v, want %v:\n%q", red, tc.colour, out)
			}
			// the table still lines up: the header's EXIT over each row's
			lines := strings.Split(summary.StripSGR(strings.ReplaceAll(out, "\r", "")), "\n")
			for i, l := range lines {
				if strings.HasPrefix(l, "INSTANCE") {
					col := strings.Index(l, "EXIT")
					for _, row := range lines[i+1 : i+3] {
						if len(row) <= col || (row[col] != '0' && row[col] != '3') {
							t.Errorf("EXIT at column %d, row %q", col, row)
						}
					}
				}
			}
		})
	}
}

// A queue's summary on a terminal: the slot's failed tasks in red.
func TestQueueSummaryColour(t *testing.T) {
	input := filepath.Join(t.TempDir(), "codes")
	if err := os.WriteFile(input, []byte("0\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, terminal := range []bool{true, false} {
		cmd := gpulaunch(t, "-n", "1", "-G", "0", "--monitor-interval", "0", "--each-line", input, "--", "sh", "-c", "exit {}")
		cmd.Env = append(cmd.Env, "NO_COLOR=", "TERM=xterm")
		out, code := stderrOn(t, cmd, terminal)
		if code != 1 || !strings.Contains(out, "FAILED") {
			t.Fatalf("exit %d, want 1 and a summary:\n%s", code, out)
		}
		if red := strings.Contains(out, "\x1b[31m1\x1b[0m"); red != terminal || (!terminal && strings.Contains(out, "\x1b[")) {
			t.Errorf("terminal %v: one failed task in red: %v:\n%q", terminal, red, out)
		}
	}
}

// -q: no informational line and no summary; the warnings still print, and
// the exit status is the run's.
func TestQuietRun(t *testing.T) {
	cmd := gpulaunch(t, append([]string{"-q", "-n", "2", "--simulate", "dgx-h100", "--monitor-interval", "0"}, helperArgs("exitn", "0", "3")...)...)
	out, code := stderrOn(t, cmd, false)
	if code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "WARN") {
			t.Errorf("-q printed %q", l)
		}
	}
	if !strings.Contains(out, "binding are not applied") {
		t.Errorf("-q dropped the warning:\n%s", out)
	}
	// a queue: its summary's table and counts go too
	input := filepath.Join(t.TempDir(), "codes")
	if err := os.WriteFile(input, []byte("0\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := gpulaunch(t, "-q", "-n", "1", "-G", "0", "--monitor-interval", "0", "--each-line", input, "--", "sh", "-c", "exit {}")
	out, code = stderrOn(t, queue, false)
	if code != 1 || !strings.Contains(out, "task 2 failed") {
		t.Errorf("-q queue: exit %d (want 1), printed %q (want the failed task's warning)", code, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "WARN") {
			t.Errorf("-q queue printed %q", l)
		}
	}
	if _, stderr, code := runCLI(t, nil, "-q", "-v", "-n", "1", "--", "true"); code != 2 || !strings.Contains(stderr, "-q/--quiet and -v/--verbose") {
		t.Errorf("-q -v: exit %d, %q", code, stderr)
	}
}
