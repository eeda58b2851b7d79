// Package buildinfo is what `gpulaunch version` (and the man page's
// date) says of a binary, by rules: make's -ldflags stamps win; without
// them, what the Go toolchain recorded in the binary (the module's
// version for `go install …@vX`, the commit, dirty or not, and its time
// for a `go build` in a checkout); without either, "dev" or "unknown" —
// never a made-up value. The CLI keeps the stamps (main.version,
// main.commit, main.buildDate) and prints.
package buildinfo
