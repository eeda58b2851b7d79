package nodelink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// ErrOver: the queue ended before this node joined; it has nothing to do.
var ErrOver = errors.New("the queue's holder has ended the queue already")

var errRefused = errors.New("the holder refused this node")

// errFinal: trying again cannot help (a relay that joined the holder but
// cannot open its group's link: the holder has it joined already).
var errFinal = errors.New("cannot take part")

// Worker is the side of a node that is not the holder.
type Worker struct {
	c     *conn
	node  int
	relay *relay // its group's, when this node is a relay (Groups)
	slots int    // this node's slots: the holder sends it at most ownRoom(slots) messages that must arrive
	// msgs holds the holder's messages for the run. Only the reader
	// sends on it, and it never waits there while the holder keeps to
	// this node's credit (see ownRoom): a reader that waited would hold
	// up a relay's group and the link's heartbeats.
	msgs chan taskqueue.NodeMessage
	// closing is closed when Close begins: the run reads no more
	// messages, and a relay's own are dropped so that its group's still
	// pass.
	closing chan struct{}
	done    chan struct{}
}

// WorkerConfig is what a node joins with.
type WorkerConfig struct {
	Run    string
	Node   int // this node's index, 1.. (the launcher's rank)
	Host   string
	Slots  int
	KeyDir string
	// Wait bounds how long the node waits for the holder's key file and
	// for the holder to answer.
	Wait time.Duration
	Beat time.Duration
	// Refused and Stalled are a relay's link's (HolderConfig); nil:
	// nobody is told.
	Refused func(remote, why string)
	Stalled func(why string)
}

// Join waits for the holder's key file, connects to the holder it names,
// checks the holder's certificate against it, and shows its token. It
// tries again until cfg.Wait has passed: the holder may still be starting,
// and a key file left from an earlier run is replaced by the new one.
func Join(cfg WorkerConfig) (*Worker, error) { return JoinContext(context.Background(), cfg) }

// JoinContext is Join, given up as soon as ctx ends (a signal to
// gpulaunch: README, "Signals"); the error then wraps ctx's cause.
func JoinContext(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	if cfg.Beat == 0 {
		cfg.Beat = Beat
	}
	w, err := tryJoin(ctx, cfg)
	if err != nil {
		tellGroup(cfg, err)
	}
	return w, err
}

// tellGroup writes, for a relay that could not join, why in its group's
// key file: its nodes stop at once instead of waiting for it (or, when
// the queue is over, have nothing to do either).
func tellGroup(cfg WorkerConfig, err error) {
	k, kerr := ReadKey(KeyPath(cfg.KeyDir, cfg.Run))
	if kerr != nil || !(Groups{Nodes: k.Nodes, Size: k.Group}).IsRelay(cfg.Node) {
		return
	}
	gk := Key{Run: groupRun(cfg.Run, cfg.Node), State: StateFailed, HolderCert: k.CertHash,
		Why: fmt.Sprintf("its group's relay, node %d, could not join the queue: %v", cfg.Node, err)}
	if errors.Is(err, ErrOver) {
		gk.State, gk.Why = StateOver, ""
	}
	writeKey(KeyPath(cfg.KeyDir, gk.Run), gk)
}

func tryJoin(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	path := KeyPath(cfg.KeyDir, cfg.Run)
	deadline := time.Now().Add(cfg.Wait)
	var last error
	refused := "" // the token the holder refused: the same key is not tried again
	tries := 0    // looks that found no holder to join (pollAfter)
	for {
		k, run, err := target(cfg, path)
		switch {
		case err == nil && k.Token == refused:
			return nil, last
		case err == nil:
			w, err := dial(ctx, cfg, k, run)
			if err == nil {
				return w, nil
			}
			if errors.Is(err, errRefused) {
				refused = k.Token
			}
			if errors.Is(err, errFinal) {
				return nil, err
			}
			last = err
		case errors.Is(err, fs.ErrNotExist):
			last = err
		default:
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("could not join the queue's holder (node 0) within %s: %v (is node 0's gpulaunch running, and %s on a filesystem both nodes see? GPULAUNCH_KEY_DIR sets another)",
				cfg.Wait, last, cfg.KeyDir)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped while waiting for the queue's holder (node 0): %w", context.Cause(ctx))
		case <-time.After(pollAfter(tries, rand.Float64())):
		}
		tries++
	}
}

