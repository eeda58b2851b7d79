// Package clidoc renders a command line's documentation from a plain
// description of its commands (Command, Flag, Operand): the bash, zsh and
// fish completion scripts, the roff manual page, and the "did you mean"
// of a mistyped command or flag (edit distance). It holds the file
// formats and those rules, never a flag set's wiring: the program builds
// the description from the flag sets its commands build (cmd/gpulaunch's
// clidoc.go) and prints what is rendered.
package clidoc
