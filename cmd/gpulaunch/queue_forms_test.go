package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// replacementForm is one of GNU parallel's replacement strings, as typed,
// and what an --each-line task fills it with: for the line
// "data/run.1.json" without --colsep, and for "a.b,c/d.e" with --colsep
// ','; refused: part of the one-line refusal ("" where it is filled).
type replacementForm struct {
	form           string
	line, cols     string
	refusedWithout string // without --colsep
	refusedWith    string // with --colsep ,
}

// replacementForms is every form docs/tasks.md lists, and those it says
// are refused: Perl's, --plus's, {0}, a column without --colsep or
// beyond the line's.
var replacementForms = []replacementForm{
	{form: "{}", line: "data/run.1.json", cols: "a.b,c/d.e"},
	{form: "{.}", line: "data/run.1", cols: "a.b,c/d"},
	{form: "{/}", line: "run.1.json", cols: "d.e"},
	{form: "{//}", line: "data", cols: "a.b,c"},
	{form: "{/.}", line: "run.1", cols: "d"},
	{form: "{#}", line: "1", cols: "1"},
	{form: "{%}", line: "1", cols: "1"},
	{form: "{1}", line: "data/run.1.json", cols: "a.b"},
	{form: "{-1}", line: "data/run.1.json", cols: "c/d.e"},
	{form: "{1.}", line: "data/run.1", cols: "a"},
	{form: "{1/}", line: "run.1.json", cols: "a.b"},
	{form: "{1//}", line: "data", cols: "."},
	{form: "{-1/.}", line: "run.1", cols: "d"},
	{form: "{2}", refusedWithout: "{2}: without --colsep the line is one column", cols: "c/d.e"},
	{form: "{2.}", refusedWithout: "{2.}: without --colsep", cols: "c/d"},
	{form: "{2/}", refusedWithout: "{2/}: without --colsep", cols: "d.e"},
	{form: "{2//}", refusedWithout: "{2//}: without --colsep", cols: "c"},
	{form: "{2/.}", refusedWithout: "{2/.}: without --colsep", cols: "d"},
	{form: "{-2}", refusedWithout: "{-2}: without --colsep", cols: "a.b"},
	{form: "{3}", refusedWithout: "{3}: without --colsep", refusedWith: "{3}: the line has 2 column(s)"},
	{form: "{0}", refusedWithout: "{0}: not a replacement string", refusedWith: "{0}: not a replacement string"},
	{form: "{= s/a/b/ =}", refusedWithout: "{= s/a/b/ =}: a Perl expression", refusedWith: "{= s/a/b/ =}: a Perl expression"},
	{form: "{= s/,/_/g =}", refusedWithout: "{= s/,/_/g =}: a Perl expression", refusedWith: "{= s/,/_/g =}: a Perl expression"},
	{form: "{1= s/a/b/ =}", refusedWithout: "{1= s/a/b/ =}: a Perl expression", refusedWith: "{1= s/a/b/ =}: a Perl expression"},
	{form: "{+/}", refusedWithout: "{+/}: not a replacement string", refusedWith: "{+/}: not a replacement string"},
	{form: "{+.}", refusedWithout: "{+.}: not a replacement", refusedWith: "{+.}: not a replacement"},
	{form: "{+..}", refusedWithout: "{+..}: not a replacement", refusedWith: "{+..}: not a replacement"},
	{form: "{..}", refusedWithout: "{..}: not a replacement", refusedWith: "{..}: not a replacement"},
	{form: "{...}", refusedWithout: "{...}: not a replacement", refusedWith: "{...}: not a replacement"},
	{form: "{/..}", refusedWithout: "{/..}: not a replacement", refusedWith: "{/..}: not a replacement"},
	{form: "{##}", refusedWithout: "{##}: not a replacement", refusedWith: "{##}: not a replacement"},
	{form: "{0#}", refusedWithout: "{0#}: not a replacement", refusedWith: "{0#}: not a replacement"},
}

// argvShape is how a form reaches gpulaunch's COMMAND: as one word, inside
// a longer word, or split into words where a shell split it unquoted
// (only a form with blanks in it: a Perl expression).
type argvShape struct {
	name  string
	words func(form string) []string
	// text is what the words print, joined by blanks, for a filled value
	text func(value string) string
}

var argvShapes = []argvShape{
	{"one word", func(f string) []string { return []string{f} }, func(v string) string { return v }},
	{"inside a word", func(f string) []string { return []string{"x" + f + "y"} }, func(v string) string { return "x" + v + "y" }},
	{"split by an unquoted shell", strings.Fields, func(v string) string { return v }},
}

