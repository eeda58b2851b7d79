package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal: w is a terminal (top redraws only there).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// termWidth is the width of the terminal w is, in columns: 0 when w is
// not a terminal (a table is then printed whole), 80 when the terminal
// does not say.
func termWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 80
	}
	return int(ws.Col)
}
