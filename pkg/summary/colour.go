//go:build linux

package summary

import (
	"io"
	"strings"
)

// UseColour says whether output to a writer gets colour (Paint):
//  1. never when NO_COLOR is set to anything but "" (no-color.org);
//  2. never on a terminal that says it has none (TERM=dumb);
//  3. else only when the writer is a terminal: a file, a pipe or a
//     batch job's output gets no escape codes.
func UseColour(terminal bool, env map[string]string) bool {
	switch {
	case env["NO_COLOR"] != "":
		return false
	case env["TERM"] == "dumb":
		return false
	}
	return terminal
}

// WarningsOnly passes on to W the lines that are warnings ("warning: …",
// in colour or not) and drops the rest: -q's summary.
type WarningsOnly struct {
	W    io.Writer
	line []byte
}

func (q *WarningsOnly) Write(p []byte) (int, error) {
	for _, c := range p {
		q.line = append(q.line, c)
		if c != '\n' {
			continue
		}
		if strings.HasPrefix(StripSGR(string(q.line)), "warning: ") {
			if _, err := q.W.Write(q.line); err != nil {
				return 0, err
			}
		}
		q.line = q.line[:0]
	}
	return len(p), nil
}

// StripSGR drops ANSI colour escapes (ESC [ … m) from s.
func StripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := strings.IndexByte(s[i:], 'm')
			if j > 0 {
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
