package main

import (
	"io"
	"slices"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
)

// Help, "did you mean" and the version: what a user who typed something
// slightly wrong, or asks what this binary is, is told.

const versionUsage = `Usage: gpulaunch version
       gpulaunch --version

The version of this gpulaunch: what make build stamped (the VERSION file's), else
what the Go toolchain recorded in the binary — the module's version for
'go install …@vX.Y.Z', the commit (+dirty with uncommitted changes) for a
'go build' in a checkout — else "dev". Then the commit, the build date (the
commit's date, so that a rebuild is the same file), the Go toolchain and
platform, and whether NVML is compiled in (a CGO_ENABLED=0 build has no NVML:
no utilisation telemetry, no MIG).
`

// commands are gpulaunch's subcommands, for `help COMMAND` and "did you mean".
var commands = []string{"run", "exec", "info", "plan", "status", "top", "logs", "signal", "report", "scale", "completion", "man", "version", "help"}

// help is `gpulaunch help [COMMAND]`: the main help, or COMMAND's own
// (as `gpulaunch COMMAND --help`, like git and go help).
func (a *app) help(args []string) error {
	switch {
	case len(args) == 0:
		io.WriteString(a.stdout, topUsage())
		return nil
	case len(args) > 1:
		return usagef("help takes one COMMAND (got %q): run `gpulaunch help %s`", strings.Join(args, " "), args[0])
	case args[0] == "help":
		io.WriteString(a.stdout, topUsage())
		return nil
	case slices.Contains(commands, args[0]):
		return a.dispatch([]string{args[0], "--help"})
	}
	if near := clidoc.Closest(args[0], commands); near != "" {
		return usagef("help %q: no such command: did you mean `gpulaunch help %s`?", args[0], near)
	}
	return usagef("help %q: no such command: the commands are %s", args[0], strings.Join(commands, ", "))
}
