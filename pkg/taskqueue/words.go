package taskqueue

import (
	"fmt"
	"strings"
)

// SplitWords splits a task line into argv the way a shell splits a simple
// command — blanks separate words, single quotes keep everything, double
// quotes keep everything but \" \\ \$ \`, a backslash escapes the next
// character — and refuses what only a shell can do (pipes, redirections,
// variables, globs, lists), naming the character, so that a task never
// silently runs differently from the line the user wrote.
func SplitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 == len(line) {
				return nil, fmt.Errorf("a trailing backslash")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("an unclosed single quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
					i++
				case line[i] == '$' || line[i] == '`':
					return nil, fmt.Errorf("%q inside double quotes (an expansion)", line[i])
				}
				cur.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, fmt.Errorf("an unclosed double quote")
			}
			inWord = true
		case strings.IndexByte("|&;<>()$`", c) >= 0:
			return nil, fmt.Errorf("%q (a shell feature)", c)
		case strings.IndexByte("*?[]{}~!#", c) >= 0:
			// special to a shell only in some places: a comment starts a
			// word, a glob anywhere, ~ and ! at a word's start, braces
			// with a list or a range
			if c == '#' && !inWord || c != '#' && shellSpecialHere(line, i, inWord) {
				return nil, fmt.Errorf("%q (a shell feature)", c)
			}
			cur.WriteByte(c)
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// shellSpecialHere: would a shell treat the character at i specially?
// Globs (* ? [) always; ~ only at a word's start; ! only as a word of its
// own; { } only as brace expansion with a comma or "..". Anything else is
// passed through as an ordinary character.
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
		end := strings.IndexByte(line[i:], '}')
		return end > 0 && (strings.Contains(line[i:i+end], ",") || strings.Contains(line[i:i+end], ".."))
	}
	return false
}
