package nodelink

import (
	"bufio"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// handshakeWait bounds a node's TLS handshake and hello, so that a
// connection that says nothing does not hold a goroutine.
const handshakeWait = 10 * time.Second

// shakingAtOnce bounds the handshakes the holder makes at the same time;
// the other connections wait their turn, accepted, with their clocks not
// yet running. A TLS 1.3 handshake costs about 0.9 ms of CPU (both sides,
// X25519MLKEM768 and a P-256 signature, measured on this project's 2-CPU
// machine): 10,000 nodes joining at once, all shaking hands together,
// each got a sliver of the CPU and many ran past handshakeWait, so that
// 10,000 could not join at all; served a few at a time, in turn, each
// takes its 0.9 ms and the last is in after the sum
// (scripts/bench-holder.sh: the join time). A connection waits for its
// turn only once it has said something (spoke).
const shakingAtOnce = 8

// Holder is node 0's side: it listens, admits the nodes that show the
// key's token, and carries messages to and from them.
type Holder struct {
	ln    net.Listener
	tls   *tls.Config
	token string
	run   string
	nodes int // the launch's nodes, this one included
	// first..last are the nodes that may join here: 1..nodes-1 at the
	// holder, a group's nodes at a relay (Groups.Members).
	first, last int
	// groups is the tree the holder decided (Groups): a relay's
	// connection speaks for the nodes of its group too (fromRelay).
	groups  Groups
	slots   int // every node's slots (0: not checked)
	keyPath string
	beat    time.Duration
	// helloWait is HolderConfig.HelloWait.
	helloWait time.Duration
	// holderCert is HolderConfig.holderCert.
	holderCert string
	// Refused is told of every connection that was turned away, and why
	// (a wrong token, no TLS, a node that joined twice); nil: nobody.
	Refused func(remote, why string)
	// Stalled is told when the holder fails to accept a connection (out
	// of file descriptors), once per run of failures; nil: nobody.
	Stalled func(why string)

	msgs chan taskqueue.NodeMessage
	done chan struct{}
	// shaking holds a token per handshake under way (shakingAtOnce).
	shaking chan struct{}

	mu sync.Mutex
	// links are the connections there, by the node at their other end;
	// routes the connection that reaches each node there: its own, or
	// its relay's.
	links, routes map[int]*conn
	joined        map[int]bool // every node that ever joined
	ending        sync.Once    // Close or abort
	// closing: close began, and has told the nodes there the queue's
	// end; one welcomed later is told by its own handshake (guarded by
	// mu).
	closing bool
	// aborted: a relay cut its group off (abort); the connections it
	// closed are not node losses to report.
	aborted atomic.Bool
}

// HolderConfig is what a holder is opened with.
type HolderConfig struct {
	Run   string // the run's id, the same on every node (job, step, launch)
	Nodes int    // the launch's nodes, the holder included
	// Slots is the holder's number of slots; every node must have as
	// many, since a task's slot number ({%}) is node × Slots + slot + 1.
	Slots int
	// Host is the name the other nodes reach the holder by; Port its
	// port (0: any free one; a taken one is an error).
	Host string
	Port int
	// KeyDir holds the key file (KeyDir()).
	KeyDir string
	// Beat is the ping interval (default Beat).
	Beat time.Duration
	// HelloWait bounds a connection's TLS handshake, and then its hello
	// (default handshakeWait).
	HelloWait time.Duration
	// Group is the nodes per relay's group (Groups; 0: no tree).
	Group int
	// Refused and Stalled become the Holder's, set before it accepts.
	Refused func(remote, why string)
	Stalled func(why string)
	// holderCert is, for a relay's group, node 0's certificate hash,
	// written in every key file of the group (Key.HolderCert).
	holderCert string
}

// Listen opens the holder: it listens on every address at cfg.Port,
// then writes the key file, so that a node that reads it finds the
// holder there.
func Listen(cfg HolderConfig) (*Holder, error) {
	return listen(cfg, 1, cfg.Nodes-1)
}

// listen opens a holder that admits nodes first..last: the holder, or a
// relay for its group.
func listen(cfg HolderConfig, first, last int) (*Holder, error) {
	cert, hash, err := newCert(cfg.Run)
	if err != nil {
		return nil, err
	}
	tok, err := token()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
	if err != nil {
		return nil, err
	}
	h := &Holder{
		ln: ln, tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13},
		token: tok, run: cfg.Run, nodes: cfg.Nodes, holderCert: cfg.holderCert, Refused: cfg.Refused, Stalled: cfg.Stalled, first: first, last: last, groups: Groups{Nodes: cfg.Nodes, Size: cfg.Group}, slots: cfg.Slots, keyPath: KeyPath(cfg.KeyDir, cfg.Run), beat: cfg.Beat, helloWait: cfg.HelloWait,
		msgs: make(chan taskqueue.NodeMessage, 256), done: make(chan struct{}), shaking: make(chan struct{}, shakingAtOnce), links: map[int]*conn{}, routes: map[int]*conn{}, joined: map[int]bool{},
	}
	if h.beat == 0 {
		h.beat = Beat
	}
	if h.helloWait == 0 {
		h.helloWait = handshakeWait
	}
	sweep(cfg.KeyDir)
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	if err := writeKey(h.keyPath, Key{Run: cfg.Run, State: StateOpen, Addr: addr, CertHash: hash, Token: tok, Nodes: cfg.Nodes, Group: cfg.Group, HolderCert: cfg.holderCert}); err != nil {
		ln.Close()
		return nil, fmt.Errorf("writing the key file: %w", err)
	}
	go h.acceptLoop()
	return h, nil
}

