package main

import (
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// The command line as the manual page (man.go) and the shell completions
// (completion.go) show it. Both are generated at run time from what this
// binary has — the flag set each command builds (commandFlagSets), its
// usage text, its line in `gpulaunch --help` — so that neither can drift
// from the flags the commands take: a flag added later is in both, and
// man_test.go and completion_test.go walk the flag sets to hold them to it.

// cliCommand is one command: its name, its line in `gpulaunch --help`,
// its --help text, its flags and the words after them.
type cliCommand struct {
	Name     string
	Summary  string
	Usage    string
	Flags    []cliFlag
	Operands []operand
}

// cliFlag is one flag of a command, as pflag holds it, with what its value
// can be.
type cliFlag struct {
	Name, Short string
	Usage       string // pflag's usage text
	Default     string // "" when the default is nothing (0, false, "")
	TakesValue  bool   // false for a boolean (--json), true for --ntasks N
	ValueName   string // what the value is called: FILE, N, a choice list
	Choices     []string
	File        bool // the value names a file
}

// operand is a word after a command's flags, for the completions.
type operand struct {
	Command bool     // the program to run, then its own words
	File    bool     // a file
	Choices []string // one of these
}

// commandUsages are every command's --help text, by command.
func commandUsages() map[string]string {
	return map[string]string{
		"run": runUsage, "exec": execUsage, "info": infoUsage, "plan": planUsage,
		"status": statusUsage, "top": topCommandUsage, "logs": logsUsage, "signal": signalUsage,
		"report": pictureUsage, "scale": scaleUsage, "version": versionUsage, "help": helpUsage,
		"completion": completionUsage, "man": manUsage,
	}
}

const helpUsage = `Usage: gpulaunch help [COMMAND]

The main help, or COMMAND's own (the same as 'gpulaunch COMMAND --help').`

// commandOperands are the words each command takes after its flags.
// signal's SIGNAL lists the signals a run forwards (README.md, "Signals")
// and KILL; it takes any other name or number too.
func commandOperands() map[string][]operand {
	return map[string][]operand{
		"run":        {{Command: true}},
		"exec":       {{Command: true}},
		"scale":      {{Command: true}},
		"help":       {{Choices: commands}},
		"completion": {{Choices: completionShells}},
		"report":     {{File: true}},
		"signal":     {{Choices: []string{"all"}}, {Choices: []string{"INT", "TERM", "HUP", "QUIT", "USR1", "USR2", "KILL"}}},
	}
}

// fileFlags are the flags whose value names a file (read or written).
var fileFlags = map[string]bool{"output": true, "error": true, "report": true, "joblog": true, "tasks": true,
	"each-line": true, "node-file": true, "simulate": true, "socket": true, "svg": true, "html": true, "json": true, "metrics-file": true}

// flagChoices are the values a word flag takes, where they are a short
// list; every choice is named in the flag's own usage text
// (TestFlagChoicesInUsage). --simulate takes a file too.
func flagChoices(name string) []string {
	switch name {
	case "mem-bind":
		return []string{"preferred", "bind", "none"}
	case "gpu-ids":
		return []string{"uuid", "index"}
	case "gpu-visibility":
		return []string{"own", "all"}
	case "gpu-vendor":
		return []string{"nvidia", "amd", "intel"}
	case "log-format":
		return []string{"console", "json"}
	case "ranks":
		return []string{"global", "local"}
	case "open-mode":
		return []string{"truncate", "append"}
	case "simulate":
		return gpu.SimulatedNames()
	}
	return nil
}

// cliCommands are gpulaunch's commands in the order of `commands`, each
// with its flags from the flag set the command builds.
func cliCommands() []cliCommand {
	sets, usages, operands, summaries := commandFlagSets(), commandUsages(), commandOperands(), commandSummaries()
	out := make([]cliCommand, 0, len(commands))
	for _, name := range commands {
		c := cliCommand{Name: name, Summary: summaries[name], Usage: usages[name], Operands: operands[name]}
		if c.Summary == "" { // top: the first sentence of its help
			_, body, _ := strings.Cut(strings.TrimSpace(c.Usage), "\n\n")
			c.Summary, _, _ = strings.Cut(strings.Join(strings.Fields(body), " "), ". ")
		}
		if fs := sets[name]; fs != nil {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden { // refused by this command, with the reason (scale's run flags)
					c.Flags = append(c.Flags, newCLIFlag(f))
				}
			})
		}
		out = append(out, c)
	}
	return out
}

// newCLIFlag reads one flag: a flag takes a value unless pflag gives it
// one when it stands alone (a boolean's NoOptDefVal, "true").
func newCLIFlag(f *pflag.Flag) cliFlag {
	// pflag's convention: a `word` in the usage names the value
	named, usage := pflag.UnquoteUsage(f)
	c := cliFlag{Name: f.Name, Short: f.Shorthand, Usage: usage, TakesValue: f.NoOptDefVal == ""}
	switch f.DefValue {
	case "", "0", "false", "[]":
	default:
		c.Default = f.DefValue
	}
	if !c.TakesValue {
		return c
	}
	c.Choices, c.File = flagChoices(f.Name), fileFlags[f.Name]
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

// commandSummaries are the commands' lines in `gpulaunch --help`'s
// Commands section (a line and its indented continuations), and for the
// two it does not list, version and help, their own.
func commandSummaries() map[string]string {
	out := map[string]string{"version": "print this gpulaunch's version", "help": "the main help, or a command's"}
	_, after, _ := strings.Cut(topUsage(), "\nCommands:\n")
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
		// the pointer to the command's own help is for the terminal
		if i := strings.Index(s, "; 'gpulaunch "); i >= 0 {
			s = s[:i]
		}
		out[name] = strings.TrimSpace(s)
	}
	return out
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

// thisVersion is what `gpulaunch version` prints after "gpulaunch ".
func thisVersion() string { return buildVersion(version, debug.ReadBuildInfo) }
