package taskqueue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// supported lists the replacement strings FillTemplate knows, for the
// message that refuses another.
const supported = "{} {.} {/} {//} {/.} {#} {%}, and {N} {N.} {N/} {N//} {N/.} for column N (from 1; -N from the end; columns with --colsep)"

// lineless is why a string of the input line is refused where there is
// none (FillFileName's rule 3).
const lineless = "a string of --each-line's input line, and a --tasks line is a whole command, not input: name a task's file by its number, {#} or %t, or its slot, {%}"

// TemplateError is a replacement string that cannot be filled. Line says
// whether it depends on the input line (a column the line lacks) rather
// than on the command alone.
type TemplateError struct {
	Text string // the replacement string as written
	Why  string
	Line bool
}

func (e *TemplateError) Error() string { return e.Text + ": " + e.Why }

// FillTemplate fills GNU parallel's replacement strings in an --each-line
// COMMAND for one task, in one pass. The rules, in order:
//  1. A replacement string is {BODY} with BODY one of "" (the line), "."
//     "/" "//" "/." (the line, modified: rule 3), "#" (the task number),
//     "%" (the slot, from 1), or a column: N or -N followed by one of
//     the same modifiers. What a replacement writes is never read again:
//     a line holding "{#}" stays as it is.
//  2. Columns count from 1; -N counts from the end. Without --colsep the
//     line is the one column, so {1} is {}. {0} and a column the line
//     does not have are refused (parallel would fill in nothing, and the
//     task would silently run without that argument).
//  3. Modifiers are parallel's: "." drops the extension (a last "." with
//     no "/" or "." after it, and what follows), "/" drops the directory
//     (everything to the last "/"), "//" keeps only the directory (Perl's
//     dirname, as parallel), "/." drops both.
//  4. Anything else parallel would read as a replacement string — a BODY
//     of digits and "-+./#%" alone ({..} {+/} {##} {0#}) or a Perl
//     expression {= … =} — is refused, naming it. Other braces
//     ({"a":1}, {print}, ${HOME}) are the command's own text.
//  5. When no argument holds a replacement string, the input is appended
//     as parallel appends {}: the line as one argument, or with --colsep
//     each column as an argument of its own.
//  6. While the slot is not known (Slot 0) {%} stays as written; the
//     template itself, not its filled text, is filled again once it is.
//  7. A Perl expression that an unquoted shell split into several words
//     (typed {= s/,/_/g =}, given as `{=` `s/,/_/g` `=}`) is read as
//     parallel reads it — the words joined by blanks — and refused as
//     rule 4 refuses it in one word.
//  8. In the script a shell is given to run (sh -c SCRIPT, bash -lc …:
//     shellScript), a replacement writes its value shell-quoted, as GNU
//     parallel quotes what it writes into the command its shell runs: a
//     line `x; rm -rf ~` is one word there, not a second command. Every
//     other argument is an argument, never read by a shell, and gets the
//     value as it is.
func FillTemplate(argv []string, in job.Input) ([]string, error) {
	if err := splitPerl(argv); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(argv)+len(in.Cols)+1)
	used := false
	script := shellScript(argv)
	for i, a := range argv {
		f := filler{in: in, quote: asIs}
		if i == script {
			f.quote = ShellQuote
		}
		filled, any, err := f.word(a)
		if err != nil {
			return nil, err
		}
		used = used || any
		out = append(out, filled)
	}
	if !used {
		out = append(out, appended(in)...)
	}
	return out, nil
}

// FillFileName fills the replacement strings of an -o or -e file pattern
// for one task, by FillTemplate's rules 1 to 4 and 6, but for these:
//  1. Nothing is appended (rule 5 is a command's).
//  2. Every value a replacement writes goes through quote, so that what
//     reads the name next (srun's % letters: a line holding "50%") takes
//     it as it is.
//  3. Without an input line — a --tasks line is a whole command, not
//     input (noLine) — only {#} and {%} are filled; a string of the line
//     ({} {.} {1} …) is refused, naming it.
func FillFileName(pattern string, in job.Input, noLine bool, quote func(string) string) (string, error) {
	if !strings.Contains(pattern, "{") {
		return pattern, nil
	}
	if err := splitPerl([]string{pattern}); err != nil {
		return "", err
	}
	f := filler{in: in, quote: quote, noLine: noLine}
	s, _, err := f.word(pattern)
	return s, err
}

// asIs is FillTemplate's quote: a command's argument is not read again.
func asIs(s string) string { return s }

// shells are the programs whose -c script rule 8 quotes in.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "tcsh", "csh"}

