package glibcfloor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make dist's check (scripts/glibc-floor.sh --check) reads the versions a
// binary needs from its version-needs section, not only from its imported
// symbols: a version a binary needs without importing any symbol at it —
// GLIBC_ABI_DT_RELR, which the link records for DT_RELR (-z
// pack-relative-relocs, a default of some toolchains), and which glibc 2.28
// does not define — stops the binary there ("version `GLIBC_ABI_DT_RELR'
// not found") as surely as a symbol at GLIBC_2.34 does.
func TestCheckRefusesVersionsNeededWithoutASymbol(t *testing.T) {
	for _, tool := range []string{"gcc", "readelf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the check's test builds a C program and the check reads it with readelf", tool)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	// a pointer in data: a relative relocation, which -z pack-relative-relocs packs into DT_RELR
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nconst char *p = \"x\";\nint main(void) { puts(p); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// linked as the floor links gpulaunch (pins.h, start_linux.c, the
	// floor's libraries), so that DT_RELR is all that is left to refuse
	link := func(name string, extra ...string) string {
		bin := filepath.Join(dir, name)
		args := append([]string{"-include", "pins.h", "-fPIE", "-pie", "-o", bin, src, "start_linux.c",
			"-Wl,--no-as-needed", "-l:libpthread.so.0", "-l:libdl.so.2", "-lresolv"}, extra...)
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Skipf("gcc %v: %v\n%s", args, err, out)
		}
		return bin
	}
	plain := link("plain")
	bin := link("relr", "-Wl,-z,pack-relative-relocs")
	if out, _ := exec.Command("readelf", "-V", "--wide", bin).Output(); !strings.Contains(string(out), "GLIBC_ABI_DT_RELR") {
		t.Skipf("this gcc/ld/glibc records no GLIBC_ABI_DT_RELR for -z pack-relative-relocs (binutils 2.38 and glibc 2.36 or newer do):\n%s", out)
	}
	script, err := filepath.Abs("../../scripts/glibc-floor.sh")
	if err != nil {
		t.Fatal(err)
	}
	check := func(bin string) (string, int) {
		out, err := exec.Command(script, "--check", bin).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := check(plain); code != 0 {
		t.Fatalf("glibc-floor.sh --check of the same program without DT_RELR: exit %d, want 0:\n%s", code, out)
	}
	if out, code := check(bin); code != 1 || !strings.Contains(out, "GLIBC_ABI_DT_RELR") {
		t.Errorf("glibc-floor.sh --check of a binary needing GLIBC_ABI_DT_RELR: exit %d, want 1 naming the version:\n%s", code, out)
	}
}
