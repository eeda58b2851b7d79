package taskqueue

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// The expected values are what GNU parallel 20221122 (Debian 12) prints
// for the same command and input, except where a rule refuses.
func TestFillTemplate(t *testing.T) {
	line := job.Input{Line: "data/run.1.json", Seq: 7}
	cols := job.Input{Line: "a.b c/d.e", Cols: []string{"a.b", "c/d.e"}, Seq: 3, Slot: 2}
	for _, tc := range []struct {
		rule string
		argv []string
		in   job.Input
		want []string
		bad  string // part of the error; "" for none
	}{
		{rule: "1: {} is the line, one argument", argv: []string{"app", "--in", "{}"}, in: job.Input{Line: "a b", Seq: 1}, want: []string{"app", "--in", "a b"}},
		{rule: "1: inside a word, with the task number", argv: []string{"app", "x{}-{#}.out"}, in: job.Input{Line: "in", Seq: 7}, want: []string{"app", "xin-7.out"}},
		{rule: "1: {.} {/} {//} {/.}", argv: []string{"app", "{.}", "{/}", "{//}", "{/.}"}, in: line, want: []string{"app", "data/run.1", "run.1.json", "data", "run.1"}},
		{rule: "1: the issue's command", argv: []string{"./app", "--out", "run-{.}.log", "--lr", "{}"}, in: job.Input{Line: "0.1", Seq: 1}, want: []string{"./app", "--out", "run-0.log", "--lr", "0.1"}},
		{rule: "1: {%} is the slot", argv: []string{"app", "gpu{%}"}, in: job.Input{Line: "x", Seq: 1, Slot: 4}, want: []string{"app", "gpu4"}},
		{rule: "1: one pass: a line holding {#} stays", argv: []string{"echo", "{}"}, in: job.Input{Line: "{#} {%} {.}", Seq: 2, Slot: 1}, want: []string{"echo", "{#} {%} {.}"}},
		{rule: "2: {1} without --colsep is the line", argv: []string{"app", "{1}"}, in: job.Input{Line: "p q", Seq: 1}, want: []string{"app", "p q"}},
		{rule: "2: columns and their modifiers", argv: []string{"app", "{2}", "{-1}", "{1.}", "{2/}", "{2//}", "{2/.}"}, in: cols, want: []string{"app", "c/d.e", "c/d.e", "a", "d.e", "c", "d"}},
		{rule: "2: {0} refused", argv: []string{"app", "{0}"}, in: line, bad: "{0}: not a replacement string"},
		{rule: "2: a column the line lacks", argv: []string{"app", "{3}"}, in: cols, bad: "{3}: the line has 2 column(s)"},
		{rule: "2: {2} without --colsep", argv: []string{"app", "{2}"}, in: line, bad: "give --colsep REGEX"},
		{rule: "2: -N beyond the first column", argv: []string{"app", "{-3}"}, in: cols, bad: "{-3}: the line has 2"},
		{rule: "3: . drops a last extension only", argv: []string{"{.}"}, in: job.Input{Line: "a.b/c"}, want: []string{"a.b/c"}},
		{rule: "3: . of a dot file", argv: []string{"x{.}y"}, in: job.Input{Line: ".bashrc"}, want: []string{"xy"}},
		{rule: "3: . of a trailing dot", argv: []string{"{.}"}, in: job.Input{Line: "a."}, want: []string{"a"}},
		{rule: "3: / of a trailing slash is empty", argv: []string{"x{/}y"}, in: job.Input{Line: "a/b/"}, want: []string{"xy"}},
		{rule: "3: // as Perl's dirname", argv: []string{"{//}", "{//}"}, in: job.Input{Line: "a//b//"}, want: []string{"a", "a"}},
		{rule: "3: // of a bare name is .", argv: []string{"{//}"}, in: job.Input{Line: "a"}, want: []string{"."}},
		{rule: "3: // of /a is /", argv: []string{"{//}"}, in: job.Input{Line: "/a"}, want: []string{"/"}},
		{rule: "3: /. of a dot file is empty", argv: []string{"x{/.}y"}, in: job.Input{Line: "a/.x"}, want: []string{"xy"}},
		{rule: "4: a Perl expression refused", argv: []string{"app", "{= s/a/b/ =}"}, in: line, bad: "{= s/a/b/ =}: a Perl expression"},
		// issue 34's sweep: a line `x; touch pwned` ran touch inside sh -c 'echo {}'
		{rule: "8: a shell's -c script gets the value quoted", argv: []string{"sh", "-c", "echo {} > {#}.out", "sh", "{}"}, in: job.Input{Line: "x; touch it's", Seq: 3},
			want: []string{"sh", "-c", `echo 'x; touch it'\''s' > 3.out`, "sh", "x; touch it's"}},
		{rule: "8: a plain value as it is, as parallel's joblog records it", argv: []string{"sh", "-c", "exit {}"}, in: job.Input{Line: "0"}, want: []string{"sh", "-c", "exit 0"}},
		{rule: "8: bash -lc, by its path", argv: []string{"/bin/bash", "-lc", "run {1}"}, in: job.Input{Line: "a b"}, want: []string{"/bin/bash", "-lc", "run 'a b'"}},
		{rule: "8: sh -e -c: the option that holds c", argv: []string{"sh", "-e", "-c", "run {}"}, in: job.Input{Line: "$(id)"}, want: []string{"sh", "-e", "-c", "run '$(id)'"}},
		{rule: "8: a script file is no -c script", argv: []string{"sh", "job.sh", "{}"}, in: job.Input{Line: "a b"}, want: []string{"sh", "job.sh", "a b"}},
		{rule: "8: another program's -c", argv: []string{"python3", "-c", "print('{}')"}, in: job.Input{Line: "a b"}, want: []string{"python3", "-c", "print('a b')"}},
		{rule: "4: a positional Perl expression refused", argv: []string{"app", "x{2= $_ =}y"}, in: line, bad: "{2= $_ =}: a Perl expression"},
		{rule: "4: --plus strings refused", argv: []string{"app", "{+/}"}, in: line, bad: "{+/}: not a replacement string gpulaunch knows"},
		{rule: "4: {..} refused", argv: []string{"{..}"}, in: line, bad: "{..}"},
		{rule: "4: {##} refused", argv: []string{"{##}"}, in: line, bad: "{##}"},
		{rule: "4: {0#} refused", argv: []string{"{0#}"}, in: line, bad: "{0#}"},
		{rule: "4: {1#} refused", argv: []string{"{1#}"}, in: line, bad: "{1#}"},
		{rule: "4: JSON and awk are the command's own", argv: []string{"app", `{"a":1}`, "{print $1}", "${HOME}", "{a,b}", "{ }", "{=x"}, in: job.Input{Line: "L"},
			want: []string{"app", `{"a":1}`, "{print $1}", "${HOME}", "{a,b}", "{ }", "{=x", "L"}},
		{rule: "4: an unclosed brace is text", argv: []string{"a{", "{{}}"}, in: job.Input{Line: "L"}, want: []string{"a{", "{L}"}},
		{rule: "5: no replacement string: the line appended", argv: []string{"app", "--lr"}, in: job.Input{Line: "0.1 x"}, want: []string{"app", "--lr", "0.1 x"}},
		{rule: "5: with --colsep each column appended", argv: []string{"app"}, in: cols, want: []string{"app", "a.b", "c/d.e"}},
		{rule: "5: {#} alone counts, nothing appended", argv: []string{"app", "{#}"}, in: job.Input{Line: "z", Seq: 5}, want: []string{"app", "5"}},
		{rule: "5: {%} alone counts, nothing appended", argv: []string{"app", "{%}"}, in: job.Input{Line: "z", Seq: 5, Slot: 1}, want: []string{"app", "1"}},
		{rule: "6: {%} stays until the slot is known", argv: []string{"app", "{%}-{}"}, in: job.Input{Line: "z", Seq: 5}, want: []string{"app", "{%}-z"}},
		{rule: "7: a Perl expression a shell split into words", argv: []string{"echo", "{=", "s/,/_/g", "=}"}, in: line, bad: "{= s/,/_/g =}: a Perl expression (the words `{=` `s/,/_/g` `=}`: a shell split it where it was not quoted)"},
		{rule: "7: inside longer words", argv: []string{"x{=", "$_", "=}y"}, in: line, bad: "{= $_ =}: a Perl expression (the words `{=` `$_` `=}`"},
		{rule: "7: a positional one", argv: []string{"app", "{2=", "uc", "=}"}, in: line, bad: "{2= uc =}: a Perl expression (the words"},
		{rule: "7: in one word of several, as rule 4", argv: []string{"app", "{= s/a/b/ =}", "x"}, in: line, bad: "{= s/a/b/ =}: a Perl expression, which"},
		{rule: "7: {= without =} is text", argv: []string{"app", "{=", "x"}, in: job.Input{Line: "L"}, want: []string{"app", "{=", "x", "L"}},
	} {
		got, err := FillTemplate(tc.argv, tc.in)
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("rule %s: %q: error %v, want one with %q", tc.rule, tc.argv, err, tc.bad)
		case tc.bad == "" && err != nil:
			t.Errorf("rule %s: %q: %v", tc.rule, tc.argv, err)
		case tc.bad == "" && !slices.Equal(got, tc.want):
			t.Errorf("rule %s: %q with %q = %q, want %q", tc.rule, tc.argv, tc.in.Line, got, tc.want)
		}
	}
}

