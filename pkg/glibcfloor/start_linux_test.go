//go:build glibcfloor && cgo && (amd64 || arm64)

package glibcfloor

import (
	"debug/elf"
	"os"
	"runtime"
	"slices"
	"testing"
)

// This test binary links the package, so it starts as gpulaunch does: its
// crt1 calls start_linux.c, which calls glibc's first __libc_start_main.
// On this machine's glibc (2.34 or later) that exercises the init function
// older glibc calls; the floor's own glibc is not here to run it.

// Rule 5 of pins.h: the program's constructors run once — not zero times
// (an old glibc given no init function), not twice (a new one running them
// besides the init function).
func TestRule5ConstructorsRunOnce(t *testing.T) {
	if got := ConstructorRuns(); got != 1 {
		t.Errorf("the program's constructors ran %d times, want 1", got)
	}
}

// Rule 5 of pins.h: crt1's call is bound to the first __libc_start_main,
// never to GLIBC_2.34's.
func TestRule5StartsThroughTheFirstVersion(t *testing.T) {
	first := map[string]string{"amd64": "GLIBC_2.2.5", "arm64": "GLIBC_2.17"}[runtime.GOARCH]
	versions := importedVersions(t, "__libc_start_main")
	if !slices.Equal(versions, []string{first}) {
		t.Errorf("__libc_start_main is imported at %v, want only %s", versions, first)
	}
}

// Rules 3 and 4 of pins.h: the libraries where the floor's glibc has the
// pinned symbols are loaded, although this glibc has them in libc.so.6.
func TestRules3And4FloorLibrariesAreNeeded(t *testing.T) {
	f := openSelf(t)
	needed, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range []string{"libpthread.so.0", "libdl.so.2", "libresolv.so.2"} {
		if !slices.Contains(needed, lib) {
			t.Errorf("DT_NEEDED has no %s: %v", lib, needed)
		}
	}
}

func openSelf(t *testing.T) *elf.File {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// importedVersions: the versions at which the test binary imports name.
func importedVersions(t *testing.T, name string) []string {
	t.Helper()
	syms, err := openSelf(t).ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, s := range syms {
		if s.Name == name {
			versions = append(versions, s.Version)
		}
	}
	return versions
}
