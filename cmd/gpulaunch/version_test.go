package main

import (
	"bytes"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// readBuild: make's stamps win; without them the toolchain's build
// information gives the commit (dirty or not) and its date; without
// either, "unknown" — never a made-up value.
func TestReadBuild(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	info := func(mod string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: mod}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	for _, tc := range []struct {
		name                         string
		stamp, stampCommit, stampDay string
		read                         func() (*debug.BuildInfo, bool)
		version, commit, date        string
	}{
		{"make build: its stamps win", "v1.2.0", rev, "2026-11-24T17:00:00Z", info("(devel)", "vcs.revision", "ffff", "vcs.time", "2020-01-01T00:00:00Z"),
			"v1.2.0", rev, "2026-11-24T17:00:00Z"},
		{"go build in a checkout: the commit and its time", "dev", "", "", info("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-24T17:00:00Z", "vcs.modified", "false"),
			"0123456789ab", rev, "2026-11-24T17:00:00Z"},
		{"go build with changes: dirty", "dev", "", "", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"),
			"0123456789ab+dirty", rev + "+dirty", ""},
		{"go install …@v1.2.0: the module's version, no commit", "dev", "", "", info("v1.2.0"), "v1.2.0", "", ""},
		{"no build information", "dev", "", "", func() (*debug.BuildInfo, bool) { return nil, false }, "dev", "", ""},
	} {
		b := readBuild(tc.stamp, tc.stampCommit, tc.stampDay, tc.read)
		if b.Version != tc.version || b.Commit != tc.commit || b.Date != tc.date {
			t.Errorf("%s: %+v, want version %q commit %q date %q", tc.name, b, tc.version, tc.commit, tc.date)
		}
		if b.NVML != (nvml.Library != nil) {
			t.Errorf("%s: NVML %v, but nvml.Library is %v", tc.name, b.NVML, nvml.Library)
		}
	}
}

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
	build{Version: "dev", Go: "go1.26.8", Platform: "linux/arm64"}.write(&buf)
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
