package taskqueue

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		rule string
		line string
		want []string
		kind LineFault // the refusal's, when want is nil
		bad  string    // part of the error
	}{
		{rule: "1", line: "python train.py --lr 0.1", want: []string{"python", "train.py", "--lr", "0.1"}},
		{rule: "1", line: "  ./app\t a  ", want: []string{"./app", "a"}},
		{rule: "1", line: `app 'two words' "and more" a\ b`, want: []string{"app", "two words", "and more", "a b"}},
		{rule: "1", line: `app "say \"hi\" \\ \$5" 'it''s'`, want: []string{"app", `say "hi" \ $5`, "its"}},
		{rule: "1", line: `app '' ""`, want: []string{"app", "", ""}},
		{rule: "1", line: "app --tag=run#3 a~b x! {} {a} } ]", want: []string{"app", "--tag=run#3", "a~b", "x!", "{}", "{a}", "}", "]"}},
		{rule: "1", line: "app '$HOME' '*.txt' '|'", want: []string{"app", "$HOME", "*.txt", "|"}},
		{rule: "1: an assignment after the command is an argument", line: "make CC=gcc", want: []string{"make", "CC=gcc"}},
		{rule: "1: env sets the variable", line: "env VAR=1 echo hi", want: []string{"env", "VAR=1", "echo", "hi"}},
		{rule: "1: a quoted name is no assignment", line: "'VAR=1' x", want: []string{"VAR=1", "x"}},
		{rule: "1: not a name", line: "1A=b x", want: []string{"1A=b", "x"}},
		{rule: "1: braces across words are no expansion", line: "echo {= s/,/_/g =}", want: []string{"echo", "{=", "s/,/_/g", "=}"}},
		{rule: "1: {..} is no range", line: "echo {..} {a..} {1..x}", want: []string{"echo", "{..}", "{a..}", "{1..x}"}},
		{rule: "1: every replacement string is text", line: "echo {} {.} {/} {//} {/.} {#} {%} {1} {-1} {2.} {+/} {0} {##}", want: []string{"echo", "{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}", "{1}", "{-1}", "{2.}", "{+/}", "{0}", "{##}"}},
		{rule: "2", line: "app | tee out", kind: NeedsShell, bad: `'|'`},
		// issue 34's sweep: these were "command not found in PATH" (127)
		{rule: "2: a shell's own command", line: "cd /tmp", kind: NeedsShell, bad: "cd (a shell's own command"},
		{rule: "2: a shell's own command", line: "export X=1", kind: NeedsShell, bad: "export (a shell's own command"},
		{rule: "2: a shell's own command", line: "exec echo hi", kind: NeedsShell, bad: "exec (a shell's own command"},
		{rule: "2: a keyword", line: "if true", kind: NeedsShell, bad: "if (a shell's own command"},
		{rule: "1: a builtin that is a program too", line: "echo cd export", want: []string{"echo", "cd", "export"}},
		{rule: "2", line: "app > out", kind: NeedsShell, bad: `'>'`},
		{rule: "2", line: "a; b", kind: NeedsShell, bad: `';'`},
		{rule: "2", line: "app &", kind: NeedsShell, bad: `'&'`},
		{rule: "2", line: "app $HOME", kind: NeedsShell, bad: `'$'`},
		{rule: "2", line: "app `date`", kind: NeedsShell, bad: "'`'"},
		{rule: "2", line: `app "$HOME"`, kind: NeedsShell, bad: "inside double quotes"},
		{rule: "2", line: "app *.txt", kind: NeedsShell, bad: `'*'`},
		{rule: "2", line: "app file?", kind: NeedsShell, bad: `'?'`},
		{rule: "2", line: "app ~/data", kind: NeedsShell, bad: `'~'`},
		{rule: "2", line: "app {1..3}", kind: NeedsShell, bad: `'{'`},
		{rule: "2", line: "app x{a..e..2}y", kind: NeedsShell, bad: `'{'`},
		{rule: "2", line: "app {a,b}", kind: NeedsShell, bad: `'{'`},
		{rule: "2: a list with a quoted blank is one word", line: "app {a,'b c'}", kind: NeedsShell, bad: `'{'`},
		{rule: "2", line: "app # comment", kind: NeedsShell, bad: `'#'`},
		{rule: "2", line: "(app)", kind: NeedsShell, bad: `'('`},
		{rule: "2: an assignment", line: "VAR=1 echo hi", kind: NeedsShell, bad: "VAR=1 (a variable set for the command, a shell feature), which needs a shell: add --shell to run each line with /bin/sh -c, or start the line with env: env VAR=1 …"},
		{rule: "2: an assignment alone", line: "_x=a'b c'", kind: NeedsShell, bad: "_x=a'b c' (a variable"},
		{rule: "3", line: "app 'open", kind: Syntax, bad: "an unclosed single quote (column 5): a syntax error, which a shell refuses too (--shell does not help)"},
		{rule: "3", line: `app "open`, kind: Syntax, bad: "an unclosed double quote (column 5)"},
		{rule: "4", line: `app \`, kind: Continued, bad: "the line ends in a backslash"},
	} {
		got, err := SplitWords(tc.line)
		var le *LineError
		switch {
		case tc.want == nil && (!errors.As(err, &le) || le.Kind != tc.kind || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("rule %s: SplitWords(%q) = %q, %v; want a refusal of kind %d naming %s", tc.rule, tc.line, got, err, tc.kind, tc.bad)
		case tc.want != nil && (err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00")):
			t.Errorf("rule %s: SplitWords(%q) = %q, %v; want %q", tc.rule, tc.line, got, err, tc.want)
		}
	}
}

// FuzzSplitWords: no line makes SplitWords panic; the words it gives,
// each single-quoted and joined, split back into the same words; and any
// words, quoted and joined, split back into themselves.
func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"python train.py --lr 0.1", `app 'two words' "and more" a\ b`, `a "b\"c" 'd'\''e'`, "app | tee", "{1..3} ~x !", ""} {
		f.Add(s, "a b", "it's")
	}
	quote := func(words []string) string {
		out := make([]string, len(words))
		for i, w := range words {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		return strings.Join(out, " ")
	}
	f.Fuzz(func(t *testing.T, line, a, b string) {
		if words, err := SplitWords(line); err == nil {
			again, err := SplitWords(quote(words))
			if err != nil || !slices.Equal(again, words) {
				t.Fatalf("%q: %q, quoted and split again: %q, %v", line, words, again, err)
			}
		}
		if got, err := SplitWords(quote([]string{a, b})); err != nil || !slices.Equal(got, []string{a, b}) {
			t.Fatalf("%q %q quoted and split: %q, %v", a, b, got, err)
		}
	})
}

// FuzzShellJoin: the Command a joblog records for an --each-line task
// (ShellJoin) splits back into the task's argv (SplitWords), and is the
// same command to --resume (SameCommand).
func FuzzShellJoin(f *testing.F) {
	f.Add("./app", "--lr", "0.1")
	f.Add("echo", "a b", "it's")
	f.Add("x", "", "$HOME|*")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		cmd := ShellJoin(args)
		got, err := SplitWords(cmd)
		if err != nil || !slices.Equal(got, args) {
			t.Fatalf("%q joined as %q splits into %q, %v", args, cmd, got, err)
		}
		if !strings.ContainsAny(cmd, "\t\n") && !SameCommand(cmd, cmd) {
			t.Fatalf("%q is not the same command as itself", cmd)
		}
	})
}
