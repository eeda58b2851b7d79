package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// maxTmuxPanes: more panes than this do not fit a window readably;
// `gpulaunch top` and `logs -f` serve larger runs.
const maxTmuxPanes = 16

// checkTmux says why --tmux cannot work here, before anything starts.
func (a *app) checkTmux(n int) (string, error) {
	if a.env["TMUX"] == "" {
		return "", usagef("--tmux opens its panes in the tmux session it runs in, and this shell is not in tmux (TMUX is not set): start tmux (or smux) first, or drop --tmux and use `gpulaunch top` / `gpulaunch logs -f N` from another shell")
	}
	if n > maxTmuxPanes {
		return "", usagef("--tmux opens one pane per instance, and %d panes do not fit a window (at most %d): drop --tmux and use `gpulaunch top` and `gpulaunch logs -f N`", n, maxTmuxPanes)
	}
	path, err := exec.LookPath("tmux")
	if err != nil {
		return "", usagef("--tmux: tmux is not in PATH")
	}
	return path, nil
}

// openTmuxWindow opens a window in the current tmux session with one pane
// per instance following its output (`gpulaunch logs -f`) and one pane
// running `gpulaunch top`, all talking to this run's control socket.
// Panes stay after the run ends (remain-on-exit), so the last output can
// still be read.
func (a *app) openTmuxWindow(tmux, socket string, n int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tm := func(args ...string) (string, error) {
		cmd := exec.Command(tmux, args...)
		cmd.Env = a.baseEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return strings.TrimSpace(string(out)), nil
	}
	paneCmd := func(args ...string) string {
		q := []string{"exec", shellQuote(self)}
		for _, s := range args {
			q = append(q, shellQuote(s))
		}
		return strings.Join(q, " ")
	}
	logs := func(i int) string { return paneCmd("logs", "-f", "--socket", socket, fmt.Sprint(i)) }
	first, err := tm("new-window", "-P", "-F", "#{window_id} #{pane_id}", "-n", fmt.Sprintf("gpulaunch-%d", a.pid), logs(0))
	if err != nil {
		return err
	}
	window, pane, _ := strings.Cut(first, " ")
	for _, opt := range [][]string{{"remain-on-exit", "on"}, {"pane-border-status", "top"}, {"pane-border-format", " #{pane_title} "}} {
		if _, err := tm("set-option", "-w", "-t", window, opt[0], opt[1]); err != nil {
			return err
		}
	}
	title := func(pane, t string) error { _, err := tm("select-pane", "-t", pane, "-T", t); return err }
	if err := title(pane, "instance 0"); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		cmd, name := logs(i), fmt.Sprintf("instance %d", i)
		if i == n {
			cmd, name = paneCmd("top", "--socket", socket), "gpulaunch top"
		}
		// tiled after each split keeps room for the next one
		if pane, err = tm("split-window", "-d", "-t", window, "-P", "-F", "#{pane_id}", cmd); err != nil {
			return err
		}
		if err := title(pane, name); err != nil {
			return err
		}
		if _, err := tm("select-layout", "-t", window, "tiled"); err != nil {
			return err
		}
	}
	return nil
}

// shellQuote quotes s for the shell tmux runs pane commands with.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