// Port is where the holder listens.
func (h *Holder) Port() int { return h.ln.Addr().(*net.TCPAddr).Port }

// Nodes is the launch's nodes, the holder included.
func (h *Holder) Nodes() int { return h.nodes }

// KeyPath is the run's key file.
func (h *Holder) KeyPath() string { return h.keyPath }

// Messages are the nodes' messages, and the link's news of them
// (taskqueue.MsgJoined, taskqueue.MsgLost).
func (h *Holder) Messages() <-chan taskqueue.NodeMessage { return h.msgs }

// Send queues m for node m.Node; a node not (or no longer) there gets
// nothing.
func (h *Holder) Send(m taskqueue.NodeMessage) {
	h.mu.Lock()
	c := h.routes[m.Node]
	h.mu.Unlock()
	if c != nil {
		c.send(frame{NodeMessage: m})
	}
}

// Broadcast queues m for every node there: once per connection, which a
// relay passes on to its group.
func (h *Holder) Broadcast(m taskqueue.NodeMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for node, c := range h.links {
		m.Node = node
		c.send(frame{NodeMessage: m, All: true})
	}
}

// acceptLoop admits connections until the listener is closed. The
// goroutines it starts end with their connection; what they deliver after
// Close is dropped (deliver). Any other failure to accept — out of file
// descriptors (EMFILE: 10,000 nodes need 10,000, and `ulimit -n` may be
// lower), a connection reset before it was accepted — is waited out, as
// net/http's server does, so that the nodes still to come are admitted
// once descriptors free up; it ended the loop, and no node joined after.
func (h *Holder) acceptLoop() {
	var pause time.Duration
	for {
		c, err := h.ln.Accept()
		switch {
		case errors.Is(err, net.ErrClosed):
			return
		case err != nil:
			if pause == 0 && h.Stalled != nil {
				h.Stalled(err.Error())
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(pause):
			case <-h.done:
				return
			}
			continue
		}
		pause = 0
		go h.admit(tcpConn(c))
	}
}

