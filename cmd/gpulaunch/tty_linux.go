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
