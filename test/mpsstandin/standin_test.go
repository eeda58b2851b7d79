package mpsstandin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/mps"
)

// The test binary is also the stand-in's programs, when started by their
// names (newBed links it).
func TestMain(m *testing.M) {
	if main := Program(os.Args[0]); main != nil {
		os.Exit(main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// bed is one stand-in daemon (the foreground one, this test's child) with
// its pipe and log directories, and the programs linked by name.
type bed struct {
	pipe, logs, bin string
	daemon          *exec.Cmd
}

func newBed(t *testing.T) *bed {
	t.Helper()
	// a short pipe directory: a Unix socket's path must fit 108 bytes
	pipe, err := os.MkdirTemp("/tmp", "mpsst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pipe) })
	b := &bed{pipe: pipe, logs: t.TempDir(), bin: t.TempDir()}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nvidia-cuda-mps-control", "mpsclient"} {
		if err := os.Symlink(self, filepath.Join(b.bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// env is the stand-in's environment: this test's directories, none of
// its settings inherited.
func (b *bed) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MPS_STANDIN_") && !strings.HasPrefix(kv, FaultOnceEnv+"=") && !strings.HasPrefix(kv, "CUDA_MPS_") {
			env = append(env, kv)
		}
	}
	return append(env, append([]string{"CUDA_MPS_PIPE_DIRECTORY=" + b.pipe, "CUDA_MPS_LOG_DIRECTORY=" + b.logs}, extra...)...)
}

// start runs the daemon in the foreground until the test ends, and waits
// for its pid file (written once it listens).
func (b *bed) start(t *testing.T) {
	t.Helper()
	b.daemon = exec.Command(filepath.Join(b.bin, "nvidia-cuda-mps-control"), "-f")
	b.daemon.Env = b.env()
	if err := b.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.daemon.Process.Signal(syscall.SIGTERM)
		_ = b.daemon.Wait()
	})
	waitFor(t, "the daemon's pid file", func() bool {
		_, err := os.Stat(filepath.Join(b.pipe, PidFile))
		return err == nil
	})
}

// clientProc is one mpsclient process.
type clientProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	code   int
}

func (b *bed) client(t *testing.T, env []string, args ...string) *clientProc {
	t.Helper()
	c := &clientProc{cmd: exec.Command(filepath.Join(b.bin, "mpsclient"), args...), done: make(chan struct{})}
	c.cmd.Env = b.env(env...)
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.cmd.Wait()
		c.code = c.cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

func (c *clientProc) pid() int { return c.cmd.Process.Pid }

// wait waits for the client's exit (generously: a loaded machine) and
// checks its status and what it printed.
func (c *clientProc) wait(t *testing.T, code int, stderr string) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("mpsclient %v (pid %d) did not exit in 30 s", c.cmd.Args[1:], c.pid())
	}
	if c.code != code || c.stderr.String() != stderr {
		t.Errorf("mpsclient %v (pid %d): exit %d, stderr %q; want exit %d, stderr %q", c.cmd.Args[1:], c.pid(), c.code, c.stderr.String(), code, stderr)
	}
}

// attached waits until the daemon has logged client c: its attach is
// done or under way, and the server takes no other call before it ends.
func (b *bed) attached(t *testing.T, c *clientProc) {
	t.Helper()
	waitFor(t, fmt.Sprintf("client %d in control.log", c.pid()), func() bool {
		return strings.Contains(b.read(t, "control.log"), fmt.Sprintf("NEW CLIENT %d from user", c.pid()))
	})
}