// Every replacement-string form in every argv shape of --each-line's
// COMMAND, without --colsep and with it: filled as docs/tasks.md's table
// says, or refused before the start in one line naming it (the split
// Perl expression too: it once ran as text). In --tasks lines, with
// --shell and without, no form but {%} is filled — a line is a whole
// command, as parallel's input lines are — and a Perl expression that a
// shell would split is the line's own text, not brace expansion.
func TestQueueReplacementStringFormsInEveryArgvShape(t *testing.T) {
	dir := t.TempDir()
	plain := writeFile(t, dir, "plain", "data/run.1.json\n")
	csv := writeFile(t, dir, "csv", "a.b,c/d.e\n")
	env := sched.Env{"PATH": os.Getenv("PATH")}
	for _, colsep := range []bool{false, true} {
		in, sep := plain, []string{}
		if colsep {
			in, sep = csv, []string{"--colsep", ","}
		}
		for _, shape := range argvShapes {
			var filled []replacementForm
			for _, f := range replacementForms {
				words := shape.words(f.form)
				if shape.name == "split by an unquoted shell" && len(words) == 1 {
					continue // nothing for a shell to split
				}
				refused := map[bool]string{false: f.refusedWithout, true: f.refusedWith}[colsep]
				if refused == "" {
					filled = append(filled, f)
					continue
				}
				args := append(append([]string{"-n", "1", "-G", "0"}, sep...), append([]string{"--each-line", in, "--", "echo"}, words...)...)
				_, stderr, code := runCLI(t, env, args...)
				if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: ") || !strings.Contains(stderr, refused) {
					t.Errorf("%s, %s, --colsep %v: exit %d, stderr %q; want one line with %q", f.form, shape.name, colsep, code, stderr, refused)
				}
			}
			if len(filled) == 0 {
				continue
			}
			// the forms filled: one task prints each on a line of its own
			args := append(append([]string{"-q", "-n", "1", "-G", "0"}, sep...), "--each-line", in, "--", "printf", `%s\n`)
			for _, f := range filled {
				args = append(args, shape.words(f.form)...)
			}
			out, stderr, code := runCLI(t, env, args...)
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if code != 0 || len(got) != len(filled) {
				t.Errorf("%s, --colsep %v: exit %d, printed %q\n%s", shape.name, colsep, code, out, stderr)
				continue
			}
			for i, f := range filled {
				want := shape.text(map[bool]string{false: f.line, true: f.cols}[colsep])
				if got[i] != want {
					t.Errorf("%s, %s, --colsep %v: %q, want %q", f.form, shape.name, colsep, got[i], want)
				}
			}
		}
	}
	// --tasks lines: every form is the line's own text but {%}
	for _, shell := range []bool{false, true} {
		var lines, want []string
		for _, f := range replacementForms {
			for _, shape := range argvShapes[:2] { // as a word of the line, or inside one
				w := shape.words(f.form)[0]
				lines = append(lines, "echo "+w)
				want = append(want, strings.ReplaceAll(w, "{%}", "1"))
			}
		}
		tasks := writeFile(t, dir, "tasks", strings.Join(lines, "\n")+"\n")
		args := []string{"-q", "-n", "1", "-G", "0", "--tasks", tasks}
		if shell {
			args = append(args, "--shell")
		}
		out, stderr, code := runCLI(t, env, args...)
		if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); code != 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("--tasks lines (--shell %v): exit %d\n%s\nwant:\n%s\n%s", shell, code, out, strings.Join(want, "\n"), stderr)
		}
	}
}

// outputPatternKind is a part of an -o/-e pattern and what it names the
// files of a queue of two tasks, the lines "r.1.json" and "r.2.json", by:
// the names, or refused (part of the one-line refusal).
type outputPatternKind struct {
	part    string
	names   [2]string // task 1's, task 2's; the same for one file they share
	refused string
}

