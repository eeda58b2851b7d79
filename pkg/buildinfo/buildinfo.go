package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/nvml"
)

// Build is what `gpulaunch version` says of this binary: enough for a
// site's ticket ("which gpulaunch, built how?") to be answered from one
// paste.
type Build struct {
	Version  string // Version's answer: make's stamp, the module's version, the commit, or "dev"
	Commit   string // the full commit, "+dirty" with uncommitted changes; "" when unknown
	Date     string // make's stamp (the commit's date, so that a rebuild is the same file), else vcs.time
	Go       string // the toolchain that built it
	Platform string // GOOS/GOARCH
	NVML     bool   // go-nvml compiled in (cgo); without it NVIDIA GPUs come from sysfs
}

// Read gathers Build from the stamps and the build information (read:
// debug.ReadBuildInfo, injected for the tests).
func Read(stamp, stampCommit, stampDate string, read func() (*debug.BuildInfo, bool)) Build {
	b := Build{
		Version: Version(stamp, read), Commit: stampCommit, Date: stampDate,
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

// Text is what Write prints.
func (b Build) Text() string {
	var sb strings.Builder
	b.Write(&sb)
	return sb.String()
}

// Write prints b, one fact a line, the version first (`gpulaunch version
// | head -1` is what scripts have read since the first release).
func (b Build) Write(w io.Writer) {
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

// Version is what `gpulaunch version` says: the version -ldflags set
// (make build), else what the Go toolchain recorded in the binary — the
// module's version for `go install …@v1.2.3`, the commit (and "+dirty"
// for uncommitted changes) for a `go build` in a checkout — else "dev".
func Version(ldflags string, read func() (*debug.BuildInfo, bool)) string {
	if ldflags != "dev" && ldflags != "" {
		return ldflags
	}
	bi, ok := read()
	if !ok {
		return "dev"
	}
	v := vcsOf(bi)
	rev := v.rev
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && v.modified {
		rev += "+dirty"
	}
	mod := bi.Main.Version
	switch {
	case mod != "" && mod != "(devel)" && len(rev) >= 12 && strings.Contains(mod, rev[:12]):
		return mod // a pseudo-version (Go 1.24's go build) names the commit already
	case mod != "" && mod != "(devel)" && rev != "":
		return mod + " (" + rev + ")"
	case mod != "" && mod != "(devel)":
		return mod
	case rev != "":
		return rev
	}
	return "dev"
}
