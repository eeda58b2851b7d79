package mpsstandin

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The server's rules (attach 1–3, fault, exit, leaveLocked 1–2), each
// case a sequence of calls, their replies and server.log's messages.
func TestMPSServerRules(t *testing.T) {
	type step struct {
		call string // attach, poll, fault, exit, lost, count; die: the process ends
		pid  int
		want string // the reply ("" for lost)
	}
	created, destroyed := createContext, destroyContext
	exiting := func(pid, left int) string { return fmt.Sprintf(clientExiting, pid, left) }
	lost := func(pid int) string { return fmt.Sprintf(clientLost, pid) }
	sticky, refused := replySticky+" "+ErrSticky, replyRefused+" "+ErrNotReady
	for _, tc := range []struct {
		name  string
		steps []step
		log   []string
	}{
		{"attach 2: the first client creates the context", []step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"count", 0, "ok 2"}, {"poll", 12, "ok"}},
			[]string{created}},
		{"fault: the faulting pid first, then the others newest first; all sticky",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"attach", 13, "ok"}, {"fault", 12, "ok"}, {"poll", 11, sticky}, {"poll", 13, sticky}, {"poll", 12, sticky}},
			[]string{created, stickyHeader, "12", "13", "11"}},
		{"fault: a client that faults after its neighbour meets the neighbour's error",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"fault", 11, "ok"}, {"fault", 12, sticky}},
			[]string{created, stickyHeader, "11", "12"}},
		{"exit: a clean exit leaves, the last one destroys the context",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"exit", 11, "ok"}, {"exit", 12, "ok"}, {"count", 0, "ok 0"}},
			[]string{created, exiting(11, 1), exiting(12, 0), destroyed}},
		{"exit: with the sticky error set an exit fails too, and the client stays",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"fault", 11, "ok"}, {"exit", 12, sticky}, {"count", 0, "ok 2"}},
			[]string{created, stickyHeader, "11", "12"}},
		{"attach 1: a sticky server refuses new clients while one lives",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"fault", 11, "ok"}, {"lost", 11, ""}, {"attach", 13, refused}, {"count", 0, "ok 1"}},
			[]string{created, stickyHeader, "11", "12", lost(11), exiting(11, 1)}},
		{"leaveLocked 2: once all left the sticky error is gone, a new context serves",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"fault", 11, "ok"}, {"lost", 11, ""}, {"lost", 12, ""}, {"attach", 13, "ok"}, {"poll", 13, "ok"}},
			[]string{created, stickyHeader, "11", "12", lost(11), exiting(11, 1), lost(12), exiting(12, 0), destroyed, created}},
		{"attach 1: a sticky server notices its clients that ended before it refuses",
			[]step{{"attach", 11, "ok"}, {"attach", 12, "ok"}, {"fault", 11, "ok"}, {"lost", 11, ""}, {"die", 12, ""}, {"attach", 13, "ok"}, {"count", 0, "ok 1"}},
			[]string{created, stickyHeader, "11", "12", lost(11), exiting(11, 1), lost(12), exiting(12, 0), destroyed, created}},
		{"attach 1: a server without the sticky error keeps a client that ended until it is noticed",
			[]step{{"attach", 11, "ok"}, {"die", 11, ""}, {"attach", 12, "ok"}, {"count", 0, "ok 2"}},
			[]string{created}},
		{"leaveLocked 1: a client lost twice (its call, then its connection) leaves once",
			[]step{{"attach", 11, "ok"}, {"lost", 11, ""}, {"lost", 11, ""}},
			[]string{created, lost(11), exiting(11, 0), destroyed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var control []string
			dead := map[int]bool{}
			s := &mpsServer{logDir: t.TempDir(), pid: 7, control: func(f string, a ...any) { control = append(control, fmt.Sprintf(f, a...)) },
				dead: func(pid int) bool { return dead[pid] }}
			clients := map[int]*mpsClient{}
			for i, st := range tc.steps {
				var got string
				switch st.call {
				case "attach":
					got, clients[st.pid] = s.attach(st.pid)
				case "poll":
					got = s.poll(clients[st.pid])
				case "fault":
					got = s.fault(clients[st.pid])
				case "exit":
					got = s.exit(clients[st.pid])
				case "lost":
					s.lost(clients[st.pid])
				case "count":
					got = s.count()
				case "die":
					dead[st.pid] = true
				}
				if got != st.want {
					t.Errorf("step %d, %s %d: %q, want %q", i, st.call, st.pid, got, st.want)
				}
			}
			if got := serverMessages(t, s.logDir); !slices.Equal(got, tc.log) {
				t.Errorf("server.log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.log, "\n"))
			}
			// attach 3: every attach in control.log, the first starting the server
			var attaches []string
			for _, st := range tc.steps {
				if st.call == "attach" {
					attaches = append(attaches, fmt.Sprintf("NEW CLIENT %d from user %d: Server already exists", st.pid, os.Getuid()))
				}
			}
			attaches[0] = strings.Replace(attaches[0], "Server already exists", "Server is not ready, push client to pending list", 1)
			attaches = slices.Insert(attaches, 1, fmt.Sprintf("Starting new server 7 for user %d", os.Getuid()))
			if !slices.Equal(control, attaches) {
				t.Errorf("control.log:\n%s\nwant:\n%s", strings.Join(control, "\n"), strings.Join(attaches, "\n"))
			}
		})
	}
}

// serverMessages are server.log's messages, each line the server's form.
func serverMessages(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} Server   7\] (.*)$`)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("server.log line %q is not the server's form", l)
		}
		out = append(out, m[1])
	}
	return out
}
