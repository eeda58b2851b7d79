package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
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
// per instance following its output (`gpulaunch logs -f`), in instance
// order row by row, and below them, the window's full width, a pane
// running `gpulaunch top`, tall enough for its table. All talk to this
// run's control socket. Panes stay after the run ends (remain-on-exit),
// so the last output can still be read.
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
	first, err := tm("new-window", "-P", "-F", "#{window_id} #{pane_id} #{window_height}", "-n", fmt.Sprintf("gpulaunch-%d", a.pid), logs(0))
	if err != nil {
		return err
	}
	var window, pane0 string
	var height int
	if _, err := fmt.Sscan(first, &window, &pane0, &height); err != nil {
		return fmt.Errorf("tmux new-window said %q: %v", first, err)
	}
	for _, opt := range [][]string{{"remain-on-exit", "on"}, {"pane-border-status", "top"}, {"pane-border-format", " #{pane_title} "}} {
		if _, err := tm("set-option", "-w", "-t", window, opt[0], opt[1]); err != nil {
			return err
		}
	}
	split := func(target, dir, size, cmd, title string) (string, error) {
		p, err := tm("split-window", "-d", dir, "-t", target, "-l", size, "-P", "-F", "#{pane_id}", cmd)
		if err != nil {
			return "", err
		}
		_, err = tm("select-pane", "-t", p, "-T", title)
		return p, err
	}
	if _, err := tm("select-pane", "-t", pane0, "-T", "instance 0"); err != nil {
		return err
	}
	if _, err := split(pane0, "-v", fmt.Sprint(topPaneHeight(n, height)), paneCmd("top", "--socket", socket), "gpulaunch top"); err != nil {
		return err
	}
	return tmuxGrid(n, pane0, split, logs)
}

// topPaneHeight is the top pane's height in lines: its table (a header,
// the command, the column names, a row per instance, a line of
// warnings), then top's "has finished" and room for tmux's notice of
// the dead pane (remain-on-exit), which tmux writes after a line feed on
// the pane's last line, scrolling the pane by one (the header goes, seen
// in an 80x40 tmux; the rows and their exits stay); at most half the
// window.
func topPaneHeight(n, window int) int {
	return max(5, min(n+8, window/2))
}

// tmuxGrid splits the area of pane0 (instance 0) into n panes, row by
// row, of cols = ⌈√n⌉ columns: each split gives the new pane its share of
// what is left, so rows and columns come out even, and the panes are
// numbered in instance order.
func tmuxGrid(n int, pane0 string, split func(target, dir, size, cmd, title string) (string, error), logs func(int) string) error {
	cols := 1
	for cols*cols < n {
		cols++
	}
	rows := (n + cols - 1) / cols
	rowFirst := []string{pane0}
	for r := 1; r < rows; r++ {
		p, err := split(rowFirst[r-1], "-v", fmt.Sprintf("%d%%", 100*(rows-r)/(rows-r+1)), logs(r*cols), fmt.Sprintf("instance %d", r*cols))
		if err != nil {
			return err
		}
		rowFirst = append(rowFirst, p)
	}
	for r, last := range rowFirst {
		inRow := min(cols, n-r*cols)
		for c := 1; c < inRow; c++ {
			i := r*cols + c
			p, err := split(last, "-h", fmt.Sprintf("%d%%", 100*(inRow-c)/(inRow-c+1)), logs(i), fmt.Sprintf("instance %d", i))
			if err != nil {
				return err
			}
			last = p
		}
	}
	return nil
}

// shellQuote quotes s for the shell tmux runs pane commands with.
func shellQuote(s string) string { return taskqueue.ShellQuote(s) }
