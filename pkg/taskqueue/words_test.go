package taskqueue

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		bad  string // part of the error; "" for none
	}{
		{line: "python train.py --lr 0.1", want: []string{"python", "train.py", "--lr", "0.1"}},
		{line: "  ./app\t a  ", want: []string{"./app", "a"}},
		{line: `app 'two words' "and more" a\ b`, want: []string{"app", "two words", "and more", "a b"}},
		{line: `app "say \"hi\" \\ \$5" 'it''s'`, want: []string{"app", `say "hi" \ $5`, "its"}},
		{line: `app '' ""`, want: []string{"app", "", ""}},
		{line: "app --tag=run#3 a~b x! {} {a} } ]", want: []string{"app", "--tag=run#3", "a~b", "x!", "{}", "{a}", "}", "]"}},
		{line: "app '$HOME' '*.txt' '|'", want: []string{"app", "$HOME", "*.txt", "|"}},
		{line: "app | tee out", bad: `'|'`},
		{line: "app > out", bad: `'>'`},
		{line: "a; b", bad: `';'`},
		{line: "app &", bad: `'&'`},
		{line: "app $HOME", bad: `'$'`},
		{line: "app `date`", bad: "'`'"},
		{line: `app "$HOME"`, bad: "inside double quotes"},
		{line: "app *.txt", bad: `'*'`},
		{line: "app file?", bad: `'?'`},
		{line: "app ~/data", bad: `'~'`},
		{line: "app {1..3}", bad: `'{'`},
		{line: "app {a,b}", bad: `'{'`},
		{line: "app # comment", bad: `'#'`},
		{line: "(app)", bad: `'('`},
		{line: "app 'open", bad: "unclosed single quote"},
		{line: `app "open`, bad: "unclosed double quote"},
		{line: `app \`, bad: "trailing backslash"},
	} {
		got, err := SplitWords(tc.line)
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("SplitWords(%q) = %q, %v; want an error naming %s", tc.line, got, err, tc.bad)
		case tc.bad == "" && (err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00")):
			t.Errorf("SplitWords(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
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
