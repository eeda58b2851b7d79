package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/gpulaunch/gpulaunch/pkg/tmux"
)

// checkTmux says why --tmux cannot work here, before anything starts.
func (a *app) checkTmux(n int) (string, error) {
	if a.env["TMUX"] == "" {
		return "", usagef("--tmux opens its panes in the tmux session it runs in, and this shell is not in tmux (TMUX is not set): start tmux (or smux) first, or drop --tmux and use `gpulaunch top` / `gpulaunch logs -f N` from another shell")
	}
	if n > tmux.MaxPanes {
		return "", usagef("--tmux opens one pane per instance, and %d panes do not fit a window (at most %d): drop --tmux and use `gpulaunch top` and `gpulaunch logs -f N`", n, tmux.MaxPanes)
	}
	path, err := exec.LookPath("tmux")
	if err != nil {
		return "", usagef("--tmux: tmux is not in PATH")
	}
	return path, nil
}

// openTmuxWindow opens --tmux's window (pkg/tmux) in the current tmux
// session, its panes talking to this run's control socket.
func (a *app) openTmuxWindow(tmuxPath, socket string, n int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return tmux.Window{Tmux: tmuxPath, Self: self, Env: a.baseEnv(), Socket: socket, N: n, Name: fmt.Sprintf("gpulaunch-%d", a.pid)}.Open()
}
