package nodelink

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// frame is one message on the wire (wire.go): a queue message, or one of
// the link's own (hello, welcome, refused, ping).
type frame struct {
	taskqueue.NodeMessage
	Token string `json:"token,omitempty"` // hello: the key's token
	Run   string `json:"run,omitempty"`   // hello: the run it is for
	// Wire: hello and welcome, the form of the frames after them
	// (wireVersion).
	Wire int `json:"wire,omitempty"`
	// All: for every node behind the connection — a relay passes it on
	// to its whole group (Holder.Broadcast).
	All bool `json:"all,omitempty"`
}

// The link's own kinds.
const (
	kindHello   taskqueue.MessageKind = "hello"
	kindWelcome taskqueue.MessageKind = "welcome"
	kindRefused taskqueue.MessageKind = "refused"
	kindPing    taskqueue.MessageKind = "ping"
)

// Beat is how often a side with nothing to say pings the other (after a
// beat of silence: an idle connection carries a ping every two beats),
// and silentFor how many beats of silence make the other side lost: a node
// whose gpulaunch is killed is noticed at once (its kernel closes the
// connection), one whose machine or network dies after 10 beats.
const (
	Beat      = 2 * time.Second
	silentFor = 10
)

// maxLine bounds one message: a task line may be up to 1 MiB (the input
// reader's limit), and a task carries it a few times (its line, command,
// arguments).
const maxLine = 16 << 20

// readBuffer is a connection's read buffer: a message longer than it is
// read in parts (read). The holder keeps one per node, so it counts in
// its memory per node (64 KiB at most: docs/architecture.md, "Scale"); a
// 64 KiB buffer alone was that budget.
const readBuffer = 4 << 10

// conn is one TLS connection of the link and its writer: messages are
// queued without blocking and written in order by one goroutine.
type conn struct {
	c    *tls.Conn
	r    *bufio.Reader // every read, the handshake's too: nothing read ahead is lost
	beat time.Duration

	// readBy and writeBy are the deadlines last set, moved on only once
	// they would move by a beat (deadline): setting one per message cost
	// a timer's update each.
	readBy, writeBy time.Time

	mu      sync.Mutex
	queue   []frame
	closing bool
	wake    chan struct{}
	written chan struct{} // closed when the writer is done
}

func newConn(c *tls.Conn, beat time.Duration) *conn {
	return &conn{c: c, r: bufio.NewReaderSize(c, readBuffer), beat: beat, wake: make(chan struct{}, 1), written: make(chan struct{})}
}

// send queues f; a status replaces a status not yet written, so a slow
// reader gets the latest counts, not every one.
func (c *conn) send(f frame) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if n := len(c.queue); f.Kind == taskqueue.MsgStatus && n > 0 && c.queue[n-1].Kind == taskqueue.MsgStatus && c.queue[n-1].Node == f.Node && c.queue[n-1].All == f.All {
		c.queue[n-1] = f
	} else {
		c.queue = append(c.queue, f)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes what is queued, and a ping after a beat of silence,
// until close; then what is left, and the end of the stream.
func (c *conn) writeLoop() {
	defer close(c.written)
	w := bufio.NewWriter(c.c)
	tick := time.NewTicker(c.beat)
	defer tick.Stop()
	// wrote: something (a ping too) was written since the last tick. A
	// ping goes only after a whole beat of silence: pinging at every tick
	// that found the queue empty sent 10,000 nodes 5,000 pings a second
	// while tasks flowed to them.
	wrote := false
	for {
		var ticked bool
		select {
		case <-c.wake:
		case <-tick.C:
			ticked = true
		}
		c.mu.Lock()
		batch, closing := c.queue, c.closing
		c.queue = nil
		c.mu.Unlock()
		switch {
		case closing || len(batch) > 0:
		case !ticked:
			continue
		case wrote:
			wrote = false
			continue
		default:
			batch = []frame{{NodeMessage: taskqueue.NodeMessage{Kind: kindPing}}}
		}
		wrote = true
		if by, ok := deadline(c.writeBy, silentFor*c.beat, c.beat); ok {
			c.writeBy = by
			c.c.SetWriteDeadline(by)
		}
		if !writeFrames(w, batch) {
			c.c.Close() // the reader sees it and says the other side is lost
			return
		}
		if w.Flush() != nil {
			c.c.Close()
			return
		}
		if closing {
			c.c.CloseWrite()
			return
		}
	}
}

// close writes what is queued, ends the stream and waits for that up to
// limit; then the connection is closed.
func (c *conn) close(limit time.Duration) {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-c.written:
	case <-time.After(limit):
	}
	c.c.Close()
}

