package clidoc

import (
	"strings"

	"github.com/spf13/pflag"
)

// Command is one command as the manual page and the completions show it:
// its name, its line in the main help, its --help text, its flags and the
// words after them. The program builds them from the flag set each
// command itself builds, its usage text and its line in the main help,
// so that neither can drift from the flags the commands take.
type Command struct {
	Name     string
	Summary  string
	Usage    string
	Flags    []Flag
	Operands []Operand
}

// Flag is one flag of a command, as pflag holds it, with what its value
// can be.
type Flag struct {
	Name, Short string
	Usage       string // pflag's usage text
	Default     string // "" when the default is nothing (0, false, "")
	TakesValue  bool   // false for a boolean (--json), true for --ntasks N
	ValueName   string // what the value is called: FILE, N, a choice list
	Choices     []string
	File        bool // the value names a file
}

// Operand is a word after a command's flags, for the completions.
type Operand struct {
	Command bool     // the program to run, then its own words
	File    bool     // a file
	Choices []string // one of these
}

// FlagOf reads one flag, whose value is one of choices (none: any) and
// names a file if file. The rules, in order:
//
//  1. A flag takes a value unless pflag gives it one when it stands
//     alone (a boolean's NoOptDefVal, "true").
//  2. Its default is shown unless it is nothing: "", 0, false, [].
//  3. Its value is named by the `word` its usage quotes (pflag's
//     convention), else by its choices when there are at most four
//     (a|b|c), else FILE for a file, N for a whole number, X for a
//     number, VALUE for anything else.
func FlagOf(f *pflag.Flag, choices []string, file bool) Flag {
	named, usage := pflag.UnquoteUsage(f)
	c := Flag{Name: f.Name, Short: f.Shorthand, Usage: usage, TakesValue: f.NoOptDefVal == ""}
	switch f.DefValue {
	case "", "0", "false", "[]":
	default:
		c.Default = f.DefValue
	}
	if !c.TakesValue {
		return c
	}
	c.Choices, c.File = choices, file
	switch {
	case usage != f.Usage:
		c.ValueName = named
	case len(c.Choices) > 0 && len(c.Choices) <= 4:
		c.ValueName = strings.Join(c.Choices, "|")
	case c.File:
		c.ValueName = "FILE"
	case f.Value.Type() == "int":
		c.ValueName = "N"
	case f.Value.Type() == "float64":
		c.ValueName = "X"
	default:
		c.ValueName = "VALUE"
	}
	return c
}

// Summaries are the commands' lines in the main help's Commands section
// (topUsage: a line per command, the name first, and its indented
// continuations), by command, without the pointer to the command's own
// help that ends some ("; 'gpulaunch COMMAND --help' …"), which is for
// the terminal.
func Summaries(topUsage string) map[string]string {
	out := map[string]string{}
	_, after, _ := strings.Cut(topUsage, "\nCommands:\n")
	section, _, _ := strings.Cut(after, "\n\n")
	name := ""
	for _, line := range strings.Split(section, "\n") {
		text := strings.TrimSpace(line)
		if !strings.HasPrefix(line, "   ") { // a command's first line
			var rest string
			name, rest, _ = strings.Cut(text, " ")
			out[name] = strings.TrimSpace(rest)
			continue
		}
		out[name] += " " + text
	}
	for name, s := range out {
		if i := strings.Index(s, "; 'gpulaunch "); i >= 0 {
			s = s[:i]
		}
		out[name] = strings.TrimSpace(s)
	}
	return out
}

// FirstSentence is the first sentence of a --help text's body (after its
// Usage: line): the summary of a command the main help does not list.
func FirstSentence(usage string) string {
	_, body, _ := strings.Cut(strings.TrimSpace(usage), "\n\n")
	s, _, _ := strings.Cut(strings.Join(strings.Fields(body), " "), ". ")
	return s
}

// shortUsage is a flag's usage cut to its first clause, for the
// completions' one-line descriptions.
func shortUsage(usage string) string {
	for _, sep := range []string{"; ", ": ", " ("} {
		if i := strings.Index(usage, sep); i >= 15 { // not "--ddp: rank 0's host"
			usage = usage[:i]
		}
	}
	if r := []rune(usage); len(r) > 80 {
		usage = string(r[:77]) + "..."
	}
	return usage
}

// Sources are what a program's commands are described from: what each
// command itself builds and says, by command name.
type Sources struct {
	Names     []string                  // the commands, in their order
	FlagSets  map[string]*pflag.FlagSet // each command's flags; none: nil
	Usages    map[string]string         // each command's --help text
	Summaries map[string]string         // each command's line (Summaries)
	Operands  map[string][]Operand
	Choices   func(flag string) []string // a flag's values, where a list (FlagOf)
	Files     map[string]bool            // the flags whose value names a file
}

// Commands are the commands of s, in its order. A command without a
// summary is summed up by its usage's FirstSentence; a hidden flag is
// left out (the command refuses it, with the reason).
func (s Sources) Commands() []Command {
	out := make([]Command, 0, len(s.Names))
	for _, name := range s.Names {
		c := Command{Name: name, Summary: s.Summaries[name], Usage: s.Usages[name], Operands: s.Operands[name]}
		if c.Summary == "" {
			c.Summary = FirstSentence(c.Usage)
		}
		if fs := s.FlagSets[name]; fs != nil {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					c.Flags = append(c.Flags, FlagOf(f, s.Choices(f.Name), s.Files[f.Name]))
				}
			})
		}
		out = append(out, c)
	}
	return out
}
