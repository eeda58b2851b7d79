package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// In a real, detached tmux server: gpulaunch -n 4 --tmux runs in one
// window and opens another with 4 instance panes, in instance order row by
// row, and a top pane below them, the window's full width and tall enough
// for its table; each instance pane shows that instance's output and no
// other's.
func TestTmuxLayout(t *testing.T) {
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (apt-get install tmux; make integration's testbed installs it)")
	}
	server := fmt.Sprintf("gltest-%d", os.Getpid())
	runtime := t.TempDir()
	tmux := func(args ...string) (string, error) {
		cmd := exec.Command(tmuxPath, append([]string{"-L", server, "-f", "/dev/null"}, args...)...)
		// The server's environment is what its panes get: the test binary
		// must run as gpulaunch there too.
		cmd.Env = append(withoutSlurm(os.Environ()), "GLTEST_MAIN=1", "XDG_RUNTIME_DIR="+runtime)
		out, err := cmd.CombinedOutput()
		return strings.TrimRight(string(out), "\n"), err
	}
	done := t.TempDir() + "/done"
	launch := strings.Join(append([]string{taskqueue.ShellQuote(os.Args[0]), "-n", "4", "-G", "0", "-O", "--tmux"},
		shellQuoteAll(helperArgs("hello", "1s"))...), " ") + "; echo $? > " + done + ".tmp; mv " + done + ".tmp " + done + "; sleep 60"
	// (written beside and renamed: the test must not read it half written)
	if out, err := tmux("new-session", "-d", "-s", "main", "-x", "200", "-y", "60", launch); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	defer tmux("kill-server")

	var window string
	waitFor(t, "gpulaunch's window with 5 panes", func() bool {
		out, _ := tmux("list-windows", "-a", "-F", "#{window_id} #{window_name} #{window_panes}")
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) == 3 && strings.HasPrefix(f[1], "gpulaunch-") && f[2] == "5" {
				window = f[0]
				return true
			}
		}
		return false
	})
	waitFor(t, "the run to end", func() bool { _, err := os.Stat(done); return err == nil })
	if b, _ := os.ReadFile(done); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("gpulaunch --tmux exited %s", b)
	}
	// Give the followers a moment to print what the run wrote last.
	time.Sleep(200 * time.Millisecond)
	out, err := tmux("list-panes", "-t", window, "-F", "#{pane_id}\t#{pane_title}\t#{pane_left} #{pane_top} #{pane_width} #{pane_height} #{window_width}")
	if err != nil {
		t.Fatal(err)
	}
	checkTmuxGrid(t, out, 4)
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		pane, rest, _ := strings.Cut(l, "\t")
		title, _, _ := strings.Cut(rest, "\t")
		text, err := tmux("capture-pane", "-p", "-S", "-", "-t", pane)
		if err != nil {
			t.Fatal(err)
		}
		seen[title] = true
		if title == "gpulaunch top" {
			if !strings.Contains(text, "INSTANCE") || !strings.Contains(text, "4 instances") {
				t.Errorf("top pane:\n%s", text)
			}
			continue
		}
		var i int
		if _, err := fmt.Sscanf(title, "instance %d", &i); err != nil {
			t.Errorf("pane %s has title %q", pane, title)
			continue
		}
		for j := range 4 {
			for k := range 3 {
				line := fmt.Sprintf("hello %d from instance %d", k, j)
				if strings.Contains(text, line) != (i == j) {
					t.Errorf("pane of instance %d: %q present: %v; pane text:\n%s", i, line, i != j, text)
				}
			}
		}
	}
	for _, want := range []string{"instance 0", "instance 1", "instance 2", "instance 3", "gpulaunch top"} {
		if !seen[want] {
			t.Errorf("no pane %q among %v", want, seen)
		}
	}
}

// checkTmuxGrid reads list-panes lines (id, title, then left top width
// height window-width): instance panes read in order left to right, top to
// bottom; the top pane spans the window below all of them, with a line for
// each instance and its header.
func checkTmuxGrid(t *testing.T, listing string, n int) {
	t.Helper()
	type pane struct{ left, top, width, height, window int }
	byTitle := map[string]pane{}
	for _, l := range strings.Split(listing, "\n") {
		f := strings.Split(l, "\t")
		var p pane
		if len(f) != 3 {
			t.Fatalf("list-panes line %q", l)
		}
		if _, err := fmt.Sscan(f[2], &p.left, &p.top, &p.width, &p.height, &p.window); err != nil {
			t.Fatalf("list-panes line %q: %v", l, err)
		}
		byTitle[f[1]] = p
	}
	top, ok := byTitle["gpulaunch top"]
	if !ok || top.left != 0 || top.width != top.window || top.height < n+5 {
		t.Errorf("top pane %+v: want the window's full width and at least %d lines", top, n+5)
	}
	for i := range n {
		p, ok := byTitle[fmt.Sprintf("instance %d", i)]
		if !ok || p.top >= top.top {
			t.Errorf("instance %d pane %+v is not above the top pane %+v", i, p, top)
			continue
		}
		if i == 0 {
			continue
		}
		q := byTitle[fmt.Sprintf("instance %d", i-1)]
		if !(p.top > q.top || p.top == q.top && p.left > q.left) {
			t.Errorf("instance %d pane %+v does not follow instance %d's %+v in reading order", i, p, i-1, q)
		}
	}
}

func shellQuoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = taskqueue.ShellQuote(a)
	}
	return out
}