// readLoop hands every message to deliver, pings left out, until the
// stream ends or falls silent; it returns why.
func (c *conn) readLoop(deliver func(frame) bool) error {
	for {
		f, err := c.read(silentFor * c.beat)
		switch {
		case errors.Is(err, io.EOF):
			return errors.New("the connection was closed")
		case err != nil:
			return err
		case f.Kind == kindPing:
			continue
		}
		if !deliver(f) {
			return nil
		}
	}
}

// frameBuffers hold frames' wire forms while a writer writes them: shared,
// so that an idle connection holds none (each of 10,000 connections
// keeping its own would count in the holder's memory per node), and a
// long task line's buffer, over maxKept, is not kept at all.
var frameBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxKept = 64 << 10

// writeFrames writes batch to w; false when w failed.
func writeFrames(w *bufio.Writer, batch []frame) bool {
	buf := frameBuffers.Get().(*[]byte)
	out := *buf
	ok := true
	for _, f := range batch {
		out = appendFrame(out[:0], f)
		if _, err := w.Write(out); err != nil {
			ok = false
			break
		}
	}
	if cap(out) <= maxKept {
		*buf = out
		frameBuffers.Put(buf)
	}
	return ok
}

// read reads one frame within limit.
func (c *conn) read(limit time.Duration) (frame, error) {
	if by, ok := deadline(c.readBy, limit, c.beat); ok {
		c.readBy = by
		c.c.SetReadDeadline(by)
	}
	return readFrame(c.r)
}

// readShake reads a handshake's frame, one JSON line, within limit.
func (c *conn) readShake(limit time.Duration) (frame, error) {
	c.c.SetReadDeadline(time.Now().Add(limit))
	defer c.c.SetReadDeadline(time.Time{})
	var line []byte
	for {
		part, err := c.r.ReadSlice('\n')
		line = append(line, part...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return frame{}, err
		}
		if len(line) > maxLine {
			return frame{}, fmt.Errorf("a message over %d MiB", maxLine>>20)
		}
	}
	var f frame
	if err := json.Unmarshal(line, &f); err != nil {
		return frame{}, fmt.Errorf("a garbled message: %w", jsonerr.Explain("message", line, err))
	}
	return f, nil
}

// deadline is the deadline limit from now, and whether to set it in
// place of last: only once it is a beat later than last, or earlier. So a
// side that falls silent is found within limit and limit less a beat.
func deadline(last time.Time, limit, beat time.Duration) (time.Time, bool) {
	by := time.Now().Add(limit)
	return by, by.Sub(last) >= beat || by.Before(last)
}

// writeOne writes one frame of a handshake, as a JSON line.
func writeOne(c *tls.Conn, f frame, limit time.Duration) error {
	c.SetWriteDeadline(time.Now().Add(limit))
	defer c.SetWriteDeadline(time.Time{})
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	_, err = c.Write(append(data, '\n'))
	return err
}

// newCert makes the holder's certificate for one run: a P-256 key and a
// self-signed certificate, trusted by its hash in the key file only.
func newCert(run string) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, "", err
	}
	tmpl := x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "gpulaunch queue " + run},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, certHash(der), nil
}

func certHash(der []byte) string {
	h := sha256.Sum256(der)
	return hex.EncodeToString(h[:])
}

// pinned is a node's TLS configuration: the holder is whoever shows the
// certificate whose hash the key file holds (no CA: the file is the trust).
func pinned(hash string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // the chain is not checked; VerifyConnection checks the pin
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || certHash(cs.PeerCertificates[0].Raw) != hash {
				return errors.New("the holder's certificate is not the one in the key file")
			}
			return nil
		},
	}
}

// tcpConn turns keepalive on: a dead peer is also noticed by the kernel.
func tcpConn(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(Beat)
	}
	return c
}
