//go:build linux

package control

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Choose's rules, each by its number, on a directory of this user's
// sockets; which are refusals (the user's to fix) and which say that no
// run is found.
func TestChooseRules(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, SocketName("node1", 4242))
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no Unix sockets here: %v", err)
	}
	defer l.Close()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dirs, empty := []string{dir}, t.TempDir()
	for _, tc := range []struct {
		rule    string
		c       Choice
		job     string
		path    string // the client chosen; "" none
		refused bool
		want    string // in the error; "" none
	}{
		{"1: --pid negative", Choice{PID: -3, PIDGiven: true}, "", "", true, "--pid -3: a process id is a positive number"},
		{"2: --pid and --socket", Choice{PID: 4242, PIDGiven: true, Socket: sock}, "", "", true, "--pid and --socket both choose"},
		{"3: --socket, a socket", Choice{Socket: sock}, "", sock, false, ""},
		{"3: --socket, nothing there", Choice{Socket: filepath.Join(dir, "none.sock")}, "", "", true, "no such file: a run's socket is node1.PID.sock in " + dir},
		{"3: --socket, a regular file", Choice{Socket: file}, "", "", true, "is a regular file, not a socket"},
		{"4: --pid 0 given", Choice{PID: 0, PIDGiven: true}, "", "", true, "--pid 0: give the pid of a running gpulaunch"},
		{"5: --pid of a socket here", Choice{PID: 4242, PIDGiven: true}, "", sock, false, ""},
		{"5: --pid of none here", Choice{PID: 7, PIDGiven: true}, "", "", false, "no control socket of pid 7 in " + dir},
		// rule 6 in a directory without sockets: a socket nobody answers
		// on would take Find's timeout to pass over
		{"6: none of the job", Choice{}, "99", "", false, "no running gpulaunch of job 99 on node1"},
		{"6: none outside a job", Choice{}, "", "", false, "no running gpulaunch on node1 (looked in " + empty + ")"},
	} {
		in := dirs
		if strings.HasPrefix(tc.rule, "6:") {
			in = []string{empty}
		}
		c, err := Choose(tc.c, in, "node1", tc.job)
		if tc.path != "" && c.Path != tc.path {
			t.Errorf("rule %s: client %q, want %q", tc.rule, c.Path, tc.path)
		}
		if got := errors.As(err, new(Refusal)); got != tc.refused {
			t.Errorf("rule %s: refused %v, want %v (%v)", tc.rule, got, tc.refused, err)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("rule %s: %v", tc.rule, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("rule %s: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
