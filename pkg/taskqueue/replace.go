package taskqueue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// supported lists the replacement strings FillTemplate knows, for the
// message that refuses another.
const supported = "{} {.} {/} {//} {/.} {#} {%}, and {N} {N.} {N/} {N//} {N/.} for column N (from 1; -N from the end; columns with --colsep)"

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
func FillTemplate(argv []string, in job.Input) ([]string, error) {
	out := make([]string, 0, len(argv)+len(in.Cols)+1)
	used := false
	for _, a := range argv {
		filled, any, err := fillWord(a, in)
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

// appended is what rule 5 adds to a command without replacement strings.
func appended(in job.Input) []string {
	if in.Cols != nil {
		return in.Cols
	}
	return []string{in.Line}
}

// fillWord fills one argument, saying whether it held a replacement string.
func fillWord(a string, in job.Input) (string, bool, error) {
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
		s, err := replacement(rest[1:end], in)
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

// replacementLike: would parallel read {body} as a replacement string
// (rules 1 and 4)? Its bodies are made of digits and "-+./#%" alone.
func replacementLike(body string) bool {
	return strings.Trim(body, "0123456789-+./#%") == ""
}

// replacement fills one replacement string {body} (rules 1 to 3, 6).
func replacement(body string, in job.Input) (string, error) {
	switch body {
	case "#":
		return strconv.Itoa(in.Seq), nil
	case "%":
		if in.Slot == 0 {
			return "{%}", nil
		}
		return strconv.Itoa(in.Slot), nil
	}
	if v, ok := modified(in.Line, body); ok {
		return v, nil
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
		return v, nil
	}
	return "", &TemplateError{Text: "{" + body + "}", Why: "not a replacement string gpulaunch knows; it supports " + supported}
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
