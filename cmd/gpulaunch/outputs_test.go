package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/outputs"
)

// "-" where it is the console's stream: -e - keeps stderr on gpulaunch's
// stderr beside -o's file; --joblog - writes the joblog on stdout among
// the tasks' output, as GNU parallel's; report --svg - the picture.
func TestDashIsTheConsole(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.log")
	cmd := gpulaunch(t, "-q", "-n", "1", "-G", "0", "-o", out, "-e", "-", "--", "sh", "-c", "echo to-out; echo to-err >&2")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "to-out\n" || !strings.Contains(stderr.String(), "to-err") {
		t.Errorf("-o FILE -e -: file %q, stderr %q", b, stderr.String())
	}
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte("a\nb\n"), 0o644)
	cmd = gpulaunch(t, "-q", "--each-line", in, "-n", "1", "-G", "0", "--joblog", "-", "--", "echo")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(b), "Seq\tHost\tStarttime") || !regexp.MustCompile(`(?m)^2\t:\t.*\techo b$`).Match(b) {
		t.Errorf("--joblog -: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error("--joblog - wrote a file named -")
	}
}

// A clash is a usage error (exit 2): outputs.Clash's rules are
// TestClash's, in pkg/outputs.
func TestFileClashIsAUsageError(t *testing.T) {
	uses := []outputs.Use{{Flag: "--each-line", Path: "params.txt", Reads: "the tasks"}, {Flag: "-o", Path: "link", Writes: "output"}}
	err := asUsage(outputs.Clash(uses, func(string) (string, bool) { return "inode 1:10", true }))
	if err == nil || !errors.As(err, new(usageError)) {
		t.Errorf("%T %v, want a usage error (exit 2)", err, err)
	}
}
