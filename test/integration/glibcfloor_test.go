//go:build integration

package integration

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The glibc floor (pkg/glibcfloor/pins.h): make build's cgo binaries for
// amd64 and for arm64 (cross-built with Debian's aarch64-linux-gnu-gcc, as
// make dist builds them) need nothing newer than GLIBC_2.28 — read with
// Go's debug/elf, not with the readelf the build's check uses — load the
// libraries where glibc 2.28 has the pinned symbols, pass make dist's
// check, and run here (glibc 2.36), arm64 under qemu. The check itself
// refuses a binary built without the floor, and make dist refuses to run
// without it.
func TestGlibcFloor(t *testing.T) {
	for _, tool := range []string{"aarch64-linux-gnu-gcc", "qemu-aarch64-static", "readelf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: scripts/slurm-testbed.sh installs gcc-aarch64-linux-gnu, qemu-user-static and binutils", tool)
		}
	}
	repo, _ := filepath.Abs("../..")
	dir := t.TempDir()
	for _, tc := range []struct {
		arch string
		env  []string // make build's, for this architecture
		qemu []string // how this machine runs it
	}{
		{"amd64", nil, nil},
		{"arm64", []string{"CGO_ENABLED=1", "GOARCH=arm64", "CC=aarch64-linux-gnu-gcc"},
			[]string{"qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			bin := filepath.Join(dir, "gpulaunch-"+tc.arch)
			runIn(t, repo, tc.env, "make", "--no-print-directory", "build", "BIN="+bin)
			if floor := glibcFloor(t, bin); floor == "" || newerThanFloor(floor) {
				t.Errorf("the binary needs glibc %q, want 2.28 or older; symbols above 2.28: %v", floor, symbolsAboveFloor(t, bin))
			}
			if above := versionsNeededAboveFloor(t, bin); len(above) > 0 {
				t.Errorf("the binary needs versions glibc 2.28 does not define: %v", above)
			}
			needed := neededLibraries(t, bin)
			for _, lib := range []string{"libpthread.so.0", "libdl.so.2", "libresolv.so.2", "libc.so.6"} {
				if !slices.Contains(needed, lib) {
					t.Errorf("DT_NEEDED has no %s: %v", lib, needed)
				}
			}
			runIn(t, repo, nil, "scripts/glibc-floor.sh", "--check", bin)
			run := func(args ...string) string {
				return runIn(t, dir, nil, append(append(append([]string{}, tc.qemu...), bin), args...)...)
			}
			if v := run("version"); !strings.Contains(v, "linux/"+tc.arch) || !strings.Contains(v, "nvml:     compiled in") {
				t.Errorf("version:\n%s", v)
			}
			if out := run("info"); !strings.Contains(out, "CPUs") {
				t.Errorf("info:\n%s", out)
			}
			if out := run("plan", "--simulate", "dgx-h100", "-n", "8"); strings.Count(out, "GPU-") < 8 {
				t.Errorf("plan --simulate dgx-h100 -n 8:\n%s", out)
			}
		})
	}
	// make test runs pkg/glibcfloor's tests of the start path on amd64;
	// here they run on arm64 too, under qemu.
	t.Run("arm64 start path", func(t *testing.T) {
		test := filepath.Join(dir, "glibcfloor-arm64.test")
		runIn(t, repo, []string{"GOFLAGS=-tags=glibcfloor", "CGO_ENABLED=1", "GOARCH=arm64", "CC=aarch64-linux-gnu-gcc"},
			"go", "test", "-c", "-o", test, "./pkg/glibcfloor")
		out := runIn(t, dir, nil, "qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu", test, "-test.v")
		if !strings.Contains(out, "--- PASS: TestRule5ConstructorsRunOnce") || strings.Contains(out, "--- FAIL") {
			t.Errorf("pkg/glibcfloor's tests on arm64:\n%s", out)
		}
	})
	t.Run("the check refuses a binary without the floor", func(t *testing.T) {
		bin := filepath.Join(dir, "gpulaunch-off")
		runIn(t, repo, nil, "make", "--no-print-directory", "build", "GLIBC_FLOOR=off", "BIN="+bin)
		if floor := glibcFloor(t, bin); !newerThanFloor(floor) {
			t.Fatalf("without the floor the binary needs glibc %s: this machine's glibc is not newer than 2.28, so the check cannot be seen to refuse", floor)
		}
		out, code := runCode(repo, "scripts/glibc-floor.sh", "--check", bin)
		if code != 1 || !strings.Contains(out, "pthread_create@GLIBC_2.34") || !strings.Contains(out, "no DT_NEEDED libdl.so.2") {
			t.Errorf("glibc-floor.sh --check of a binary without the floor: exit %d, want 1 naming pthread_create@GLIBC_2.34 and libdl.so.2:\n%s", code, out)
		}
	})
	t.Run("make dist refuses to run without the floor", func(t *testing.T) {
		dist := filepath.Join(dir, "dist")
		out, code := runCode(repo, "make", "--no-print-directory", "dist", "GLIBC_FLOOR=off", "DIST_DIR="+dist)
		if code == 0 || !strings.Contains(out, "make dist: error: the glibc floor is off") {
			t.Errorf("make dist GLIBC_FLOOR=off: exit %d, want an error naming the floor:\n%s", code, out)
		}
		if _, err := os.Stat(dist); !os.IsNotExist(err) {
			t.Errorf("make dist GLIBC_FLOOR=off made %s", dist)
		}
	})
}

// newerThanFloor: whether glibc version v ("2.34") is newer than 2.28.
func newerThanFloor(v string) bool {
	var parts []int
	for _, p := range strings.Split(v, ".") {
		n, _ := strconv.Atoi(p)
		parts = append(parts, n)
	}
	return lessVersion([]int{2, 28}, parts)
}

// symbolsAboveFloor: bin's imported NAME@GLIBC_x.y newer than 2.28.
func symbolsAboveFloor(t *testing.T, bin string) []string {
	f := openELF(t, bin)
	syms, _ := f.ImportedSymbols()
	var above []string
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && newerThanFloor(v) {
			above = append(above, s.Name+"@"+s.Version)
		}
	}
	return above
}

// versionsNeededAboveFloor: the glibc versions bin's version-needs section
// names that glibc 2.28 does not define — newer than 2.28, or not a release
// at all (GLIBC_ABI_DT_RELR, recorded for DT_RELR with no symbol at it, so
// that symbolsAboveFloor cannot see it).
func versionsNeededAboveFloor(t *testing.T, bin string) []string {
	needs, err := openELF(t, bin).DynamicVersionNeeds()
	if err != nil {
		return nil // a static binary has none
	}
	var above []string
	for _, need := range needs {
		for _, dep := range need.Needs {
			v, ok := strings.CutPrefix(dep.Dep, "GLIBC_")
			if !ok {
				continue
			}
			if _, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); err != nil || newerThanFloor(v) {
				above = append(above, need.Name+": "+dep.Dep)
			}
		}
	}
	return above
}

func neededLibraries(t *testing.T, bin string) []string {
	libs, err := openELF(t, bin).ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	return libs
}

// runCode runs a command that may fail: its output and exit status.
func runCode(dir string, args ...string) (string, int) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		return out.String() + err.Error(), -1
	}
	return out.String(), 0
}

func openELF(t *testing.T, bin string) *elf.File {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
