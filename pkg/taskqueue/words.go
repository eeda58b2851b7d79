package taskqueue

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// LineError is what is wrong with a task line that SplitWords refuses,
// with the fix; Kind says which fix.
type LineError struct {
	Kind LineFault
	What string // the character or construct, as the message names it
	// Else is the fix besides --shell for NeedsShell; "" is "quote it".
	Else string
}

// LineFault is why SplitWords refused a line: each has its own fix.
type LineFault int

const (
	// NeedsShell: a shell feature (a pipe, a variable, a glob, an
	// assignment): --shell runs the line as written.
	NeedsShell LineFault = iota
	// Syntax: an unclosed quote, which a shell refuses too: --shell would
	// not help; the line must be fixed.
	Syntax
	// Continued: a last backslash, which in a script joins the next
	// line: a task is one line, with --shell too (and in GNU parallel).
	Continued
)

func (e *LineError) Error() string {
	switch e.Kind {
	case Syntax:
		return e.What + ": a syntax error, which a shell refuses too (--shell does not help): close the quote, or escape it with a backslash"
	case Continued:
		return "the line ends in a backslash, as if the next line continued it: a task is one line (the next line is a task of its own, with --shell too, as in GNU parallel): put the whole command on this line"
	}
	alt := e.Else
	if alt == "" {
		alt = "quote it"
	}
	return e.What + ", which needs a shell: add --shell to run each line with /bin/sh -c, or " + alt
}

// SplitWords splits a task line into argv the way a shell splits a simple
// command, and refuses what it cannot run as the shell would, naming it
// (a *LineError), so that a task never silently runs differently from the
// line the user wrote. The rules, in order:
//  1. Blanks (spaces, tabs) separate words; single quotes keep
//     everything; double quotes keep everything but \" \\ \$ \`; a
//     backslash escapes the next character.
//  2. What only a shell does needs a shell (NeedsShell): pipes,
//     redirections, lists and subshells (| & ; < > ( )), expansions ($
//     and `, also inside double quotes), globs (* ? [), ~ at a word's
//     start, ! as a word, # starting a word (a comment), braces that a
//     shell expands ({a,b} {1..3} within one word), a first word
//     NAME=VALUE (a variable set for the command: VAR=1 app), and a first
//     word that only a shell runs (shellOnly: cd, export, if, …), which
//     as a program is "command not found" or does nothing.
//  3. An unclosed quote is a syntax error (Syntax): a shell refuses it
//     too.
//  4. A last backslash continues the line in a script (Continued): the
//     next line is not joined to it.
func SplitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false // quoted: the word so far holds a quote or a backslash
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord, quoted = false, false
			}
		case c == '\\':
			if i+1 == len(line) {
				return nil, &LineError{Kind: Continued}
			}
			i++
			cur.WriteByte(line[i])
			inWord, quoted = true, true
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, &LineError{Kind: Syntax, What: fmt.Sprintf("an unclosed single quote (column %d)", i+1)}
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord, quoted = true, true
		case c == '"':
			open := i
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
					i++
				case line[i] == '$' || line[i] == '`':
					return nil, &LineError{Kind: NeedsShell, What: fmt.Sprintf("%q inside double quotes (an expansion, a shell feature)", line[i])}
				}
				cur.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, &LineError{Kind: Syntax, What: fmt.Sprintf("an unclosed double quote (column %d)", open+1)}
			}
			inWord, quoted = true, true
		case strings.IndexByte("|&;<>()$`", c) >= 0:
			return nil, &LineError{Kind: NeedsShell, What: fmt.Sprintf("%q (a shell feature)", c)}
		case strings.IndexByte("*?[]{}~!#", c) >= 0:
			// special to a shell only in some places: a comment starts a
			// word, a glob anywhere, ~ and ! at a word's start, braces
			// with a list or a range
			if c == '#' && !inWord || c != '#' && shellSpecialHere(line, i, inWord) {
				return nil, &LineError{Kind: NeedsShell, What: fmt.Sprintf("%q (a shell feature)", c)}
			}
			cur.WriteByte(c)
			inWord = true
		case c == '=' && len(words) == 0 && !quoted && isShellName(cur.String()):
			set := line[i-cur.Len() : wordEnd(line, i)]
			return nil, &LineError{Kind: NeedsShell, What: set + " (a variable set for the command, a shell feature)", Else: "start the line with env: env " + set + " …"}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) > 0 && slices.Contains(shellOnly, words[0]) {
		return nil, &LineError{Kind: NeedsShell, What: fmt.Sprintf("%s (a shell's own command, which no program runs)", words[0]),
			Else: "run it in a script of your own"}
	}
	return words, nil
}

// shellOnly are the builtins that work on the shell's own state, and its
// keywords: run as a program, each is "command not found" (127) or, where
// a system ships one (cd), changes nothing. Builtins that are programs
// too (echo, test, printf, kill, true) are not here.
var shellOnly = []string{"cd", "export", "source", ".", "alias", "unalias", "unset", "set", "ulimit", "umask", "eval", "exec",
	"exit", "return", "shift", "trap", "wait", "read", "readonly", "declare", "local", "typeset", "let", "shopt", "builtin",
	"pushd", "popd", "dirs", "hash", "jobs", "fg", "bg", "disown", "if", "then", "else", "elif", "fi", "for", "while", "until",
	"case", "esac", "do", "done", "function", "select", "{", "}", "[[", "]]", "!"}

// isShellName: s is a shell variable's name, so that s=… as a command's
// first word is an assignment (rule 2).
func isShellName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

// wordEnd is where the word holding line[i] ends: at the first blank or
// shell operator outside quotes, or the line's end.
func wordEnd(line string, i int) int {
	for ; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t' || strings.IndexByte("|&;<>()", c) >= 0:
			return i
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return len(line)
			}
			i += j + 1
		}
	}
	return len(line)
}

// braceSequence is a shell's brace range: {1..9} {a..e} {0..10..2};
// compiled at its first use, not at every start (TestStartPathInits).
var braceSequence = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\{(-?[0-9]+\.\.-?[0-9]+|[a-zA-Z]\.\.[a-zA-Z])(\.\.-?[0-9]+)?\}$`)
})

// shellSpecialHere: would a shell treat the character at i specially?
// Globs (* ? [) always; ~ only at a word's start; ! only as a word of its
// own; { only as brace expansion, which a shell does within one word: a
// comma before the next } ({a,b}), or a range ({1..3}). Anything else is
// passed through as an ordinary character ({}, {=, {..}).
func shellSpecialHere(line string, i int, inWord bool) bool {
	switch c := line[i]; c {
	case '*', '?', '[':
		return true
	case ']':
		return false
	case '~':
		return !inWord
	case '!':
		return !inWord && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t')
	case '{':
		word := line[i:wordEnd(line, i)]
		end := strings.IndexByte(word, '}')
		return end > 0 && (strings.Contains(word[:end], ",") || braceSequence().MatchString(word[:end+1]))
	}
	return false
}
