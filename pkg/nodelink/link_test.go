package nodelink

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

const testBeat = 50 * time.Millisecond

func holder(t *testing.T, nodes int) (*Holder, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	h, err := Listen(HolderConfig{Run: "job7.0", Nodes: nodes, Slots: 2, Host: "127.0.0.1", KeyDir: dir, Beat: testBeat})
	if err != nil {
		t.Fatal(err)
	}
	return h, dir
}

func join(dir string, node int) (*Worker, error) {
	return Join(WorkerConfig{Run: "job7.0", Node: node, Host: "n" + string(rune('0'+node)), Slots: 2, KeyDir: dir, Wait: 5 * time.Second, Beat: testBeat})
}

// next waits for the next message, for a condition, not a time: the
// limit only ends a test that would hang.
func next(t *testing.T, ch <-chan taskqueue.NodeMessage) taskqueue.NodeMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message")
	}
	return taskqueue.NodeMessage{}
}

// A node joins, gets a task, reports it; the holder stamps the node.
func TestJoinAndExchange(t *testing.T) {
	h, dir := holder(t, 3)
	defer h.Close()
	w, err := join(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgJoined || m.Node != 2 || m.Host != "n2" || m.Slots != 2 {
		t.Fatalf("joined: %+v", m)
	}
	h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 2, Task: &job.Task{Seq: 5, Args: []string{"a b", "{%}"}, Command: "x"}})
	if m := next(t, w.Messages()); m.Kind != taskqueue.MsgTask || m.Task.Seq != 5 || m.Task.Args[0] != "a b" {
		t.Fatalf("task: %+v", m)
	}
	w.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Node: 1, Record: &job.Record{Seq: 5, Exit: 3}})
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgDone || m.Node != 2 || m.Record.Exit != 3 {
		t.Fatalf("done: %+v: a node speaks for itself only", m)
	}
	fi, err := os.Stat(h.KeyPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", fi, err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("key dir mode %04o", di.Mode().Perm())
	}
}

