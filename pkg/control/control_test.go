//go:build linux

package control

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

func TestDirs(t *testing.T) {
	mine := t.TempDir()
	uid := os.Getuid()
	for _, tc := range []struct {
		name string
		env  Env
		want []string
	}{
		{"runtime dir first", Env{"XDG_RUNTIME_DIR": mine, "TMPDIR": "/scratch"},
			[]string{mine + "/gpulaunch", fmt.Sprintf("/scratch/gpulaunch-%d", uid), fmt.Sprintf("/tmp/gpulaunch-%d", uid)}},
		{"no runtime dir", Env{}, []string{fmt.Sprintf("/tmp/gpulaunch-%d", uid)}},
		{"runtime dir that does not exist (a compute node)", Env{"XDG_RUNTIME_DIR": mine + "/gone"}, []string{fmt.Sprintf("/tmp/gpulaunch-%d", uid)}},
		{"relative paths are ignored", Env{"XDG_RUNTIME_DIR": "run", "TMPDIR": "tmp"}, []string{fmt.Sprintf("/tmp/gpulaunch-%d", uid)}},
		{"TMPDIR=/tmp is one candidate", Env{"TMPDIR": "/tmp"}, []string{fmt.Sprintf("/tmp/gpulaunch-%d", uid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Dirs(tc.env, uid, "/tmp"); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("Dirs = %v, want %v", got, tc.want)
			}
		})
	}
	if got := Dirs(Env{"XDG_RUNTIME_DIR": mine}, uid+1, "/tmp"); got[0] == mine+"/gpulaunch" {
		t.Errorf("someone else's runtime dir was chosen: %v", got)
	}
	// the last resort is the temp root given, not /tmp: a test's own
	if got := Dirs(Env{}, uid, mine); strings.Join(got, " ") != fmt.Sprintf("%s/gpulaunch-%d", mine, uid) {
		t.Errorf("Dirs with temp root %s = %v", mine, got)
	}
}

// socketParent is a test's directory for a socket: under /tmp, not
// t.TempDir, whose path under a deep checkout is too long for sun_path.
func socketParent(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "glc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// The server's directory is the first whose socket path fits in
// sun_path: a deep TMPDIR gives way to the next candidate, where clients
// look too; when none fits, Listen refuses with the length and the fix,
// and makes no directory.
func TestListenDir(t *testing.T) {
	deep := "/scratch/" + strings.Repeat("d", 90) + "/gpulaunch-1000"
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"the first that fits", []string{"/run/user/1000/gpulaunch", "/tmp/gpulaunch-1000"}, "/run/user/1000/gpulaunch"},
		{"a deep TMPDIR gives way", []string{deep, "/tmp/gpulaunch-1000"}, "/tmp/gpulaunch-1000"},
		{"none fits: the first", []string{deep, deep + "x"}, deep},
	} {
		if got := ListenDir(tc.dirs, "node1", 4242); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	_, err := Listen(dir, "node1", 4242, os.Getuid(), launcher.NewBoard(launcher.RunInfo{}, nil), zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "set TMPDIR to a shorter directory") {
		t.Errorf("Listen in a deep directory: %v", err)
	}
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("Listen made %s: %v", dir, statErr)
	}
}

