package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// Read: make's stamps win; without them the toolchain's build
// information gives the commit (dirty or not) and its date; without
// either, "unknown" — never a made-up value.
func TestRead(t *testing.T) {
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
		b := Read(tc.stamp, tc.stampCommit, tc.stampDay, tc.read)
		if b.Version != tc.version || b.Commit != tc.commit || b.Date != tc.date {
			t.Errorf("%s: %+v, want version %q commit %q date %q", tc.name, b, tc.version, tc.commit, tc.date)
		}
		if b.NVML != (nvml.Library != nil) {
			t.Errorf("%s: NVML %v, but nvml.Library is %v", tc.name, b.NVML, nvml.Library)
		}
	}
}

// Without -ldflags, the version is what the toolchain recorded.
func TestVersion(t *testing.T) {
	info := func(mod string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/gpulaunch/gpulaunch", Version: mod}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, ldflags string
		read          func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"make build: -ldflags wins", "4e63bc5", info("v1.2.3", "vcs.revision", rev), "4e63bc5"},
		{"go install …@v1.2.3: the module's version", "dev", info("v1.2.3"), "v1.2.3"},
		{"go build in a clean checkout: the commit", "dev", info("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "0123456789ab"},
		{"go build with changes: the commit, dirty", "dev", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "0123456789ab+dirty"},
		{"go build: a pseudo-version names the commit", "dev", info("v0.0.0-20261124170233-0123456789ab+dirty", "vcs.revision", rev, "vcs.modified", "true"),
			"v0.0.0-20261124170233-0123456789ab+dirty"},
		{"a tagged version and its commit", "dev", info("v1.2.3", "vcs.revision", rev), "v1.2.3 (0123456789ab)"},
		{"nothing recorded", "dev", info("(devel)"), "dev"},
		{"no build information", "dev", none, "dev"},
	} {
		if got := Version(tc.ldflags, tc.read); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