// shellScript is the index in argv of the script a shell is given to run
// — the word after its first option that holds c (-c, -lc, -ec) — or -1
// when argv is no shell with a script (rule 8).
func shellScript(argv []string) int {
	if len(argv) < 3 || !slices.Contains(shells, argv[0][strings.LastIndexByte(argv[0], '/')+1:]) {
		return -1
	}
	for i, a := range argv[1 : len(argv)-1] {
		switch {
		case !strings.HasPrefix(a, "-") || a == "--":
			return -1 // an operand before any -c: a script file, not a string
		case !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'c'):
			return i + 2
		}
	}
	return -1
}

// ShellQuote writes s as one word for a POSIX shell: as it is when no
// character of it is special to a shell, else in single quotes (each
// quote in s closed, escaped and reopened) — as GNU parallel quotes a
// replacement string: `exit {}` of 0 is `exit 0`, as parallel's joblog
// records it, not `exit '0'`.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, notShellPlain) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellJoin writes argv as a shell would read it back, each word by
// ShellQuote, but a first word with "=" quoted too, or the shell would
// read it as an assignment: the joblog's Command column.
func ShellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = ShellQuote(a)
		if i == 0 && out[i] == a && strings.Contains(a, "=") {
			out[i] = "'" + a + "'"
		}
	}
	return strings.Join(out, " ")
}

// notShellPlain: r may mean something to a shell in a word; only the
// plain set is written unquoted.
func notShellPlain(r rune) bool {
	return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", r)
}

// filler fills the replacement strings of one task.
type filler struct {
	in     job.Input
	quote  func(string) string // what a replacement writes goes through it
	noLine bool                // no input line: only {#} and {%} (FillFileName's rule 3)
}

// splitPerl is rule 7: a Perl expression in argv joined by blanks, as
// parallel joins a command's words before it reads them.
func splitPerl(argv []string) error {
	opens := false
	for _, a := range argv {
		opens = opens || strings.Contains(a, "{")
	}
	if !opens {
		return nil
	}
	joined := strings.Join(argv, " ")
	for i := strings.IndexByte(joined, '{'); i >= 0; {
		if perl := perlExpression(joined[i:]); perl != "" {
			why := "a Perl expression, which gpulaunch does not run; it supports " + supported
			if strings.Contains(perl, " ") && len(argv) > 1 && !inOneWord(argv, perl) {
				why = "a Perl expression (the words " + strings.Join(quoteWords(strings.Split(perl, " ")), " ") + ": a shell split it where it was not quoted), which gpulaunch does not run; it supports " + supported
			}
			return &TemplateError{Text: perl, Why: why}
		}
		next := strings.IndexByte(joined[i+1:], '{')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return nil
}

// inOneWord: one of argv holds perl whole.
func inOneWord(argv []string, perl string) bool {
	for _, a := range argv {
		if strings.Contains(a, perl) {
			return true
		}
	}
	return false
}

// quoteWords shows words as the shell split them: `{=` `s/,/_/g` `=}`.
func quoteWords(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "`" + w + "`"
	}
	return out
}

// appended is what rule 5 adds to a command without replacement strings.
func appended(in job.Input) []string {
	if in.Cols != nil {
		return in.Cols
	}
	return []string{in.Line}
}

// word fills one argument, saying whether it held a replacement string.
func (f filler) word(a string) (string, bool, error) {
	if !strings.Contains(a, "{") {
		return a, false, nil
	}
	var b strings.Builder
	used := false
	for {
		i := strings.IndexByte(a, '{')
		if i < 0 {
			b.WriteString(a)
			return b.String(), used, nil
		}
		b.WriteString(a[:i])
		rest := a[i:]
		if perl := perlExpression(rest); perl != "" {
			return "", false, &TemplateError{Text: perl, Why: "a Perl expression, which gpulaunch does not run; it supports " + supported}
		}
		end := strings.IndexByte(rest, '}')
		if end < 0 || !replacementLike(rest[1:end]) {
			b.WriteByte('{')
			a = rest[1:]
			continue
		}
		s, err := f.replacement(rest[1:end])
		if err != nil {
			return "", false, err
		}
		b.WriteString(s)
		used = true
		a = rest[end+1:]
	}
}

// perlExpression is the {= … =} (or {N= … =}) that s starts with, if any
// (rule 4).
func perlExpression(s string) string {
	body := strings.TrimLeft(s[1:], "-0123456789")
	if !strings.HasPrefix(body, "=") {
		return ""
	}
	end := strings.Index(body[1:], "=}")
	if end < 0 {
		return ""
	}
	return s[:len(s)-len(body)+1+end+2]
}