// A refusal that depends on the line (a column it lacks) says so, so
// that the message can name the line; one in the command alone does not.
func TestFillTemplateErrorSaysWhetherTheLineIsAtFault(t *testing.T) {
	_, err := FillTemplate([]string{"{3}"}, job.Input{Line: "a b", Cols: []string{"a", "b"}})
	var te *TemplateError
	if ok := errors.As(err, &te); !ok || !te.Line {
		t.Errorf("a missing column: %#v, want a TemplateError about the line", err)
	}
	_, err = FillTemplate([]string{"{+.}"}, job.Input{Line: "a"})
	if ok := errors.As(err, &te); !ok || te.Line {
		t.Errorf("{+.}: %#v, want a TemplateError about the command", err)
	}
}

// FuzzFillTemplate: no argument and line make it panic; a command without
// a brace gets the line appended whole; one pass: a template of just {}
// gives the line back whatever it holds; filling the slot later gives
// what filling it at once gives.
func FuzzFillTemplate(f *testing.F) {
	for _, s := range []string{"{}", "{.}", "x{1/.}y", "{= s/a/b/ =}", "{-2//}", `{"a":1}`, "{%}{#}", "{{}}", "{2= =}"} {
		f.Add(s, "data/run.1.json", " ")
	}
	f.Fuzz(func(t *testing.T, arg, line, sep string) {
		var cols []string
		if sep != "" {
			cols = strings.Split(line, sep)
		}
		in := job.Input{Line: line, Cols: cols, Seq: 3, Slot: 2}
		got, err := FillTemplate([]string{"app", arg}, in)
		if err != nil {
			if te := (*TemplateError)(nil); !errors.As(err, &te) {
				t.Fatalf("%q: error %T %v, want a *TemplateError", arg, err, err)
			}
			return
		}
		if !strings.Contains(arg, "{") {
			want := append([]string{"app", arg}, appended(in)...)
			if !slices.Equal(got, want) {
				t.Fatalf("%q: %q, want %q", arg, got, want)
			}
		}
		if one, err := FillTemplate([]string{"{}"}, in); err != nil || len(one) != 1 || one[0] != line {
			t.Fatalf("{} with %q = %q, %v", line, one, err)
		}
		later := in
		later.Slot = 0
		first, err := FillTemplate([]string{"app", arg}, later)
		if err != nil {
			t.Fatalf("%q: fills with the slot but not without: %v", arg, err)
		}
		if len(first) != len(got) {
			t.Fatalf("%q: %q without the slot, %q with", arg, first, got)
		}
	})
}

