package tmux

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// Window is what the window is opened with.
type Window struct {
	Tmux   string   // the tmux program
	Self   string   // this gpulaunch, which each pane runs
	Env    []string // tmux's environment
	Socket string   // the run's control socket, which every pane talks to
	N      int      // the run's instances
	Name   string   // the window's name
}

// Open opens the window in the current tmux session with one pane per
// instance following its output (`gpulaunch logs -f`), laid out by Grid,
// and below them, the window's full width, a pane running `gpulaunch
// top`, TopPaneHeight lines tall. Panes stay after the run ends
// (remain-on-exit), so the last output can still be read.
func (w Window) Open() error {
	logs := func(i int) string { return w.paneCmd("logs", "-f", "--socket", w.Socket, fmt.Sprint(i)) }
	first, err := w.tm("new-window", "-P", "-F", "#{window_id} #{pane_id} #{window_height}", "-n", w.Name, logs(0))
	if err != nil {
		return err
	}
	var window, pane0 string
	var height int
	if _, err := fmt.Sscan(first, &window, &pane0, &height); err != nil {
		return fmt.Errorf("tmux new-window said %q: %v", first, err)
	}
	for _, opt := range [][]string{{"remain-on-exit", "on"}, {"pane-border-status", "top"}, {"pane-border-format", " #{pane_title} "}} {
		if _, err := w.tm("set-option", "-w", "-t", window, opt[0], opt[1]); err != nil {
			return err
		}
	}
	if _, err := w.tm("select-pane", "-t", pane0, "-T", "instance 0"); err != nil {
		return err
	}
	if _, err := w.split(pane0, "-v", fmt.Sprint(TopPaneHeight(w.N, height)), w.paneCmd("top", "--socket", w.Socket), "gpulaunch top"); err != nil {
		return err
	}
	panes := map[int]string{0: pane0}
	for _, s := range Grid(w.N) {
		p, err := w.split(panes[s.Of], s.Dir, s.Size, logs(s.Instance), fmt.Sprintf("instance %d", s.Instance))
		if err != nil {
			return err
		}
		panes[s.Instance] = p
	}
	return nil
}

// tm runs tmux with args, and is what it said.
func (w Window) tm(args ...string) (string, error) {
	cmd := exec.Command(w.Tmux, args...)
	cmd.Env = w.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// split makes a pane of target's, running cmd, titled title.
func (w Window) split(target, dir, size, cmd, title string) (string, error) {
	p, err := w.tm("split-window", "-d", dir, "-t", target, "-l", size, "-P", "-F", "#{pane_id}", cmd)
	if err != nil {
		return "", err
	}
	_, err = w.tm("select-pane", "-t", p, "-T", title)
	return p, err
}

// paneCmd is `exec gpulaunch ARGS…` for the shell tmux runs a pane with.
func (w Window) paneCmd(args ...string) string {
	q := []string{"exec", taskqueue.ShellQuote(w.Self)}
	for _, s := range args {
		q = append(q, taskqueue.ShellQuote(s))
	}
	return strings.Join(q, " ")
}

// Check says why --tmux cannot open its window for n instances, before
// anything starts, and is the tmux program's path. The rules, in order:
//  1. gpulaunch runs inside a tmux session (inTmux, $TMUX, is set): the
//     window opens in it.
//  2. n panes fit a window: at most MaxPanes.
//  3. tmux is in PATH.
func Check(inTmux string, n int) (string, error) {
	if inTmux == "" {
		return "", errors.New("--tmux opens its panes in the tmux session it runs in, and this shell is not in tmux (TMUX is not set): start tmux (or smux) first, or drop --tmux and use `gpulaunch top` / `gpulaunch logs -f N` from another shell")
	}
	if n > MaxPanes {
		return "", fmt.Errorf("--tmux opens one pane per instance, and %d panes do not fit a window (at most %d): drop --tmux and use `gpulaunch top` and `gpulaunch logs -f N`", n, MaxPanes)
	}
	path, err := exec.LookPath("tmux")
	if err != nil {
		return "", errors.New("--tmux: tmux is not in PATH")
	}
	return path, nil
}
