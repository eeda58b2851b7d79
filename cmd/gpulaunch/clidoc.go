package main

import (
	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// The command line as the manual page (man.go) and the shell completions
// (completion.go) show it, described for pkg/clidoc, which renders both.
// Both are generated at run time from what this binary has — the flag set each command builds (commandFlagSets), its
// usage text, its line in `gpulaunch --help` — so that neither can drift
// from the flags the commands take: a flag added later is in both, and
// man_test.go and completion_test.go walk the flag sets to hold them to it.

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
func commandOperands() map[string][]clidoc.Operand {
	return map[string][]clidoc.Operand{
		"run":        {{Command: true}},
		"exec":       {{Command: true}},
		"scale":      {{Command: true}},
		"help":       {{Choices: commands}},
		"completion": {{Choices: clidoc.Shells}},
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
// with its flags from the flag set the command builds (clidoc.Sources).
func cliCommands() []clidoc.Command {
	return clidoc.Sources{Names: commands, FlagSets: commandFlagSets(), Usages: commandUsages(), Summaries: commandSummaries(),
		Operands: commandOperands(), Choices: flagChoices, Files: fileFlags}.Commands()
}

// commandSummaries are the commands' lines in `gpulaunch --help`'s
// Commands section, and for the two it does not list, version and help,
// their own.
func commandSummaries() map[string]string {
	out := clidoc.Summaries(topUsage())
	for name, s := range map[string]string{"version": "print this gpulaunch's version", "help": "the main help, or a command's"} {
		if _, listed := out[name]; !listed {
			out[name] = s
		}
	}
	return out
}