func TestMakePrivateDir(t *testing.T) {
	base := t.TempDir()
	uid := os.Getuid()
	fresh := filepath.Join(base, "fresh")
	if err := MakePrivateDir(fresh, uid); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %04o", fi.Mode().Perm())
	}
	if err := MakePrivateDir(fresh, uid); err != nil {
		t.Errorf("existing private dir: %v", err)
	}
	open := filepath.Join(base, "open")
	_ = os.Mkdir(open, 0o700)
	_ = os.Chmod(open, 0o750)
	if err := MakePrivateDir(open, uid); err == nil || !strings.Contains(err.Error(), "mode 0750, open to others") {
		t.Errorf("group-readable dir: %v", err)
	}
	link := filepath.Join(base, "link")
	_ = os.Symlink(fresh, link)
	if err := MakePrivateDir(link, uid); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("symlink: %v", err)
	}
	if err := MakePrivateDir(fresh, uid+1); err == nil || !strings.Contains(err.Error(), "not to you") {
		t.Errorf("someone else's dir: %v", err)
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"TERM": syscall.SIGTERM, "sigusr1": syscall.SIGUSR1, "SIGINT": syscall.SIGINT, "10": syscall.SIGUSR1, "kill": syscall.SIGKILL} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "65", "-1", "NOPE", "SIG"} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q) accepted", bad)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 9, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"", 1, ""},
	} {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// The server end to end with a board fed by hand: status, logs with and
// without follow, and Close removes the socket.
func TestServerStatusAndLogs(t *testing.T) {
	dir := filepath.Join(socketParent(t), "gpulaunch")
	board := launcher.NewBoard(launcher.RunInfo{PID: 42, Host: "h", Command: []string{"app"}}, []launcher.Instance{{Index: 0, GPUs: "0000:01:00.0"}, {Index: 1}})
	srv, err := Listen(dir, "h", 42, os.Getuid(), board, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	c := Client{Path: srv.Path()}
	snap, err := c.Status()
	if err != nil || snap.Run.PID != 42 || len(snap.Instances) != 2 || snap.Instances[0].GPUs != "0000:01:00.0" || snap.Instances[1].State != launcher.StateStarting {
		t.Fatalf("status: %+v %v", snap, err)
	}
	ring := board.Output(1)
	ring.Write([]byte("one\ntwo\n"))
	var out bytes.Buffer
	if err := c.Logs(context.Background(), 1, false, 0, &out); err != nil || out.String() != "one\ntwo\n" {
		t.Errorf("logs: %q %v", out.String(), err)
	}
	// follow: what arrives later, then the end of the instance's output
	var followed bytes.Buffer
	done := make(chan error)
	go func() { done <- c.Logs(context.Background(), 1, true, 1, &followed) }()
	time.Sleep(50 * time.Millisecond)
	ring.Write([]byte("three\n"))
	ring.Close()
	if err := <-done; err != nil || followed.String() != "two\nthree\n" {
		t.Errorf("logs -f --tail 1: %q %v", followed.String(), err)
	}
	if err := c.Logs(context.Background(), 5, false, 0, &out); err == nil || !strings.Contains(err.Error(), "no instance 5") {
		t.Errorf("logs of instance 5: %v", err)
	}
	// a follower cancelled by its user returns at once
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := c.Logs(ctx, 0, true, 0, &out); err != nil {
		t.Errorf("cancelled follow: %v", err)
	}
	srv.Close(time.Second)
	if _, err := os.Stat(srv.Path()); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
	if _, err := c.Status(); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("status after Close: %v", err)
	}
}

// A follower that stops reading cannot hold the run's memory: it loses
// the oldest output, and is told how much, in the stream.
func TestSlowFollowerIsToldWhatItLost(t *testing.T) {
	board := launcher.NewBoard(launcher.RunInfo{PID: 43}, []launcher.Instance{{Index: 0}})
	srv, err := Listen(filepath.Join(socketParent(t), "gpulaunch"), "h", 43, os.Getuid(), board, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(time.Second)
	ring := board.Output(0)
	ring.Write([]byte("first\n"))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Client{Path: srv.Path()}.Logs(context.Background(), 0, true, 0, pw); pw.Close() }()
	first := make([]byte, len("first\n"))
	if _, err := io.ReadFull(pr, first); err != nil || string(first) != "first\n" {
		t.Fatalf("%q %v", first, err)
	}
	line := bytes.Repeat([]byte("x"), 1023)
	line = append(line, '\n')
	const total = 4 << 20
	for range total / len(line) {
		ring.Write(line)
	}
	ring.Close()
	got, err := io.ReadAll(pr) // only now does anyone read again
	if err != nil || <-done != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\[gpulaunch: (\d+) bytes of this instance's output were dropped: this reader fell more than 128 KiB behind\]\n`)
	notes := m.FindAllSubmatch(got, -1)
	if len(notes) == 0 {
		t.Fatalf("no note of lost output in %d bytes", len(got))
	}
	lost := 0
	for _, n := range notes {
		k, _ := strconv.Atoi(string(n[1]))
		lost += k
	}
	data := m.ReplaceAll(got, nil)
	if len(data)+lost != total || !bytes.HasSuffix(data, line) {
		t.Errorf("received %d bytes + %d lost, want %d in all", len(data), lost, total)
	}
}

// Nodes of a job may share the socket directory ($TMPDIR on a shared
// filesystem): a client lists its own node's runs only, and leaves another
// node's socket alone even though nothing answers on it from here.
func TestFindKeepsToItsHost(t *testing.T) {
	dir := filepath.Join(socketParent(t), "gpulaunch")
	board := launcher.NewBoard(launcher.RunInfo{PID: 44, JobID: "9"}, []launcher.Instance{{Index: 0}})
	srv, err := Listen(dir, "node1.cluster", 44, os.Getuid(), board, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(time.Second)
	if filepath.Base(srv.Path()) != "node1.cluster.44.sock" {
		t.Errorf("socket %s", srv.Path())
	}
	// node2's socket, which this kernel cannot reach: a plain file here
	other := filepath.Join(dir, SocketName("node2.cluster", 44))
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runs, err := Find([]string{dir}, "node1.cluster", "9")
	if err != nil || len(runs) != 1 || runs[0].Path != srv.Path() {
		t.Fatalf("node1 finds %v, %v", runs, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("node1's client removed node2's socket: %v", err)
	}
	// on node2 that file is its own socket, dead: node2 clears it
	if runs, _ := Find([]string{dir}, "node2.cluster", "9"); len(runs) != 0 {
		t.Errorf("node2 finds node1's run: %v", runs)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("node2 kept its own dead socket: %v", err)
	}
	for name, host := range map[string]string{"a.b.12.sock": "a.b", "12.sock": "", "x.y.sock": "", "h.12": ""} {
		if got := socketHost(name); got != host {
			t.Errorf("socketHost(%q) = %q, want %q", name, got, host)
		}
	}
}