// admit shakes hands with a connection, checks its hello and, if it is
// one of the run's nodes, follows it until it ends.
func (h *Holder) admit(raw net.Conn) {
	raw, ok := h.spoke(raw)
	if !ok {
		return
	}
	select {
	case h.shaking <- struct{}{}:
	case <-h.done:
		raw.Close()
		return
	}
	c, hello, err := h.greet(raw)
	<-h.shaking
	if err != nil {
		return
	}
	if err := writeOne(c.c, frame{NodeMessage: taskqueue.NodeMessage{Kind: kindWelcome}, Wire: wireVersion}, handshakeWait); err != nil {
		h.forget(hello.Node, nil)
		c.c.Close()
		return
	}
	go c.writeLoop()
	h.mu.Lock()
	if h.closing {
		// welcomed after the queue's last word went out (close): the
		// queue is over for it too, as for the nodes close told, and it
		// must hear so, or it takes the closed connection for its
		// holder's loss (a late joiner of a relay's group exited 255)
		h.mu.Unlock()
		h.forget(hello.Node, nil)
		c.send(frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgEnd}, All: true})
		c.close(time.Second)
		return
	}
	h.links[hello.Node], h.routes[hello.Node] = c, c
	h.mu.Unlock()
	if !h.deliver(taskqueue.NodeMessage{Kind: taskqueue.MsgJoined, Node: hello.Node, Host: hello.Host, Slots: hello.Slots}) {
		c.close(time.Second)
		return
	}
	node := hello.Node
	why := c.readLoop(func(f frame) bool {
		if h.groups.IsRelay(node) && f.Node != 0 && f.Node != node {
			return h.fromRelay(node, c, f.NodeMessage)
		}
		f.NodeMessage.Node = node // a node speaks for itself only
		return h.deliver(f.NodeMessage)
	})
	behind := h.forget(node, c)
	c.close(time.Second)
	if why == nil || h.aborted.Load() {
		// a relay that cut its group off (abort) closed this connection:
		// the holder learns of the group's loss from the relay's own
		// end, with its reason, not of each node's as a closed socket
		// ("use of closed network connection"), which, racing the
		// relay's end, it heard first at times
		return
	}
	for _, m := range behind {
		h.deliver(taskqueue.NodeMessage{Kind: taskqueue.MsgLost, Node: m, Why: fmt.Sprintf("its group's relay, node %d, was lost: %v", node, why)})
	}
	h.deliver(taskqueue.NodeMessage{Kind: taskqueue.MsgLost, Node: node, Why: why.Error()})
}

// fromRelay takes a message a relay sent for a node of its group (rule
// 4): the node's joining and loss, which the relay's link saw, and what
// the node said. A relay speaks for its own group only, and for a node
// once it joined there.
func (h *Holder) fromRelay(relay int, c *conn, m taskqueue.NodeMessage) bool {
	first, last := h.groups.Members(relay)
	if m.Node < first || m.Node > last {
		h.refuse(c.c.RemoteAddr(), fmt.Sprintf("relay %d spoke for node %d, not of its group %d..%d: ignored", relay, m.Node, first, last))
		return true
	}
	h.mu.Lock()
	there := h.routes[m.Node] == c
	switch {
	case m.Kind == taskqueue.MsgJoined && !h.joined[m.Node] && (h.slots == 0 || m.Slots == h.slots):
		h.joined[m.Node], h.routes[m.Node], there = true, c, true
	case m.Kind == taskqueue.MsgJoined:
		there = false
	case m.Kind == taskqueue.MsgLost && there:
		delete(h.routes, m.Node)
	}
	h.mu.Unlock()
	if !there {
		h.refuse(c.c.RemoteAddr(), fmt.Sprintf("relay %d spoke for node %d, which has not joined there (or joined twice, or with another slot count): ignored", relay, m.Node))
		return true
	}
	return h.deliver(m)
}

// spoke waits, without a turn, for the connection's first byte (its
// ClientHello's), up to helloWait. A turn is for the CPU of a handshake: a
// connection that says nothing (a port scan, a health check, a client of
// another protocol) holding one for its whole helloWait, eight of them
// kept every node out for as long. The connection returned reads through
// the byte it peeked at.
func (h *Holder) spoke(raw net.Conn) (net.Conn, bool) {
	waited := make(chan struct{})
	defer close(waited)
	go func() { // Close ends the wait
		select {
		case <-h.done:
			raw.Close()
		case <-waited:
		}
	}()
	br := bufio.NewReaderSize(raw, 16)
	raw.SetReadDeadline(time.Now().Add(h.helloWait))
	if _, err := br.Peek(1); err != nil {
		h.refuse(raw.RemoteAddr(), "no TLS handshake: "+err.Error())
		raw.Close()
		return nil, false
	}
	return peekedConn{raw, br}, true
}

// peekedConn is a connection read through the reader that peeked at it.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// greet shakes hands with a connection and reads its hello, which it
// checks (check); a node it refuses is told why, one that said nothing in
// time is not (it may try again: a holder busy with many joins is not a
// refusal).
func (h *Holder) greet(raw net.Conn) (*conn, frame, error) {
	tc := tls.Server(raw, h.tls)
	tc.SetDeadline(time.Now().Add(h.helloWait))
	if err := tc.Handshake(); err != nil {
		h.refuse(raw.RemoteAddr(), "no TLS handshake: "+err.Error())
		tc.Close()
		return nil, frame{}, err
	}
	tc.SetDeadline(time.Time{})
	c := newConn(tc, h.beat)
	hello, err := c.readShake(h.helloWait)
	if err != nil {
		h.refuse(raw.RemoteAddr(), "no hello: "+err.Error())
		tc.Close()
		return nil, frame{}, err
	}
	if err := h.check(hello); err != nil {
		h.refuse(raw.RemoteAddr(), err.Error()) // before the answer: whoever hears it finds it said
		writeOne(tc, frame{NodeMessage: taskqueue.NodeMessage{Kind: kindRefused, Why: err.Error()}}, time.Second)
		tc.Close()
		return nil, frame{}, err
	}
	return c, hello, nil
}

