// Package gpucheck holds the test of `make gpu-check` (scripts/gpu-check.sh)
// on a machine without an NVIDIA GPU; on one, the checks themselves are the
// test, run by hand (they take up to 4 minutes).
package gpucheck

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makesNote is make's own line about a recipe's status: "make: *** …",
// or "make[1]: *** …" when make runs inside another make (make test).
var makesNote = regexp.MustCompile(`^make(\[[0-9]+\])?: \*\*\* `)

// Without an NVIDIA GPU, `make gpu-check`, scripts/gpu-check.sh and its
// alias scripts/gpu-smoke.sh exit 2 with one line saying so (issue 36),
// and start nothing. make adds its own line about the status.
func TestGPUCheckWithoutAGPU(t *testing.T) {
	if m, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(m) > 0 {
		t.Skip("this machine has an NVIDIA GPU: make gpu-check runs the checks (up to 4 minutes) instead")
	}
	const want = "gpu-check: no NVIDIA GPU on this machine (no /dev/nvidia0…): run it on one (make gpu-check)"
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"make gpu-check", []string{"make", "--no-print-directory", "-C", "../..", "gpu-check"}},
		{"scripts/gpu-check.sh", []string{"../../scripts/gpu-check.sh"}},
		{"scripts/gpu-smoke.sh", []string{"../../scripts/gpu-smoke.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.argv[0]); err != nil && tc.argv[0] == "make" {
				t.Skip("make is not on PATH")
			}
			out, err := exec.Command(tc.argv[0], tc.argv[1:]...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("%v, want exit 2", err)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if !makesNote.MatchString(l) { // make's own note of the status
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || lines[0] != want {
				t.Errorf("output %q, want the one line %q", out, want)
			}
		})
	}
}
