package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestExit: app.exit finds gpulaunch's error kinds through wrapping
// (errors.As), so an error that gains context on its way up keeps its
// exit status; the line on stderr is the error's text.
func TestExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		line string
	}{
		{"nil is success", nil, exitOK, ""},
		{"an exitCode is the instances' status, with no line", exitCode(3), 3, ""},
		{"a wrapped exitCode is still the instances' status", fmt.Errorf("queue: %w", exitCode(4)), 4, ""},
		{"a usage error is exit 2", usagef("-n %d: bad", 0), exitUsage, "gpulaunch: error: -n 0: bad\n"},
		{"a wrapped usage error is still exit 2", fmt.Errorf("ctx: %w", usagef("bad")), exitUsage, "gpulaunch: error: ctx: bad\n"},
		{"a commandError is its own code", commandError{127, "x: command not found"}, 127, "gpulaunch: error: x: command not found\n"},
		{"a wrapped commandError is still its own code", fmt.Errorf("line 3: %w", commandError{126, "x: denied"}), 126, "gpulaunch: error: line 3: x: denied\n"},
		{"a usage error that wraps a commandError is bad input: exit 2", usageError{commandError{126, "x: denied"}}, exitUsage, "gpulaunch: error: x: denied\n"},
		{"any other error is exit 1", errors.New("disk full"), exitError, "gpulaunch: error: disk full\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			a := &app{stderr: &stderr}
			if code := a.exit(tc.err); code != tc.code || stderr.String() != tc.line {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, stderr.String(), tc.code, tc.line)
			}
		})
	}
}

// TestUsageErrorWraps: a usage error keeps its cause for errors.Is and
// errors.As, and its text is the cause's, byte for byte.
func TestUsageErrorWraps(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	for _, tc := range []struct {
		name string
		err  error
		text string
	}{
		{"usageError wraps its cause", usageError{cause}, "open /x: file does not exist"},
		{"usagef's %w wraps its cause", usagef("--joblog: %w: nothing was started", cause), "--joblog: open /x: file does not exist: nothing was started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err.Error() != tc.text {
				t.Errorf("text %q, want %q", tc.err.Error(), tc.text)
			}
			var pe *fs.PathError
			if !errors.Is(tc.err, fs.ErrNotExist) || !errors.As(tc.err, &pe) || pe != cause {
				t.Errorf("%v: the cause is lost", tc.err)
			}
		})
	}
}