// Every output option (-o, -e) against every pattern kind in a queue:
// srun's %t %j %s %N %n (with a width, %%), and every replacement
// string: each names the file its task writes, as the COMMAND's strings
// are filled, or is refused before the start naming the flag and the
// string; in a --tasks queue the strings of a line are refused by name.
func TestQueueOutputOptionsAgainstEveryPatternKind(t *testing.T) {
	host := "testhost" // runCLI's
	kinds := []outputPatternKind{
		{part: "%t", names: [2]string{"1", "2"}},
		{part: "%3t", names: [2]string{"001", "002"}},
		{part: "%j", names: [2]string{"none", "none"}},
		{part: "%s", names: [2]string{"none", "none"}},
		{part: "%N", names: [2]string{host, host}},
		{part: "%n", names: [2]string{"0", "0"}},
		{part: "%%", names: [2]string{"%", "%"}},
		{part: "{}", names: [2]string{"r.1.json", "r.2.json"}},
		{part: "{.}", names: [2]string{"r.1", "r.2"}},
		{part: "{/}", names: [2]string{"r.1.json", "r.2.json"}},
		{part: "{//}", names: [2]string{".", "."}},
		{part: "{/.}", names: [2]string{"r.1", "r.2"}},
		{part: "{#}", names: [2]string{"1", "2"}},
		{part: "{%}", names: [2]string{"1", "1"}},
		{part: "{1}", names: [2]string{"r.1.json", "r.2.json"}},
		{part: "{-1.}", names: [2]string{"r.1", "r.2"}},
		{part: "{1/.}", names: [2]string{"r.1", "r.2"}},
		{part: "{.}-{/}", names: [2]string{"r.1-r.1.json", "r.2-r.2.json"}},
		{part: "{2}", refused: "{2}: without --colsep the line is one column"},
		{part: "{0}", refused: "{0}: not a replacement string"},
		{part: "{= s/a/b/ =}", refused: "{= s/a/b/ =}: a Perl expression"},
		{part: "{+/}", refused: "{+/}: not a replacement string"},
		{part: "{..}", refused: "{..}: not a replacement string"},
		{part: "%q", refused: "%q is not one of %t %j %s %N %n %%"},
	}
	in := writeFile(t, t.TempDir(), "in", "r.1.json\nr.2.json\n")
	env := sched.Env{"PATH": os.Getenv("PATH")}
	for _, flag := range []string{"-o", "-e"} {
		// the task writes its number to the stream the flag names
		script := map[string]string{"-o": `echo "$0"`, "-e": `echo "$0" >&2`}[flag]
		for _, k := range kinds {
			dir := t.TempDir()
			pattern := dir + "/f-" + k.part + ".log" // not filepath.Join, which would clean {//}
			args := []string{"-q", "-n", "1", "-G", "0", flag, pattern, "--each-line", in, "--", "sh", "-c", script, "{#}"}
			if k.refused != "" {
				_, stderr, code := runCLI(t, env, args...)
				if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, flag) || !strings.Contains(stderr, k.refused) {
					t.Errorf("%s %s: exit %d, stderr %q; want one line naming %s with %q", flag, k.part, code, stderr, flag, k.refused)
				}
				continue
			}
			if _, stderr, code := runCLI(t, env, args...); code != 0 {
				t.Errorf("%s %s: exit %d\n%s", flag, k.part, code, stderr)
				continue
			}
			want := map[string]string{}
			for i, n := range k.names {
				want["f-"+n+".log"] += fmt.Sprintf("%d\n", i+1)
			}
			got := map[string]string{}
			files, _ := filepath.Glob(dir + "/*")
			for _, f := range files {
				b, _ := os.ReadFile(f)
				got[filepath.Base(f)] = string(b)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s %s wrote %q, want %q", flag, k.part, got, want)
			}
		}
		// --tasks lines are no input: the line's strings are refused
		tasks := writeFile(t, t.TempDir(), "tasks", "true\n")
		for _, part := range []string{"{}", "{.}", "{/}", "{//}", "{/.}", "{1}", "{-1/.}"} {
			_, stderr, code := runCLI(t, env, "-n", "1", "-G", "0", flag, "f-"+part+".log", "--tasks", tasks)
			if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, flag+` "f-`+part+`.log": `+part+": a string of --each-line's input line, and a --tasks line is a whole command") {
				t.Errorf("--tasks with %s %s: exit %d, stderr %q", flag, part, code, stderr)
			}
		}
	}
}

// A task whose expanded file is in a directory that does not exist is
// refused before anything starts, naming the task, the file and the fix;
// a line the pattern cannot fill (a column it lacks) names the line.
func TestQueueOutputFileCheckedPerTask(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in", "x.json\nsub/y.json\n")
	csv := writeFile(t, dir, "csv", "a,b\nc\n")
	mark := filepath.Join(dir, "ran")
	env := sched.Env{"PATH": os.Getenv("PATH")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", dir + "/o/{}.log", "--each-line", in}, "-o " + dir + "/o/{}.log: task 1 writes " + dir + "/o/x.json.log, but the directory " + dir + "/o does not exist (create it: mkdir -p " + dir + "/o)"},
		{[]string{"-e", dir + "/{//}/{/.}.err", "--each-line", in}, "-e " + dir + "/{//}/{/.}.err: task 2 writes " + dir + "/sub/y.err, but the directory " + dir + "/sub does not exist"},
		{[]string{"-o", dir + "/{2}.log", "--colsep", ",", "--each-line", csv}, "--each-line " + csv + " line 2: -o \"" + dir + "/{2}.log\": {2}: the line has 1 column(s)"},
	} {
		args := append(append([]string{"-n", "1", "-G", "0"}, tc.args...), "--", "touch", mark)
		_, stderr, code := runCLI(t, env, args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	if names, _ := filepath.Glob(dir + "/*"); len(names) != 2 {
		t.Errorf("a refused queue changed the directory: %q", names)
	}
}