// FillFileName fills an -o/-e pattern for one task: the strings of
// FillTemplate, nothing appended, what they write quoted for srun's %
// letters, and without an input line only {#} and {%}.
func TestFillFileName(t *testing.T) {
	percent := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	in := job.Input{Line: "data/run.1.json", Seq: 7, Slot: 2}
	cols := job.Input{Line: "a.b,50%", Cols: []string{"a.b", "50%"}, Seq: 3, Slot: 1}
	for _, tc := range []struct {
		rule    string
		pattern string
		in      job.Input
		noLine  bool
		want    string
		bad     string
	}{
		{rule: "1: every string of the line, nothing appended", pattern: "o/{}|{.}|{/}|{//}|{/.}|{#}|{%}|{1}|{1/.}|%t.log", in: in, want: "o/data/run.1.json|data/run.1|run.1.json|data|run.1|7|2|data/run.1.json|run.1|%t.log"},
		{rule: "1: no replacement string: as it is", pattern: "sweep-%j.log", in: in, want: "sweep-%j.log"},
		{rule: "1: columns", pattern: "o/{1.}-{-1}.log", in: cols, want: "o/a-50%%.log"},
		{rule: "1: a column the line lacks", pattern: "o/{3}.log", in: cols, bad: "{3}: the line has 2 column(s)"},
		{rule: "1: a Perl expression", pattern: "o/{= s/a/b/ =}.log", in: in, bad: "{= s/a/b/ =}: a Perl expression"},
		{rule: "1: --plus", pattern: "o/{+/}.log", in: in, bad: "{+/}: not a replacement string"},
		{rule: "2: what is written is quoted", pattern: "o/{}.log", in: job.Input{Line: "50%t", Seq: 1}, want: "o/50%%t.log"},
		{rule: "2: one pass", pattern: "o/{}.log", in: job.Input{Line: "{#}", Seq: 1}, want: "o/{#}.log"},
		{rule: "3: without a line {#} and {%}", pattern: "o/{#}-{%}.log", in: job.Input{Seq: 4, Slot: 3}, noLine: true, want: "o/4-3.log"},
		{rule: "3: without a line {} is refused", pattern: "o/{}.log", in: job.Input{Seq: 4}, noLine: true, bad: "{}: a string of --each-line's input line, and a --tasks line is a whole command"},
		{rule: "3: without a line {2/} is refused", pattern: "o/{2/}.log", in: job.Input{Seq: 4}, noLine: true, bad: "{2/}: a string of --each-line's input line"},
		{rule: "3: without a line an unknown one is unknown", pattern: "o/{+.}.log", in: job.Input{Seq: 4}, noLine: true, bad: "{+.}: not a replacement string"},
		{rule: "3: without a line Perl is Perl", pattern: "o/{= 1 =}.log", in: job.Input{Seq: 4}, noLine: true, bad: "a Perl expression"},
	} {
		got, err := FillFileName(tc.pattern, tc.in, tc.noLine, percent)
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("rule %s: %q: %q, %v; want an error with %q", tc.rule, tc.pattern, got, err, tc.bad)
		case tc.bad == "" && (err != nil || got != tc.want):
			t.Errorf("rule %s: %q = %q, %v; want %q", tc.rule, tc.pattern, got, err, tc.want)
		}
	}
}

// ReplacementIn finds the replacement strings parallel would read, for the
// names where none is filled.
func TestReplacementIn(t *testing.T) {
	for s, want := range map[string]string{
		"out.log": "", "x/{}.log": "{}", "{1}-{2}": "{1}", "a{.}b": "{.}", "{/.}": "{/.}", "{#}": "{#}", "{%}": "{%}",
		"{= s/a/b/ =}.log": "{= s/a/b/ =}", "{2= uc =}": "{2= uc =}", "{foo}.log": "", "{a,b}": "", "{": "", "}{": "", "x{{}}": "{}",
		"{-1}": "{-1}", "{+.}": "{+.}",
	} {
		if got := ReplacementIn(s); got != want {
			t.Errorf("ReplacementIn(%q) = %q, want %q", s, got, want)
		}
	}
}