// Without the key's token a process is refused: no node joins, nothing
// reaches the run.
func TestWrongTokenGetsNothing(t *testing.T) {
	h, dir := holder(t, 2)
	defer h.Close()
	var mu sync.Mutex
	var refused []string
	h.Refused = func(_, why string) { mu.Lock(); refused = append(refused, why); mu.Unlock() }
	k, err := ReadKey(h.KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	k.Token = strings.Repeat("0", 64)
	_, err = dial(context.Background(), WorkerConfig{Run: "job7.0", Node: 1, Host: "x", Slots: 2, KeyDir: dir, Beat: testBeat}, k, "job7.0")
	if err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("a wrong token was not refused: %v", err)
	}
	// and a node of the run that does show the token still gets in,
	// first: nothing was spent on the impostor
	w, err := join(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgJoined || m.Node != 1 {
		t.Fatalf("first message %+v: the impostor reached the run", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || !strings.Contains(refused[0], "wrong token") {
		t.Errorf("refused %q", refused)
	}
}

// A process that took the holder's address first (another user's) is not
// believed: the node checks the certificate before it says anything, so
// the impostor never sees the token.
func TestImpostorHolderLearnsNothing(t *testing.T) {
	h, dir := holder(t, 2)
	defer h.Close()
	k, _ := ReadKey(h.KeyPath())
	cert, _, err := newCert("impostor")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := c.Read(buf)
		got <- string(buf[:n])
	}()
	k.Addr = ln.Addr().String()
	_, err = dial(context.Background(), WorkerConfig{Run: "job7.0", Node: 1, Host: "x", Slots: 2, KeyDir: dir, Beat: testBeat}, k, "job7.0")
	if err == nil || !strings.Contains(err.Error(), "not the one in the key file") {
		t.Fatalf("the impostor was trusted: %v", err)
	}
	if s := <-got; strings.Contains(s, k.Token) {
		t.Fatal("the impostor learned the token")
	}
}

// A node whose gpulaunch is killed is lost at once; one that falls silent
// after ten beats.
func TestLostNodes(t *testing.T) {
	h, dir := holder(t, 3)
	defer h.Close()
	w, err := join(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	next(t, h.Messages())
	w.c.c.Close() // what the kernel does for a killed process
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgLost || m.Node != 1 {
		t.Fatalf("after a kill: %+v", m)
	}
	// node 2 shakes hands, then says nothing, not even pings
	k, _ := ReadKey(h.KeyPath())
	raw, err := net.Dial("tcp", k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, pinned(k.CertHash))
	if err := writeOne(tc, frame{NodeMessage: taskqueue.NodeMessage{Kind: kindHello, Node: 2, Slots: 2}, Token: k.Token, Run: "job7.0", Wire: wireVersion}, time.Second); err != nil {
		t.Fatal(err)
	}
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgJoined || m.Node != 2 {
		t.Fatalf("%+v", m)
	}
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgLost || m.Node != 2 {
		t.Fatalf("after silence: %+v", m)
	}
}

// The holder's end: what it queued arrives before the end of the stream;
// a node that comes after finds the queue over; the key file is gone when
// every node had joined.
func TestHolderEnd(t *testing.T) {
	h, dir := holder(t, 3)
	w, err := join(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	next(t, h.Messages())
	h.Send(taskqueue.NodeMessage{Kind: taskqueue.MsgEnd, Node: 1})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, w.Messages()); m.Kind != taskqueue.MsgEnd {
		t.Fatalf("%+v", m)
	}
	// Close's own end, for a node that joined after the run's last word
	if m := next(t, w.Messages()); m.Kind != taskqueue.MsgEnd {
		t.Fatalf("%+v", m)
	}
	if m := next(t, w.Messages()); m.Kind != taskqueue.MsgLost {
		t.Fatalf("%+v", m)
	}
	if _, err := join(dir, 2); !errors.Is(err, ErrOver) {
		t.Fatalf("a late node: %v, want ErrOver", err)
	}
}

// A key file others could read proves nothing: refused.
func TestKeyFileMustBePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	path := KeyPath(dir, "r")
	if err := writeKey(path, Key{Run: "r", State: StateOpen}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	if _, err := ReadKey(path); err == nil || !strings.Contains(err.Error(), "open to others") {
		t.Fatalf("a 0644 key file was read: %v", err)
	}
	if err := Fail(dir, "f", "--each-line params.txt: no such file"); err != nil {
		t.Fatal(err)
	}
	_, err := Join(WorkerConfig{Run: "f", Node: 1, Slots: 1, KeyDir: dir, Wait: time.Second})
	if err == nil || !strings.Contains(err.Error(), "params.txt") {
		t.Fatalf("a failed holder: %v", err)
	}
	os.Chmod(dir, 0o755)
	if err := writeKey(KeyPath(dir, "x"), Key{}); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("an open directory: %v", err)
	}
}

// A key file that is not one is refused in the file's words: where, and
// what, without Go's type names.
func TestKeyFileNotAKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.json")
	if err := os.WriteFile(path, []byte(`{"run": 5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadKey(path)
	if err == nil || !strings.Contains(err.Error(), path+":1:9: run: a number where a string belongs") || strings.Contains(err.Error(), "link.Key") {
		t.Fatalf("a key file with a number for run: %v", err)
	}
}

// Every node has the holder's number of slots, or {%} would overlap: a
// node with another is refused, at once, with the fix.
func TestSlotsMustMatch(t *testing.T) {
	h, dir := holder(t, 2)
	defer h.Close()
	_, err := Join(WorkerConfig{Run: "job7.0", Node: 1, Host: "n1", Slots: 3, KeyDir: dir, Wait: time.Minute, Beat: testBeat})
	if err == nil || !strings.Contains(err.Error(), "node 1 has 3 slot(s) and node 0 has 2") || !strings.Contains(err.Error(), "give -n N") {
		t.Fatalf("a node with 3 slots: %v", err)
	}
}

// A connection that shakes hands and says nothing in time is closed, not
// refused: a node whose hello came late (a holder busy with 10,000 joins)
// tries again, where a refusal would make it give up for good.
func TestSilentConnectionIsNotRefused(t *testing.T) {
	h, k, dir := holderOfTwo(t, 200*time.Millisecond)
	tc, err := tls.Dial("tcp", k.Addr, pinned(k.CertHash))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetReadDeadline(time.Now().Add(30 * time.Second)) // ends a test that would hang
	got, err := io.ReadAll(tc)
	if len(got) > 0 || err != nil {
		t.Fatalf("the silent connection got %q (%v), want the end of the stream", got, err)
	}
	// and the node, once it speaks, joins
	w, err := join(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgJoined || m.Node != 1 {
		t.Fatalf("first message %+v", m)
	}
}

// A deadline moves on once it would move by a beat (or back), so that a
// message does not cost a timer's update; a silence is still found within
// its limit less a beat.
func TestDeadlineMovesByBeats(t *testing.T) {
	const beat, limit = time.Second, 10 * time.Second
	first, ok := deadline(time.Time{}, limit, beat)
	if !ok {
		t.Fatal("the first deadline is not set")
	}
	if _, ok := deadline(first, limit, beat); ok {
		t.Error("a deadline moved by less than a beat")
	}
	if _, ok := deadline(first.Add(-beat), limit, beat); !ok {
		t.Error("a deadline a beat old was not moved on")
	}
	if _, ok := deadline(first.Add(time.Hour), limit, beat); !ok {
		t.Error("a shorter limit did not bring the deadline forward")
	}
}

// pipeConns are the two ends of a TLS connection in memory.
func pipeConns(t *testing.T, beat time.Duration) (*conn, *conn) {
	t.Helper()
	cert, hash, err := newCert("pipe")
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	server := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	client := tls.Client(b, pinned(hash))
	shook := make(chan error, 1)
	go func() { shook <- server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-shook; err != nil {
		t.Fatal(err)
	}
	return newConn(client, beat), newConn(server, beat)
}

// A side that writes messages sends no pings: a ping goes only after a
// whole beat of silence (it went at every beat that found the queue
// empty, even between messages).
func TestNoPingsWhileMessagesFlow(t *testing.T) {
	const beat = 100 * time.Millisecond
	w, r := pipeConns(t, beat)
	defer w.c.Close()
	defer r.c.Close()
	go w.writeLoop()
	const messages = 100 // five a beat, for 20 beats
	go func() {
		for i := 1; i <= messages; i++ {
			w.send(frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Record: &job.Record{Seq: i}}})
			time.Sleep(beat / 5)
		}
	}()
	pings := 0
	for seen := 0; seen < messages; {
		f, err := r.read(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind == kindPing {
			pings++
		} else {
			seen++
		}
	}
	// a stall of a beat between two sends (a loaded machine) may earn a
	// ping; a ping per beat is 20
	if pings > 5 {
		t.Errorf("%d pings among %d messages sent five a beat", pings, messages)
	}
}

// failingListener fails its first accepts as a process out of file
// descriptors does, then says it is closed.
type failingListener struct {
	net.Listener
	fails   int
	accepts int
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.accepts++
	if l.accepts <= l.fails {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return nil, net.ErrClosed
}

// A holder out of file descriptors waits and accepts again, and says
// so once: it stopped accepting for good, and no node joined after.
func TestHolderOutOfDescriptorsAcceptsAgain(t *testing.T) {
	ln := &failingListener{fails: 3}
	var stalls []string
	h := &Holder{ln: ln, done: make(chan struct{}), Stalled: func(why string) { stalls = append(stalls, why) }}
	h.acceptLoop() // returns once the listener says it is closed
	if ln.accepts != 4 || len(stalls) != 1 || !strings.Contains(stalls[0], "too many open files") {
		t.Errorf("%d accepts (want 4: three failures, then closed), stalls %q", ln.accepts, stalls)
	}
}

// Handshakes take turns, shakingAtOnce at a time: connections that have
// begun one (sent a byte) and stall hold every turn until they go. Ones
// that say nothing at all take no turn: with more of them open than there
// are turns, a node still joins.
func TestHandshakesTakeTurns(t *testing.T) {
	h, k, dir := holderOfTwo(t, time.Minute)
	dial := func(first []byte) []net.Conn {
		var cs []net.Conn
		for range shakingAtOnce + 2 {
			c, err := net.Dial("tcp", k.Addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if len(first) > 0 {
				if _, err := c.Write(first); err != nil {
					t.Fatal(err)
				}
			}
			cs = append(cs, c)
		}
		return cs
	}
	stalled := dial([]byte{0x16}) // a TLS record's first byte, and no more
	waitFor(t, "every turn taken by the stalled handshakes", func() bool { return len(h.shaking) == shakingAtOnce })
	for _, c := range stalled {
		c.Close()
	}
	waitFor(t, "every turn given back", func() bool { return len(h.shaking) == 0 })
	dial(nil) // silent: no turn taken
	w, err := join(dir, 1)
	if err != nil {
		t.Fatalf("a node could not join past %d silent connections: %v", shakingAtOnce+2, err)
	}
	defer w.Close()
	if m := next(t, h.Messages()); m.Kind != taskqueue.MsgJoined || m.Node != 1 {
		t.Fatalf("first message %+v", m)
	}
}

// holderOfTwo opens a holder of a launch of two nodes, closed at the
// test's end, and reads its key; dir is the key directory.
func holderOfTwo(t *testing.T, helloWait time.Duration) (*Holder, Key, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	h, err := Listen(HolderConfig{Run: "job7.0", Nodes: 2, Slots: 2, Host: "127.0.0.1", KeyDir: dir, Beat: testBeat, HelloWait: helloWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	k, err := ReadKey(h.KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	return h, k, dir
}

// waitFor polls cond until it holds; the limit only ends a test that
// would hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("never: %s", what)
		}
	}
}

// The waits between a node's looks for its holder, by pollAfter's rules.
func TestPollAfter(t *testing.T) {
	for _, c := range []struct {
		name   string
		tries  int
		jitter float64
		want   time.Duration
	}{
		{"1: the first wait is firstPoll", 0, 0, 100 * time.Millisecond},
		{"2: each wait half again the one before", 1, 0, 150 * time.Millisecond},
		{"2: ... and again", 4, 0, 506250 * time.Microsecond},
		{"2: up to lastPoll", 6, 0, time.Second},
		{"2: lastPoll for as long as it waits", 1000, 0, time.Second},
		{"3: stretched by up to a quarter", 0, 0.5, 112500 * time.Microsecond},
		{"3: a quarter at most, at lastPoll too", 1000, 0.999999, time.Second + 249999750*time.Nanosecond},
	} {
		if got := pollAfter(c.tries, c.jitter); got != c.want {
			t.Errorf("%s: pollAfter(%d, %v) = %v, want %v", c.name, c.tries, c.jitter, got, c.want)
		}
	}
}

// A node waiting for a holder that never comes gives the wait up as soon
// as its context ends (a signal to gpulaunch), not when Wait is over: the
// error wraps the context's cause.
func TestJoinGivesUpWhenStopped(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("SIGINT to gpulaunch")
	done := make(chan error, 1)
	go func() {
		_, err := JoinContext(ctx, WorkerConfig{Run: "job7.0", Node: 1, Host: "n1", Slots: 1, KeyDir: dir, Wait: time.Hour, Beat: testBeat})
		done <- err
	}()
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("err = %v, want it to wrap %v", err, stop)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Join still waits for its holder after its context ended")
	}
}