// ReplacementIn is the first of GNU parallel's replacement strings in s
// — {} {.} {1} {#} {%} {= … =}, any that parallel would read as one
// (replacementLike) — and "" when s holds none. It is for the names
// where none is filled (a run's -o, a joblog's, a report's), so that each
// is refused by name instead of written as it is ({}.log).
func ReplacementIn(s string) string {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		if perl := perlExpression(s[i:]); perl != "" {
			return perl
		}
		if j := strings.IndexByte(s[i:], '}'); j > 0 && !strings.ContainsRune(s[i+1:i+j], '{') && replacementLike(s[i+1:i+j]) {
			return s[i : i+j+1]
		}
		next := strings.IndexByte(s[i+1:], '{')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return ""
}

// replacementLike: would parallel read {body} as a replacement string
// (rules 1 and 4)? Its bodies are made of digits and "-+./#%" alone.
func replacementLike(body string) bool {
	return strings.Trim(body, "0123456789-+./#%") == ""
}

// replacement fills one replacement string {body} (rules 1 to 3, 6).
func (f filler) replacement(body string) (string, error) {
	in := f.in
	switch body {
	case "#":
		return strconv.Itoa(in.Seq), nil
	case "%":
		if in.Slot == 0 {
			return "{%}", nil
		}
		return strconv.Itoa(in.Slot), nil
	}
	if f.noLine {
		return "", f.withoutLine(body)
	}
	if v, ok := modified(in.Line, body); ok {
		return f.quote(v), nil
	}
	digits := strings.TrimLeft(body, "-0123456789")
	pos, err := strconv.Atoi(body[:len(body)-len(digits)])
	if err != nil || pos == 0 {
		return "", &TemplateError{Text: "{" + body + "}", Why: "not a replacement string gpulaunch knows; it supports " + supported}
	}
	col, err := column(in, pos, body)
	if err != nil {
		return "", err
	}
	if v, ok := modified(col, digits); ok {
		return f.quote(v), nil
	}
	return "", &TemplateError{Text: "{" + body + "}", Why: "not a replacement string gpulaunch knows; it supports " + supported}
}

// withoutLine is FillFileName's rule 3: {body}, which is not {#} or
// {%}, is refused: as a string of the line when it is one, else as a
// string gpulaunch does not know.
func (f filler) withoutLine(body string) error {
	probe := filler{in: job.Input{Line: "x", Cols: []string{"x"}}, quote: asIs}
	var te *TemplateError
	if _, err := probe.replacement(body); err != nil && !(errors.As(err, &te) && te.Line) {
		return err
	}
	return &TemplateError{Text: "{" + body + "}", Why: lineless}
}

// column is the line's column pos, from 1, or from the end when negative
// (rule 2).
func column(in job.Input, pos int, body string) (string, error) {
	cols := in.Cols
	if cols == nil {
		cols = []string{in.Line}
	}
	i := pos - 1
	if pos < 0 {
		i = len(cols) + pos
	}
	if i >= 0 && i < len(cols) {
		return cols[i], nil
	}
	if in.Cols == nil {
		return "", &TemplateError{Text: "{" + body + "}", Why: "without --colsep the line is one column ({1}); give --colsep REGEX to split it into columns"}
	}
	return "", &TemplateError{Text: "{" + body + "}", Line: true,
		Why: fmt.Sprintf("the line has %d column(s) split by --colsep: fix the line or the command", len(cols))}
}

// modified applies a modifier to s (rule 3); false: mod is none of them.
func modified(s, mod string) (string, bool) {
	switch mod {
	case "":
		return s, true
	case ".":
		return noExtension(s), true
	case "/":
		return basename(s), true
	case "//":
		return dirname(s), true
	case "/.":
		return noExtension(basename(s)), true
	}
	return "", false
}

// noExtension drops a last "." that has no "/" or "." after it, and what
// follows it: parallel's s:\.[^/.]*$::.
func noExtension(s string) string {
	i := strings.LastIndexAny(s, "./")
	if i >= 0 && s[i] == '.' {
		return s[:i]
	}
	return s
}

// basename drops everything to the last "/": parallel's s:^.*/::.
func basename(s string) string { return s[strings.LastIndexByte(s, '/')+1:] }

// dirname is Perl's File::Basename::dirname on Unix, which parallel's
// {//} uses: trailing slashes are not a component ("a/b/" is in "a"), a
// name without a directory is in ".", and "/" is its own.
func dirname(s string) string {
	t := strings.TrimRight(s, "/")
	if t == "" {
		if s == "" {
			return "."
		}
		return "/"
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	d := strings.TrimRight(t[:i], "/")
	if d == "" {
		return "/"
	}
	return d
}