// pollAfter is how long a node waits before its next look at the key
// file, after tries looks that found no holder to join (jitter in [0, 1)
// spreads the nodes that started together):
//
//  1. The first wait is firstPoll: a holder that starts with its nodes is
//     joined at once.
//  2. Each wait is half again the one before, up to lastPoll, so that a
//     holder still reading a long input (up to joinWait) is not asked 10
//     times a second by every node: the key file is on a filesystem every
//     node shares ($HOME, often Lustre or NFS), where 10,000 nodes polling
//     every 100 ms were 100,000 opens a second against its metadata
//     server; at lastPoll they are 10,000, and a node joins at most
//     lastPoll after the holder is there.
//  3. A wait is stretched by up to a quarter (jitter), so that nodes that
//     began together do not look together.
func pollAfter(tries int, jitter float64) time.Duration {
	d := firstPoll
	for range tries {
		if d = d * 3 / 2; d >= lastPoll {
			d = lastPoll
			break
		}
	}
	return d + time.Duration(jitter*float64(d)/4)
}

// firstPoll and lastPoll bound the waits between a node's looks for its
// holder (pollAfter).
const (
	firstPoll = 100 * time.Millisecond
	lastPoll  = time.Second
)

// target is the key of the holder this node joins, and the run its hello
// names: the holder's (path), or, for a node of a group, its relay's
// (Groups, rule 4). An error wrapping fs.ErrNotExist: not there yet.
func target(cfg WorkerConfig, path string) (Key, string, error) {
	k, err := ReadKey(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Key{}, "", fmt.Errorf("its key file %s has not appeared: %w", path, err)
	case err != nil:
		return Key{}, "", err
	case k.State == StateOver:
		return Key{}, "", ErrOver
	case k.State == StateFailed:
		return Key{}, "", fmt.Errorf("the queue's holder (node 0) stopped before the queue began: %s", k.Why)
	}
	g := Groups{Nodes: k.Nodes, Size: k.Group}
	relay := g.RelayOf(cfg.Node)
	if relay == 0 || relay == cfg.Node {
		return k, cfg.Run, nil
	}
	run := groupRun(cfg.Run, relay)
	gpath := KeyPath(cfg.KeyDir, run)
	gk, err := ReadKey(gpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Key{}, "", fmt.Errorf("the key file of its group's relay, node %d, %s has not appeared: %w", relay, gpath, err)
	case err != nil:
		return Key{}, "", err
	case gk.HolderCert != k.CertHash: // an earlier run's, with the same run id
		return Key{}, "", fmt.Errorf("the key file of its group's relay, node %d, %s is an earlier run's: %w", relay, gpath, fs.ErrNotExist)
	case gk.State == StateOver:
		return Key{}, "", ErrOver
	case gk.State == StateFailed:
		return Key{}, "", fmt.Errorf("this node joins the queue through node %d, and %s", relay, gk.Why)
	}
	return gk, run, nil
}