// check admits a hello: the key's token, this run, a node of the launch
// that has not joined before. The node is registered when admitted.
func (h *Holder) check(f frame) error {
	switch {
	case f.Kind != kindHello:
		return errors.New("no hello")
	case subtle.ConstantTimeCompare([]byte(f.Token), []byte(h.token)) != 1:
		return errors.New("a wrong token: it has not read this run's key file")
	case f.Wire != wireVersion:
		return otherWire(fmt.Sprintf("node %d", f.Node), f.Wire)
	case f.Run != h.run:
		return fmt.Errorf("run %q, not %q", f.Run, h.run)
	case f.Node < h.first || f.Node > h.last:
		return fmt.Errorf("node %d is not one of nodes %d..%d", f.Node, h.first, h.last)
	case f.Slots < 1:
		return fmt.Errorf("node %d has no slot", f.Node)
	case h.slots > 0 && f.Slots != h.slots:
		return fmt.Errorf("node %d has %d slot(s) and node 0 has %d: the slot numbers ({%%} = node × slots + slot + 1) would overlap; give -n N so that every node runs N", f.Node, f.Slots, h.slots)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.joined[f.Node] {
		return fmt.Errorf("node %d joined before", f.Node)
	}
	h.joined[f.Node] = true
	return nil
}

// forget: node, whose connection c was, is no longer there to send to,
// nor are the nodes of its group it spoke for: behind, which are lost
// with it (rule 5).
func (h *Holder) forget(node int, c *conn) (behind []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.links, node)
	delete(h.routes, node)
	if !h.groups.IsRelay(node) || c == nil {
		return nil
	}
	first, last := h.groups.Members(node)
	for m := first; m <= last; m++ {
		if h.routes[m] == c {
			delete(h.routes, m)
			behind = append(behind, m)
		}
	}
	return behind
}

// deliver hands m to the run, unless the holder is closed.
func (h *Holder) deliver(m taskqueue.NodeMessage) bool {
	select {
	case h.msgs <- m:
		return true
	case <-h.done:
		return false
	}
}

func (h *Holder) refuse(remote net.Addr, why string) {
	if h.Refused != nil {
		h.Refused(remote.String(), why)
	}
}

// Close ends the link once the run is over: every node gets what was
// queued for it, then taskqueue.MsgEnd and the end of the stream. The key file goes too —
// unless a node never joined: then it says the queue is over, so that a
// node that comes late stops at once instead of waiting.
func (h *Holder) Close() error {
	err := net.ErrClosed
	h.ending.Do(func() { err = h.close() })
	return err
}

// abort ends the link at once, with no word of the queue's end to the
// nodes there: a relay's group, cut off from the holder (Groups, rule
// 5). The key file says why, to a node yet to join.
func (h *Holder) abort(why string) {
	h.ending.Do(func() {
		h.aborted.Store(true) // before the connections close: their ends are not losses to report
		h.ln.Close()
		// the key first: a node that finds its connection closed, and
		// tries again, reads why
		writeKey(h.keyPath, Key{Run: h.run, State: StateFailed, Why: why, HolderCert: h.holderCert})
		h.mu.Lock()
		for _, c := range h.links {
			c.c.Close()
		}
		h.mu.Unlock()
		close(h.done)
	})
}

func (h *Holder) close() error {
	h.ln.Close()
	h.mu.Lock()
	h.closing = true // a node welcomed from now on is told the end by its handshake's goroutine
	conns := make([]*conn, 0, len(h.links))
	for _, c := range h.links {
		conns = append(conns, c)
	}
	all := len(h.joined) == h.last-h.first+1
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		// the queue is over for every node still there, also for one
		// that joined after the run's last word
		c.send(frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgEnd}, All: true})
		wg.Add(1)
		go func() { defer wg.Done(); c.close(3 * time.Second) }()
	}
	wg.Wait()
	close(h.done)
	if all {
		return os.Remove(h.keyPath)
	}
	return writeKey(h.keyPath, Key{Run: h.run, State: StateOver, HolderCert: h.holderCert})
}
