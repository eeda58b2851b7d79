package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/buildinfo"
)

// `gpulaunch version` and `--version`: the version first (what scripts
// read with head -1), then commit, date, toolchain and NVML, one a line;
// unknown facts say so.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := runCLI(t, nil, args...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != 0 || stderr != "" || len(lines) != 5 || !strings.HasPrefix(lines[0], "gpulaunch ") {
			t.Fatalf("%v: exit %d, stderr %q:\n%s", args, code, stderr, out)
		}
		for i, prefix := range []string{"commit:   ", "built:    ", "go:       go1.", "nvml:     "} {
			if !strings.HasPrefix(lines[i+1], prefix) {
				t.Errorf("%v: line %d is %q, want %q…", args, i+2, lines[i+1], prefix)
			}
		}
	}
	var buf bytes.Buffer
	buildinfo.Build{Version: "dev", Go: "go1.26.8", Platform: "linux/arm64"}.Write(&buf)
	for _, want := range []string{"commit:   unknown\n", "built:    unknown\n", "go:       go1.26.8 linux/arm64\n", "not compiled in (a CGO_ENABLED=0 build)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %q in:\n%s", want, buf.String())
		}
	}
}

// A document that cannot be written — stdout on a full disk — is an
// error, exit 1, as GNU tools have it: never a cut-off script behind exit 0.
func TestDocsToAFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"version"}, {"man"}, {"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}} {
		cmd := gpulaunch(t, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		code := exitStatus(cmd.Run())
		if code != exitError || !strings.HasPrefix(stderr.String(), "gpulaunch: error: writing ") || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("%v > /dev/full: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
