package main

import (
	"fmt"
	"io"
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