func (b *bed) read(t *testing.T, name string) string {
	data, err := os.ReadFile(filepath.Join(b.logs, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

func (b *bed) stickies(t *testing.T) []mps.Sticky {
	t.Helper()
	st, err := mps.ReadStickies(b.logs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// messages are server.log's messages, each line checked to be the real
// server's form.
func (b *bed) messages(t *testing.T) []string {
	t.Helper()
	line := regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} Server   (\d+)\] (.*)$`)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(b.read(t, "server.log"), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("server.log line %q is not the server's form", l)
		}
		if m[1] != strconv.Itoa(b.daemon.Process.Pid) {
			t.Errorf("server.log line %q: the server is the daemon, pid %d", l, b.daemon.Process.Pid)
		}
		out = append(out, m[2])
	}
	return out
}

// stop stops client c (SIGSTOP) and waits until /proc says it is: a
// client that makes no call keeps the server sticky as long as the test
// wants.
func stop(t *testing.T, c *clientProc) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("client %d stopped", c.pid()), func() bool {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.pid()))
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		return len(f) > 0 && f[0] == "T"
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 30 s", what)
		}
	}
}

// The H200's case: three clients running, a fourth faults. Every client
// fails, the faulting one with its own error and the others with the
// sticky error; server.log lists the faulting pid first, then the
// others', newest first, and records the recovery once all exited.
func TestFaultFailsEveryClientOfTheServer(t *testing.T) {
	b := newBed(t)
	b.start(t)
	var runners []*clientProc
	for range 3 {
		r := b.client(t, nil, "run", "1m")
		b.attached(t, r) // one by one: their order in the server's list
		runners = append(runners, r)
	}
	f := b.client(t, nil, "fault", "30ms")
	f.wait(t, 1, ErrFault+"\n")
	for _, r := range runners {
		r.wait(t, 1, ErrSticky+"\n")
	}
	want := []int{f.pid(), runners[2].pid(), runners[1].pid(), runners[0].pid()}
	st := b.stickies(t)
	if len(st) != 1 || !slices.Equal(st[0].PIDs, want) || !st[0].Recovered || st[0].Server != b.daemon.Process.Pid {
		t.Fatalf("stickies %+v; want one of server %d with pids %v, recovered", st, b.daemon.Process.Pid, want)
	}
	msgs := b.messages(t)
	lost := fmt.Sprintf("Server failed to recevie command with status 806, assuming client {PID: %d, Context ID: 1} exit", f.pid())
	var exiting []string
	for _, m := range msgs {
		if strings.Contains(m, "exiting. Number of active client contexts is") {
			exiting = append(exiting, m)
		}
	}
	if msgs[0] != "Creating server context on device 0 (MPS stand-in)" || !slices.Contains(msgs, lost) ||
		msgs[len(msgs)-1] != "Destroy server context on device 0 (MPS stand-in)" || len(exiting) != 4 ||
		!strings.HasSuffix(exiting[3], "Number of active client contexts is 0.") {
		t.Errorf("server.log:\n%s", strings.Join(msgs, "\n"))
	}
	control := b.read(t, "control.log")
	for i, c := range append(runners, f) {
		line := fmt.Sprintf("NEW CLIENT %d from user %d: Server already exists", c.pid(), os.Getuid())
		if i == 0 {
			line = fmt.Sprintf("NEW CLIENT %d from user %d: Server is not ready, push client to pending list", c.pid(), os.Getuid())
		}
		if !strings.Contains(control, line) {
			t.Errorf("control.log has no %q:\n%s", line, control)
		}
	}
}

// While a client with the sticky error lives the server refuses new
// clients; once it has exited the server serves again, with a new
// context.
func TestStickyServerRefusesNewClientsUntilAllExited(t *testing.T) {
	b := newBed(t)
	b.start(t)
	r1 := b.client(t, nil, "run", "1m")
	b.attached(t, r1)
	r2 := b.client(t, nil, "run", "1m")
	b.attached(t, r2)
	stop(t, r2)
	f := b.client(t, nil, "fault", "0s")
	f.wait(t, 1, ErrFault+"\n")
	r1.wait(t, 1, ErrSticky+"\n")
	if st := b.stickies(t); len(st) != 1 || st[0].Recovered || !slices.Equal(st[0].PIDs, []int{f.pid(), r2.pid(), r1.pid()}) {
		t.Fatalf("with client %d alive, stickies %+v; want one, not recovered", r2.pid(), st)
	}
	refused := b.client(t, nil, "run", "10ms")
	refused.wait(t, 1, ErrNotReady+"\n")
	if log := b.read(t, "server.log"); strings.Contains(log, strconv.Itoa(refused.pid())) {
		t.Errorf("the refused client %d is in server.log:\n%s", refused.pid(), log)
	}
	_ = r2.cmd.Process.Signal(syscall.SIGCONT)
	r2.wait(t, 1, ErrSticky+"\n")
	if st := b.stickies(t); len(st) != 1 || !st[0].Recovered {
		t.Fatalf("all exited: stickies %+v; want one, recovered", st)
	}
	n := b.client(t, nil, "run", "30ms")
	n.wait(t, 0, "")
	msgs := b.messages(t)
	if len(msgs) < 3 || msgs[len(msgs)-3] != "Creating server context on device 0 (MPS stand-in)" ||
		msgs[len(msgs)-2] != fmt.Sprintf("Client {PID: %d, Context ID: 1} exiting. Number of active client contexts is 0.", n.pid()) ||
		msgs[len(msgs)-1] != "Destroy server context on device 0 (MPS stand-in)" {
		t.Errorf("after the recovery, server.log ends:\n%s", strings.Join(msgs, "\n"))
	}
}

// A client killed is noticed as the real server notices it: its
// connection closed. A sticky server whose last client was killed serves
// the next client as soon as the killed one has exited (a launcher that
// saw its instances exit restarts them at once); otherwise the server
// notices the death after it (the one wait in these tests).
func TestKilledClientIsNoticed(t *testing.T) {
	b := newBed(t)
	b.start(t)
	r := b.client(t, nil, "run", "1m")
	b.attached(t, r)
	stop(t, r)
	f := b.client(t, nil, "fault", "0s")
	f.wait(t, 1, ErrFault+"\n")
	_ = r.cmd.Process.Kill()
	<-r.done
	n := b.client(t, nil, "run", "1m")
	b.attached(t, n)
	lost := fmt.Sprintf("Server failed to recevie command with status 806, assuming client {PID: %d, Context ID: 1} exit", r.pid())
	if st := b.stickies(t); len(st) != 1 || !st[0].Recovered {
		t.Errorf("the sticky server's last client killed: stickies %+v; want one, recovered", st)
	}
	if msgs := b.messages(t); !slices.Contains(msgs, lost) {
		t.Errorf("server.log has no %q:\n%s", lost, strings.Join(msgs, "\n"))
	}
	_ = n.cmd.Process.Kill()
	<-n.done
	waitFor(t, "the killed client noticed", func() bool {
		log := b.read(t, "server.log")
		return strings.Contains(log, fmt.Sprintf("Client {PID: %d, Context ID: 1} exiting. Number of active client contexts is 0.", n.pid())) &&
			strings.HasSuffix(log, "] Destroy server context on device 0 (MPS stand-in)\n")
	})
	if msgs := b.messages(t); msgs[len(msgs)-3] != fmt.Sprintf("Server failed to recevie command with status 806, assuming client {PID: %d, Context ID: 1} exit", n.pid()) ||
		msgs[len(msgs)-1] != "Destroy server context on device 0 (MPS stand-in)" {
		t.Errorf("server.log ends:\n%s", strings.Join(msgs, "\n"))
	}
}

// MPSCLIENT_FAULT_ONCE: the first fault creates the file and faults, the
// next client told to fault runs instead (a restarted group succeeds).
func TestFaultOnce(t *testing.T) {
	b := newBed(t)
	b.start(t)
	once := "MPSCLIENT_FAULT_ONCE=" + filepath.Join(t.TempDir(), "faulted")
	b.client(t, []string{once}, "fault", "10ms").wait(t, 1, ErrFault+"\n")
	b.client(t, []string{once}, "fault", "10ms").wait(t, 0, "")
	if st := b.stickies(t); len(st) != 1 || !st[0].Recovered {
		t.Errorf("stickies %+v; want one, recovered", st)
	}
}

// MPSCLIENT_FAULT_CLIENTS: the client told to fault starts first, its
// neighbours after it; it faults only once all are its server's clients
// (not with two of three), and the fault reaches every one.
func TestFaultWaitsForClients(t *testing.T) {
	b := newBed(t)
	b.start(t)
	f := b.client(t, []string{"MPSCLIENT_FAULT_CLIENTS=3"}, "fault", "0s")
	b.attached(t, f)
	r1 := b.client(t, nil, "run", "1m")
	b.attached(t, r1)
	if log := b.read(t, "server.log"); strings.Contains(log, "sticky") {
		t.Fatalf("a fault with 2 clients of 3:\n%s", log)
	}
	r2 := b.client(t, nil, "run", "1m")
	f.wait(t, 1, ErrFault+"\n")
	r1.wait(t, 1, ErrSticky+"\n")
	r2.wait(t, 1, ErrSticky+"\n")
	st := b.stickies(t)
	if len(st) != 1 || len(st[0].PIDs) != 3 || st[0].PIDs[0] != f.pid() || !slices.Contains(st[0].PIDs, r1.pid()) || !slices.Contains(st[0].PIDs, r2.pid()) {
		t.Fatalf("stickies %+v; want one listing %d first, then %d and %d", st, f.pid(), r1.pid(), r2.pid())
	}
}

// Without a daemon CUDA gives a process a context of its own: its fault
// is its own, as on the H200 under --share-gpus.
func TestNoDaemonOwnContext(t *testing.T) {
	b := newBed(t)
	b.client(t, nil, "run", "10ms").wait(t, 0, "")
	b.client(t, nil, "fault", "10ms").wait(t, 1, ErrFault+"\n")
	once := "MPSCLIENT_FAULT_ONCE=" + filepath.Join(t.TempDir(), "faulted")
	b.client(t, []string{once}, "fault", "0s").wait(t, 1, ErrFault+"\n")
	b.client(t, []string{once}, "fault", "0s").wait(t, 0, "")
	if _, err := os.Stat(filepath.Join(b.logs, "server.log")); !os.IsNotExist(err) {
		t.Errorf("server.log without a daemon: %v", err)
	}
}

// clientArgs: "run DURATION" or "fault AFTER", nothing else.
func TestClientArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		mode string
		d    time.Duration
		ok   bool
	}{
		{[]string{"run", "1.5s"}, "run", 1500 * time.Millisecond, true},
		{[]string{"fault", "0s"}, "fault", 0, true},
		{[]string{"run"}, "", 0, false},
		{[]string{"run", "1s", "x"}, "", 0, false},
		{[]string{"crash", "1s"}, "", 0, false},
		{[]string{"run", "soon"}, "", 0, false},
		{[]string{"run", "-1s"}, "", 0, false},
	} {
		mode, d, err := clientArgs(tc.args)
		if (err == nil) != tc.ok || mode != tc.mode || d != tc.d {
			t.Errorf("clientArgs(%q) = %q, %v, %v; want %q, %v, ok %v", tc.args, mode, d, err, tc.mode, tc.d, tc.ok)
		}
	}
	b := newBed(t)
	usage := "usage: mpsclient run DURATION | mpsclient fault AFTER\n"
	b.client(t, nil, "run").wait(t, 2, "mpsclient: want two arguments: run DURATION or fault AFTER\n"+usage)
	b.client(t, []string{"MPSCLIENT_FAULT_CLIENTS=0"}, "fault", "0s").wait(t, 2, "mpsclient: MPSCLIENT_FAULT_CLIENTS=\"0\" is not a number of clients (1 or more)\n"+usage)
}
