// Package clidoc renders a command line's documentation from a plain
// description of its commands (Command, Flag, Operand): the bash, zsh and
// fish completion scripts, the roff manual page, and the "did you mean"
// of a mistyped command or flag (edit distance). It holds the file
// formats and those rules, never a flag set's wiring: the program names
// the flag sets its commands build, their usages and summaries (Sources,
// cmd/gpulaunch's clidoc.go), Sources.Commands reads them, and the
// program prints what is rendered (Completion by shell, ManPage).
package clidoc
