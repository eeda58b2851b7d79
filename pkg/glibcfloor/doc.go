// Package glibcfloor holds the start path of the glibc floor: the cgo
// binaries of `make build` and `make dist` require nothing newer than
// GLIBC_2.28 (RHEL/Rocky 8; SLES 15 and HPE Cray OS have 2.31), although
// they are built against Debian 12's glibc 2.36.
//
// The floor has two halves. pins.h, forced into every C unit with
// CGO_CFLAGS "-include" by the Makefile (runtime/cgo's, net's and
// go-nvml's too), binds each glibc symbol whose default version is newer
// than the floor to its old version; its numbered rules say why each pin
// is there. This package covers what no header reaches: crt1's call of
// __libc_start_main (start_linux.c), and the libraries the old versions
// live in on the floor (the LDFLAGS in start_linux.go).
//
// The package is built only with the build tag glibcfloor, which the
// Makefile sets beside the header, and only where both apply: cgo for
// glibc on linux/amd64 or linux/arm64 (the Makefile asks `go env CC`
// -dumpmachine for *-linux-gnu). Elsewhere — musl, darwin, another
// architecture, CGO_ENABLED=0, or GLIBC_FLOOR=off — it is empty and the
// binary needs the glibc it was built against. cmd/gpulaunch imports it
// (glibcfloor_linux.go); make dist fails unless the floor holds
// (scripts/glibc-floor.sh), and test/integration's TestGlibcFloor checks
// the built binaries of both architectures.
package glibcfloor
