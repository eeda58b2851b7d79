package main

import (
	"strings"
	"testing"
)

// fileClash's rules, each by name, with the file system injected: the
// identity of a path is what the table says.
func TestFileClash(t *testing.T) {
	ids := map[string]string{"params.txt": "inode 1:10", "link": "inode 1:10", "./dir/../params.txt": "inode 1:10",
		"out": "/w/out", "other": "/w/other", "app": "inode 1:11"}
	identity := func(p string) (string, bool) { id, ok := ids[p]; return id, ok }
	in := func(flag, path string) pathUse { return pathUse{flag: flag, path: path, reads: "the tasks"} }
	out := func(flag, path, kind string) pathUse { return pathUse{flag: flag, path: path, writes: kind} }
	for _, tc := range []struct {
		rule  string
		uses  []pathUse
		words []string // nil: no clash
	}{
		{"1: different files do not clash", []pathUse{in("--each-line", "params.txt"), out("-o", "out", "output"), out("--report", "other", "report")}, nil},
		{"1: a path with no identity (its directory is missing) is left to the writability check", []pathUse{in("--each-line", "params.txt"), out("-o", "nodir/x", "output")}, nil},
		{"1: the same inode through a symlink", []pathUse{in("--each-line", "params.txt"), out("-o", "link", "output")}, []string{"-o link", "--each-line params.txt"}},
		{"1: the same inode by another path", []pathUse{in("FILE", "params.txt"), out("--svg", "./dir/../params.txt", "picture")}, []string{"--svg ./dir/../params.txt", "FILE params.txt"}},
		{"2: an output is never an input", []pathUse{in("--each-line", "params.txt"), out("--joblog", "params.txt", "joblog")}, []string{"--joblog params.txt", "--each-line", "(the tasks)"}},
		{"2: the command is an input", []pathUse{in("the command", "app"), out("--report", "app", "report")}, []string{"--report app", "the command app"}},
		{"2: whichever comes first", []pathUse{out("-o", "params.txt", "output"), in("--tasks", "params.txt")}, []string{"-o params.txt", "--tasks params.txt"}},
		{"2: two readers of one file", []pathUse{in("--tasks", "params.txt"), in("--node-file", "params.txt")}, nil},
		{"3: output of every instance to one file", []pathUse{out("-o", "out", "output"), out("-o", "out", "output"), out("-e", "out", "output")}, nil},
		{"3: a report and a joblog", []pathUse{out("--report", "out", "report"), out("--joblog", "out", "joblog")}, []string{"--joblog out and --report out", "joblog", "report"}},
		{"3: output and a report", []pathUse{out("-o", "out", "output"), out("--report", "out", "report")}, []string{"--report out and -o out"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			err := fileClash(tc.uses, identity)
			if tc.words == nil {
				if err != nil {
					t.Fatalf("clash %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no clash")
			}
			if _, usage := err.(usageError); !usage {
				t.Errorf("%T, want a usage error (exit 2)", err)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}
