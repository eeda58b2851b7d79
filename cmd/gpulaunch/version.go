package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// commit and buildDate are stamped by make build and make dist with
// -ldflags "-X main.commit=… -X main.buildDate=…", like version (main.go).
// Without them the toolchain's build information gives both: a `go build`
// in a checkout records the commit and its time (vcs.revision, vcs.time);
// `go install …@vX` records neither, only the module's version.
var (
	commit    = ""
	buildDate = ""
)

// build is what `gpulaunch version` says of this binary: enough for a
// site's ticket ("which gpulaunch, built how?") to be answered from one
// paste.
type build struct {
	Version  string // buildVersion's answer: make's stamp, the module's version, the commit, or "dev"
	Commit   string // the full commit, "+dirty" with uncommitted changes; "" when unknown
	Date     string // make's stamp (the commit's date, so that a rebuild is the same file), else vcs.time
	Go       string // the toolchain that built it
	Platform string // GOOS/GOARCH
	NVML     bool   // go-nvml compiled in (cgo); without it NVIDIA GPUs come from sysfs
}

// readBuild gathers build from the stamps and the build information (read:
// debug.ReadBuildInfo, injected for the tests).
func readBuild(stamp, stampCommit, stampDate string, read func() (*debug.BuildInfo, bool)) build {
	b := build{
		Version: buildVersion(stamp, read), Commit: stampCommit, Date: stampDate,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, NVML: nvml.Library != nil,
	}
	bi, ok := read()
	if !ok {
		return b
	}
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	v := vcsOf(bi)
	if b.Commit == "" && v.rev != "" {
		b.Commit = v.rev
		if v.modified {
			b.Commit += "+dirty"
		}
	}
	if b.Date == "" {
		b.Date = v.when
	}
	return b
}

// vcs is what the toolchain recorded of the checkout a binary was built
// in (go build's -buildvcs): nothing for `go install …@vX`.
type vcs struct {
	rev, when string // the commit, its time (RFC 3339)
	modified  bool   // uncommitted changes were built
}

func vcsOf(bi *debug.BuildInfo) vcs {
	var v vcs
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.rev = s.Value
		case "vcs.time":
			v.when = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// writeDoc writes text, a document gpulaunch generates (the man page, a
// completion script, the version), to w. A write that fails — a full disk,
// a home directory over its quota — is an error (exit 1), as GNU tools
// have it: `gpulaunch completion bash > FILE` must not leave a cut-off
// script behind a zero exit.
func writeDoc(w io.Writer, what, text string) error {
	if _, err := io.WriteString(w, text); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

// text is what write prints.
func (b build) text() string {
	var sb strings.Builder
	b.write(&sb)
	return sb.String()
}

// write prints b, one fact a line, the version first (`gpulaunch version
// | head -1` is what scripts have read since the first release).
func (b build) write(w io.Writer) {
	fmt.Fprintf(w, "gpulaunch %s\n", b.Version)
	fmt.Fprintf(w, "commit:   %s\n", orUnknown(b.Commit))
	fmt.Fprintf(w, "built:    %s\n", orUnknown(b.Date))
	fmt.Fprintf(w, "go:       %s %s\n", b.Go, b.Platform)
	if b.NVML {
		fmt.Fprintln(w, "nvml:     compiled in (cgo); libnvidia-ml.so.1 is loaded at run time, where there is one")
	} else {
		fmt.Fprintln(w, "nvml:     not compiled in (a CGO_ENABLED=0 build): NVIDIA GPUs are read from sysfs, with no NVML utilisation telemetry and no MIG")
	}
}

func orUnknown(s string) string {
	if strings.TrimSpace(s) == "" {
		return "unknown"
	}
	return s
}
