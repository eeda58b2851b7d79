package outputs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Clash's rules, each by name, with the file system injected: the
// identity of a path is what the table says.
func TestFileClash(t *testing.T) {
	ids := map[string]string{"params.txt": "inode 1:10", "link": "inode 1:10", "./dir/../params.txt": "inode 1:10",
		"out": "/w/out", "other": "/w/other", "app": "inode 1:11"}
	identity := func(p string) (string, bool) { id, ok := ids[p]; return id, ok }
	in := func(flag, path string) Use { return Use{Flag: flag, Path: path, Reads: "the tasks"} }
	out := func(flag, path, kind string) Use { return Use{Flag: flag, Path: path, Writes: kind} }
	for _, tc := range []struct {
		rule  string
		uses  []Use
		words []string // nil: no clash
	}{
		{"1: different files do not clash", []Use{in("--each-line", "params.txt"), out("-o", "out", "output"), out("--report", "other", "report")}, nil},
		{"1: a path with no identity (its directory is missing) is left to the writability check", []Use{in("--each-line", "params.txt"), out("-o", "nodir/x", "output")}, nil},
		{"1: the same inode through a symlink", []Use{in("--each-line", "params.txt"), out("-o", "link", "output")}, []string{"-o link", "--each-line params.txt"}},
		{"1: the same inode by another path", []Use{in("FILE", "params.txt"), out("--svg", "./dir/../params.txt", "picture")}, []string{"--svg ./dir/../params.txt", "FILE params.txt"}},
		{"2: an output is never an input", []Use{in("--each-line", "params.txt"), out("--joblog", "params.txt", "joblog")}, []string{"--joblog params.txt", "--each-line", "(the tasks)"}},
		{"2: the command is an input", []Use{in("the command", "app"), out("--report", "app", "report")}, []string{"--report app", "the command app"}},
		{"2: whichever comes first", []Use{out("-o", "params.txt", "output"), in("--tasks", "params.txt")}, []string{"-o params.txt", "--tasks params.txt"}},
		{"2: two readers of one file", []Use{in("--tasks", "params.txt"), in("--node-file", "params.txt")}, nil},
		{"3: output of every instance to one file", []Use{out("-o", "out", "output"), out("-o", "out", "output"), out("-e", "out", "output")}, nil},
		{"3: a report and a joblog", []Use{out("--report", "out", "report"), out("--joblog", "out", "joblog")}, []string{"--joblog out and --report out", "joblog", "report"}},
		{"3: output and a report", []Use{out("-o", "out", "output"), out("--report", "out", "report")}, []string{"--report out and -o out"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			err := Clash(tc.uses, identity)
			if tc.words == nil {
				if err != nil {
					t.Fatalf("clash %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no clash")
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// WriteWhole writes through a symlink (as a shell's > does) and writes a
// device or pipe in place: a rename would replace the link or the node
// (--report /dev/null, run as root, replaced /dev/null with a file).
func TestWriteWholeThroughLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target.json", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhole(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced by a file")
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("the target holds %q, want the new data", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() { b, _ := os.ReadFile(fifo); got <- b }()
	if err := WriteWhole(fifo, []byte("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced by a file (mode %s)", fi.Mode()) // its reader waits for good
	}
	if b := <-got; string(b) != "through the pipe" {
		t.Errorf("the reader got %q", b)
	}
}

// Identity, the world Clash is given: through symlinks (dangling
// ones too), a file yet to be made by its resolved directory, none for a
// device or a missing directory.
func TestFileIdentity(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "params.txt")
	os.WriteFile(file, nil, 0o644)
	os.Symlink("params.txt", filepath.Join(dir, "link"))
	os.Symlink("new.txt", filepath.Join(dir, "dangling"))
	os.Symlink(".", filepath.Join(dir, "here"))
	id := func(p string) string { s, ok := Identity(p); return map[bool]string{true: s, false: "none"}[ok] }
	for _, tc := range []struct{ a, b string }{
		{file, filepath.Join(dir, "link")},
		{file, filepath.Join(dir, "here", "params.txt")},
		{filepath.Join(dir, "new.txt"), filepath.Join(dir, "dangling")},
		{filepath.Join(dir, "new.txt"), filepath.Join(dir, "here", "new.txt")},
	} {
		if id(tc.a) != id(tc.b) || id(tc.a) == "none" {
			t.Errorf("%s is %s, %s is %s: want one file", tc.a, id(tc.a), tc.b, id(tc.b))
		}
	}
	for _, p := range []string{"/dev/null", filepath.Join(dir, "nodir", "x")} {
		if s, ok := Identity(p); ok {
			t.Errorf("%s has identity %q, want none", p, s)
		}
	}
}

// Every output flag against every kind of pattern (issue 34's class):
// what the flag reads is read, the rest refused by name — never written as
// given (Name's rules). The queue's -o and -e, which fill every
// replacement string per task, are TestQueueOutputOptionsAgainstEveryPatternKind's.
func TestEveryOutputAgainstEveryPatternKind(t *testing.T) {
	kinds := []struct{ name, value string }{
		{"stdout", "-"}, {"an instance", "r-%t.x"}, {"a width", "r-%3t.x"}, {"the job", "r-%j.x"}, {"the host", "r-%N.x"},
		{"a literal %", "r-%%.x"}, {"a line", "r-{}.x"}, {"a column", "r-{1}.x"}, {"a task", "r-{#}.x"}, {"Perl", "r-{= $_ =}.x"},
		{"plain", "r.x"}, {"braces of no replacement", "r-{a,b}.x"},
	}
	// what each flag does with each kind: "" read (or taken as given), else the refusal's words
	want := map[string]map[string]string{
		"-o":             {"a line": "{} is a replacement string", "a column": "{1} is a replacement string", "a task": "{#} is a replacement string", "Perl": "is a replacement string"},
		"--report":       {"stdout": "- is stdout, which carries the instances' output", "a line": "{} is a replacement string", "a column": "{1} is", "a task": "{#} is", "Perl": "is a replacement string"},
		"--joblog":       {"an instance": "%t is an srun pattern", "a width": "%3t is an srun pattern", "the job": "%j is an srun pattern", "the host": "%N is an srun pattern", "a line": "{} is", "a column": "{1} is", "a task": "{#} is", "Perl": "is a replacement string"},
		"scale --json":   {"stdout": "carries the study's table", "an instance": "%t is an srun pattern", "a width": "%3t is", "the job": "%j is", "the host": "%N is", "a line": "{} is", "a column": "{1} is", "a task": "{#} is", "Perl": "is a replacement"},
		"report --svg":   {"an instance": "%t is an srun pattern", "a width": "%3t is", "the job": "%j is", "the host": "%N is", "a line": "{} is", "a column": "{1} is", "a task": "{#} is", "Perl": "is a replacement"},
		"--metrics-file": {"stdout": "carries the instances' output", "a line": "{} is", "a column": "{1} is", "a task": "{#} is", "Perl": "is a replacement"},
	}
	want["-e"], want["scale --svg"], want["report --html"] = want["-o"], want["scale --json"], want["report --svg"]
	for _, k := range Kinds {
		if want[k.Flag] == nil {
			t.Errorf("%s: an output flag without its row", k.Flag)
		}
	}
	for flag, refusals := range want {
		for _, k := range kinds {
			t.Run(flag+"/"+k.name, func(t *testing.T) {
				err := Name(flag, k.value, false)
				switch why := refusals[k.name]; {
				case why == "" && err != nil:
					t.Errorf("%s %s refused: %v", flag, k.value, err)
				case why != "" && (err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), flag)):
					t.Errorf("%s %s: %v, want a refusal naming %s with %q", flag, k.value, err, flag, why)
				}
			})
		}
	}
}
