package main

import (
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/buildinfo"
	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
)

// `gpulaunch completion bash|zsh|fish`: the shell's completion script,
// printed as gh's and rclone's are (Spack's recipes run it to install
// them), rendered by pkg/clidoc from the commands' flag sets (clidoc.go).

const completionUsage = `Usage: gpulaunch completion bash|zsh|fish

Prints the completion script of a shell for gpulaunch's commands, their flags
and the values these take (choices, files), generated from the flags this
binary has. 'make install' puts each where its shell looks (docs/install.md);
by hand:
  gpulaunch completion bash > ~/.local/share/bash-completion/completions/gpulaunch
  gpulaunch completion zsh > ~/.zfunc/_gpulaunch     # a directory in $fpath, before compinit
  gpulaunch completion fish > ~/.config/fish/completions/gpulaunch.fish
  source <(gpulaunch completion bash)                # this bash only`

func completionFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("completion", pflag.ContinueOnError) }

// completion is `gpulaunch completion SHELL`.
func (a *app) completion(args []string) error {
	fs := completionFlagSet()
	if done, err := a.parseFlags(fs, args, completionUsage); done || err != nil {
		return err
	}
	switch {
	case fs.NArg() == 0:
		return usagef("completion needs a shell: `gpulaunch completion bash`, `zsh` or `fish`")
	case fs.NArg() > 1:
		return usagef("completion takes one shell (got %q): `gpulaunch completion bash`, `zsh` or `fish`", strings.Join(fs.Args(), " "))
	}
	script, ok := clidoc.Completion(fs.Arg(0), cliCommands(), buildinfo.Version(version, debug.ReadBuildInfo))
	if !ok {
		return usagef("completion %q: no completion for that shell: give bash, zsh or fish", fs.Arg(0))
	}
	return writeDoc(a.stdout, "the "+fs.Arg(0)+" completion script", script)
}
