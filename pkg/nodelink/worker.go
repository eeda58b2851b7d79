package nodelink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// ErrOver: the queue ended before this node joined; it has nothing to do.
var ErrOver = errors.New("the queue's holder has ended the queue already")

var errRefused = errors.New("the holder refused this node")

// Worker is the side of a node that is not the holder.
type Worker struct {
	c    *conn
	msgs chan taskqueue.NodeMessage
	done chan struct{}
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
}

// Join waits for the holder's key file, connects to the holder it names,
// checks the holder's certificate against it, and shows its token. It
// tries again until cfg.Wait has passed: the holder may still be starting,
// and a key file left from an earlier run is replaced by the new one.
func Join(cfg WorkerConfig) (*Worker, error) {
	if cfg.Beat == 0 {
		cfg.Beat = Beat
	}
	path := KeyPath(cfg.KeyDir, cfg.Run)
	deadline := time.Now().Add(cfg.Wait)
	var last error
	refused := "" // the token the holder refused: the same key is not tried again
	for {
		k, err := ReadKey(path)
		switch {
		case err == nil && k.State == StateOver:
			return nil, ErrOver
		case err == nil && k.State == StateFailed:
			return nil, fmt.Errorf("the queue's holder (node 0) stopped before the queue began: %s", k.Why)
		case err == nil && k.Token == refused:
			return nil, last
		case err == nil:
			w, err := dial(cfg, k)
			if err == nil {
				return w, nil
			}
			if errors.Is(err, errRefused) {
				refused = k.Token
			}
			last = err
		case errors.Is(err, fs.ErrNotExist):
			last = fmt.Errorf("its key file %s has not appeared", path)
		default:
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("could not join the queue's holder (node 0) within %s: %v (is node 0's gpulaunch running, and %s on a filesystem both nodes see? GPULAUNCH_KEY_DIR sets another)",
				cfg.Wait, last, cfg.KeyDir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dial makes one attempt at the holder k names.
func dial(cfg WorkerConfig, k Key) (*Worker, error) {
	raw, err := net.DialTimeout("tcp", k.Addr, handshakeWait)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(tcpConn(raw), pinned(k.CertHash))
	tc.SetDeadline(time.Now().Add(handshakeWait))
	if err := tc.Handshake(); err != nil {
		tc.Close()
		return nil, err
	}
	tc.SetDeadline(time.Time{})
	c := newConn(tc, cfg.Beat)
	hello := frame{NodeMessage: taskqueue.NodeMessage{Kind: kindHello, Node: cfg.Node, Host: cfg.Host, Slots: cfg.Slots}, Token: k.Token, Run: cfg.Run}
	if err := writeOne(tc, hello, handshakeWait); err != nil {
		tc.Close()
		return nil, err
	}
	answer, err := c.read(handshakeWait)
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
	}
	w := &Worker{c: c, msgs: make(chan taskqueue.NodeMessage, 256), done: make(chan struct{})}
	go c.writeLoop()
	go w.readLoop()
	return w, nil
}

func (w *Worker) readLoop() {
	why := w.c.readLoop(func(f frame) bool { return w.deliver(f.NodeMessage) })
	if why != nil {
		w.deliver(taskqueue.NodeMessage{Kind: taskqueue.MsgLost, Why: why.Error()})
	}
}

func (w *Worker) deliver(m taskqueue.NodeMessage) bool {
	select {
	case w.msgs <- m:
		return true
	case <-w.done:
		return false
	}
}

// Messages are the holder's messages, and taskqueue.MsgLost when it is gone.
func (w *Worker) Messages() <-chan taskqueue.NodeMessage { return w.msgs }

// Send queues m for the holder.
func (w *Worker) Send(m taskqueue.NodeMessage) { w.c.send(frame{NodeMessage: m}) }

// Close sends what is queued and ends the connection.
func (w *Worker) Close() error {
	w.c.close(3 * time.Second)
	close(w.done)
	return nil
}
