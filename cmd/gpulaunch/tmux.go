package main

import (
	"fmt"
	"os"

	"github.com/gpulaunch/gpulaunch/pkg/tmux"
)

// openTmuxWindow opens --tmux's window (pkg/tmux) in the current tmux
// session, its panes running this gpulaunch (with env) against the run's
// control socket; pid names the window.
func openTmuxWindow(tmuxPath, socket string, n int, env []string, pid int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return tmux.Window{Tmux: tmuxPath, Self: self, Env: env, Socket: socket, N: n, Name: fmt.Sprintf("gpulaunch-%d", pid)}.Open()
}
