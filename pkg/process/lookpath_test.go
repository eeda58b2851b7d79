//go:build linux

package process

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LookPath's rules L1-L4, on files made for the test.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin, plain, both := filepath.Join(dir, "bin"), filepath.Join(dir, "plain"), filepath.Join(dir, "both")
	for _, d := range []string{bin, plain, both} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(bin, "app"), 0o755)
	write(filepath.Join(plain, "app"), 0o644)
	write(filepath.Join(plain, "data"), 0o644)
	write(filepath.Join(both, "data"), 0o755)
	if err := os.Mkdir(filepath.Join(bin, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rule, name, path string
		want             string // the path found, or the error's text
		code             int    // 0: found
	}{
		{"L1: a name with a slash is that file", filepath.Join(bin, "app"), "", filepath.Join(bin, "app"), 0},
		{"L1: no PATH is searched for it", filepath.Join(dir, "app"), bin, "no such file", 127},
		{"L2: the first directory with an executable file", "app", plain + ":" + bin, filepath.Join(bin, "app"), 0},
		{"L3: a file that does not exist", filepath.Join(bin, "missing"), "", "no such file", 127},
		{"L3: a directory", filepath.Join(bin, "adir"), "", "is a directory", 126},
		{"L3: no execute bit", filepath.Join(plain, "app"), "", "is not executable (chmod +x?)", 126},
		{"L4: a file that cannot be executed, when none can", "app", plain, "is not executable", 126},
		{"L4: an executable one later wins", "data", plain + ":" + both, filepath.Join(both, "data"), 0},
		{"L4: none found", "missing", bin + ":" + plain, "missing: command not found in PATH: nothing was started", 127},
	} {
		got, err := LookPath(tc.name, tc.path)
		var nr NotRunnable
		switch {
		case tc.code == 0 && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.rule, got, err, tc.want)
		case tc.code != 0 && (!errors.As(err, &nr) || nr.Code != tc.code || !strings.Contains(nr.Msg, tc.want)):
			t.Errorf("%s: %v; want %d %q", tc.rule, err, tc.code, tc.want)
		}
	}
}

// CheckArgv's rules A1-A2.
func TestCheckArgv(t *testing.T) {
	for _, tc := range []struct {
		rule string
		argv []string
		want string
	}{
		{"no COMMAND is left to the caller", nil, ""},
		{"A1: a program", []string{"./app", ""}, ""},
		{"A1: an empty program", []string{""}, "empty word"},
		{"A2: a NUL byte in any word", []string{"./app", "a\x00b"}, "NUL byte"},
	} {
		err := CheckArgv(tc.argv)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