// dial makes one attempt at the holder (or relay) k names; ctx ending
// gives it up.
func dial(ctx context.Context, cfg WorkerConfig, k Key, run string) (*Worker, error) {
	raw, err := (&net.Dialer{Timeout: handshakeWait}).DialContext(ctx, "tcp", k.Addr)
	if err != nil {
		return nil, err
	}
	// the handshake's reads are bounded, not cancelled: closing the
	// connection ends them
	defer context.AfterFunc(ctx, func() { raw.Close() })()
	tc := tls.Client(tcpConn(raw), pinned(k.CertHash))
	tc.SetDeadline(time.Now().Add(handshakeWait))
	if err := tc.Handshake(); err != nil {
		tc.Close()
		return nil, err
	}
	tc.SetDeadline(time.Time{})
	c := newConn(tc, cfg.Beat)
	hello := frame{NodeMessage: taskqueue.NodeMessage{Kind: kindHello, Node: cfg.Node, Host: cfg.Host, Slots: cfg.Slots}, Token: k.Token, Run: run, Wire: wireVersion}
	if err := writeOne(tc, hello, handshakeWait); err != nil {
		tc.Close()
		return nil, err
	}
	answer, err := c.readShake(handshakeWait)
	switch {
	case err != nil:
		tc.Close()
		return nil, err
	case answer.Kind == kindRefused:
		tc.Close()
		return nil, fmt.Errorf("%w: %s", errRefused, answer.Why)
	case answer.Kind != kindWelcome:
		tc.Close()
		return nil, fmt.Errorf("the holder answered %q", answer.Kind)
	case answer.Wire != wireVersion:
		tc.Close()
		return nil, fmt.Errorf("%w: %w", errRefused, otherWire("it", answer.Wire))
	}
	w := &Worker{c: c, node: cfg.Node, slots: cfg.Slots, msgs: make(chan taskqueue.NodeMessage, ownRoom(cfg.Slots)+statusRoom),
		closing: make(chan struct{}), done: make(chan struct{})}
	if g := (Groups{Nodes: k.Nodes, Size: k.Group}); run == cfg.Run && g.IsRelay(cfg.Node) {
		if w.relay, err = openRelay(cfg, g, c, k.CertHash); err != nil {
			tc.Close() // Join tells the group (tellGroup)
			return nil, err
		}
	}
	go c.writeLoop()
	go w.readLoop()
	return w, nil
}

func (w *Worker) readLoop() {
	why := w.c.readLoop(func(f frame) bool {
		if w.relay != nil && !w.relay.down(f) {
			return true
		}
		return w.deliver(f.NodeMessage)
	})
	if why == nil {
		return
	}
	if w.relay != nil {
		w.relay.lost(why.Error())
	}
	w.deliver(taskqueue.NodeMessage{Kind: taskqueue.MsgLost, Why: why.Error()})
}

// ownRoom is how many of the holder's messages for a node of slots slots
// must reach its run: the tasks its credit allows (two per slot, the
// node rules in taskqueue/nodes.go; a task is credited back only once the
// node has run it) and the queue's few words of its end and stops.
func ownRoom(slots int) int { return 2*slots + 8 }

// statusRoom is what status messages may take of a Worker's buffer
// besides ownRoom. A status that finds less free is dropped: the next is
// under a second away, and the run that does not read them (a relay busy
// starting its slots) must not stop the reader, which carries its
// group's messages too.
const statusRoom = 32

// deliver hands m to the run, until Close begins; false once the
// connection is closed. A status is dropped rather than waited for when
// the buffer has no more than ownRoom free (see statusRoom).
func (w *Worker) deliver(m taskqueue.NodeMessage) bool {
	if m.Kind == taskqueue.MsgStatus {
		if cap(w.msgs)-len(w.msgs) > ownRoom(w.slots) { // only this goroutine sends: the room cannot shrink under it
			w.msgs <- m
		}
		return true
	}
	select {
	case w.msgs <- m:
		return true
	case <-w.closing:
		return w.relay != nil // a relay still carries its group's
	case <-w.done:
		return false
	}
}

// Messages are the holder's messages, and taskqueue.MsgLost when it is gone.
func (w *Worker) Messages() <-chan taskqueue.NodeMessage { return w.msgs }

// Send queues m for the holder.
func (w *Worker) Send(m taskqueue.NodeMessage) {
	m.Node = w.node // a relay's own, told from its group's
	w.c.send(frame{NodeMessage: m})
}

// Relays is the nodes this node relays for (Groups): first..last, or
// first > last.
func (w *Worker) Relays() (first, last int) {
	if w.relay == nil {
		return 1, 0
	}
	return w.relay.group.first, w.relay.group.last
}

// Close sends what is queued and ends the connection; a relay first
// waits until its group's nodes are gone, carrying their messages.
func (w *Worker) Close() error {
	w.CloseUnless(nil)
	return nil
}

// CloseUnless is Close, but a relay's wait for its group ends when stop
// is closed (a signal to the relay): its group is then cut off, as by
// the relay's loss, and cut says so.
func (w *Worker) CloseUnless(stop <-chan struct{}) (cut bool) {
	close(w.closing)
	if w.relay != nil {
		cut = w.relay.drain(stop)
	}
	w.c.close(3 * time.Second)
	close(w.done)
	return cut
}

// Relaying: this node relays for a group of others (Groups).
func (w *Worker) Relaying() bool { return w.relay != nil }
