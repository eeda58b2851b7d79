//go:build linux

package process

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// chunkSize bounds what one instance stream buffers: a line longer than
// this is streamed through while its writer holds the output, so memory
// stays bounded whatever the app writes. It holds the output while it
// keeps writing: see holdPause.
const chunkSize = 64 << 10

// holdPause is how long the writer of a held line (one longer than
// chunkSize, see lineCopier.holding) may pause while another stream waits
// for the output, before its line is let go. Held until its newline, a
// progress bar (tqdm's \r redraws, on stderr, for a whole epoch) stopped
// every other instance's stderr, and with it their work, once their pipes
// filled: instance 1 of two finished at 6.1 s instead of 1.1 s behind
// instance 0's 6 s bar. tqdm redraws at most every 0.1 s (its mininterval),
// so a bar pauses longer than this between redraws; a 4 MiB line written
// at once does not, unless its writer is descheduled that long.
const holdPause = 50 * time.Millisecond

// firstChunk is a stream's first buffer. They are pooled: a task queue
// opens two streams per task, thousands of tasks a minute.
const firstChunk = 4 << 10

var firstBuffers = sync.Pool{New: func() any { return new([firstChunk]byte) }}

// LineMux writes the lines of many streams to one writer, each line
// prefixed with its stream's label and never torn: a line is written
// whole, under the lock, so lines of different instances do not
// interleave mid-line. Complete lines read in one go are written in one
// write call, which is what keeps it near cat's throughput.
//
// What it keeps whole is its own lines: stdout and stderr are two muxes,
// and gpulaunch's log lines take neither lock. With both streams in one
// file (a terminal, slurm-%j.out) a stderr line may land inside a stdout
// line longer than chunkSize while it is held. Sharing the lock would make
// the supervisor's log wait on an app that never ends its line.
type LineMux struct {
	mu sync.Mutex
	w  io.Writer
	// broken, when set, is told of the first write that fails (a reader
	// that has gone, `gpulaunch … | head`; a full disk). The mux then
	// drops what it is given, and the run goes on: no instance is ever
	// blocked on output that nobody can take, and the output ring still
	// has it for `gpulaunch logs`.
	broken func(error)
	failed bool // a write failed; guarded by mu, as every write is
	// waiting counts the streams blocked on mu: a held line is let go
	// (lineCopier.letGoIfPaused) only when some other stream waits.
	waiting atomic.Int32
}

// lock takes mu, counted in waiting while it waits.
func (m *LineMux) lock() {
	m.waiting.Add(1)
	m.mu.Lock()
	m.waiting.Add(-1)
}

// NewLineMux is a mux writing to w; broken is told of its first failed
// write (nil: nobody).
func NewLineMux(w io.Writer, broken func(error)) *LineMux {
	return &LineMux{w: w, broken: broken}
}

// copyLabelled copies r to the mux until EOF, and the same lines,
// unlabelled, to ring (nil: none). A last line without a newline is
// written with one added, so the next label starts a line. Bytes are
// passed through as they are: binary output survives.
func (m *LineMux) copyLabelled(r io.Reader, label string, ring *Ring) error {
	c := m.copier(label, ring)
	for {
		if err := c.readOnce(r); err != nil {
			return ignoreEOF(err)
		}
	}
}

// lineCopier copies one stream to a mux a read at a time, so that
// whoever owns the stream decides when to read: a goroutine until EOF, or
// a slot thread between its other work.
type lineCopier struct {
	m       *LineMux
	label   string
	ring    *Ring
	buf     []byte
	filled  int
	holding bool // inside an over-long line: the lock is held
	// heldAt is when the held line last grew (holding only): its writer
	// has paused since, and letGoIfPaused measures the pause from it.
	heldAt time.Time
	// detached: the process that opened the stream has exited, and what
	// is left is written by processes it left behind (a daemon holding
	// its stdout). Such a stream never holds the lock across reads: the
	// other slots' threads would wait on it, their exits unhandled, and
	// the run could not end to end the daemon (a hang for good).
	detached bool
	out      []byte
}

// detach: the stream's process has exited (see detached). A long line it
// left open ends here, with a newline, and the lock is let go.
func (c *lineCopier) detach() {
	if c.holding {
		c.ring.Write([]byte{'\n'})
		c.endHeldLine()
	}
	c.detached = true
}

// endHeldLine ends the held line with a newline and lets go of the mux.
func (c *lineCopier) endHeldLine() {
	c.m.write([]byte{'\n'})
	c.holding = false
	c.m.mu.Unlock()
}

// letGoIfPaused lets go of a held line whose writer has paused for
// holdPause while another stream waits for the output (see holdPause): the
// line ends here with a newline, and its rest goes on as a line of its own,
// labelled again. Nobody waiting, a long line stays whole however slowly
// it comes. Its caller has found the stream's pipe empty at now.
func (c *lineCopier) letGoIfPaused(now time.Time) {
	if c.holding && c.m.waiting.Load() > 0 && now.Sub(c.heldAt) >= holdPause {
		c.endHeldLine() // only the mux: the ring keeps the line as the app wrote it
	}
}

func (m *LineMux) copier(label string, ring *Ring) *lineCopier {
	// Most instances write little: the buffer starts small and doubles
	// up to chunkSize only for a stream that fills it, so that starting
	// 64 instances does not allocate 64 × 2 × chunkSize.
	return &lineCopier{m: m, label: label, ring: ring, buf: firstBuffers.Get().(*[firstChunk]byte)[:]}
}

// readOnce reads from r once and writes out the complete lines it has.
// A read of nothing with no error is no news. At the end of r (any
// error, io.EOF included) it writes the last line, lets go of the mux and
// its buffer, and returns that error; the copier is spent.
func (c *lineCopier) readOnce(r io.Reader) error {
	m := c.m
	n, err := r.Read(c.buf[c.filled:])
	ahead := n > 0 && c.filled+n == len(c.buf) // the read filled its space: the writer is ahead of us
	c.filled += n
	data := c.buf[:c.filled]
	if c.holding {
		if n == 0 && err == nil {
			return nil
		}
		// Continue the long line: up to its newline, then let go.
		c.heldAt = time.Now()
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			m.write(data)
			c.ring.Write(data)
			c.filled = 0
			if err != nil {
				c.ring.Write([]byte{'\n'})
				c.endHeldLine()
				c.release()
				return err
			}
			return nil
		}
		m.write(data[:i+1])
		m.mu.Unlock()
		c.ring.Write(data[:i+1])
		c.holding = false
		data = data[i+1:]
	}
	if j := bytes.LastIndexByte(data, '\n'); j >= 0 {
		lines := data[:j+1]
		c.ring.Write(lines)
		if c.label != "" {
			c.out = c.out[:0]
			for len(lines) > 0 {
				i := bytes.IndexByte(lines, '\n')
				c.out = append(c.out, c.label...)
				c.out = append(c.out, lines[:i+1]...)
				lines = lines[i+1:]
			}
			lines = c.out
		}
		m.lock()
		m.write(lines)
		m.mu.Unlock()
		data = data[j+1:]
	}
	c.filled = copy(c.buf, data)
	if err != nil {
		if c.filled > 0 {
			last := append(c.buf[:c.filled:c.filled], '\n')
			c.ring.Write(last)
			m.lock()
			m.write(append([]byte(c.label), last...))
			m.mu.Unlock()
		}
		c.release()
		return err
	}
	switch {
	case (ahead || c.filled == len(c.buf)) && len(c.buf) < chunkSize:
		// A line longer than the buffer, or a writer faster than us. A
		// fast stream of short lines used to stay at firstChunk: one read
		// and one write per 4 KiB, and 8 writers through -l ran at 0.67x
		// cat's rate; read up to chunkSize at a time they run at 0.88x,
		// with half the system calls (make bench's labelled output, 5
		// interleaved runs). A slow stream keeps its small buffer.
		c.buf = append(c.buf, make([]byte, len(c.buf))...)
	case c.filled == len(c.buf) && c.detached:
		// A line longer than the buffer from a leftover process: written
		// as a line of its own, the lock not held (detached).
		line := append(c.buf[:c.filled:c.filled], '\n')
		m.lock()
		m.write([]byte(c.label))
		m.write(line)
		m.mu.Unlock()
		c.ring.Write(line)
		c.filled = 0
	case c.filled == len(c.buf):
		// A line longer than the buffer: start it and keep the lock
		// until its newline, so no other line can cut into it.
		m.lock()
		c.holding, c.heldAt = true, time.Now()
		m.write([]byte(c.label))
		m.write(c.buf)
		c.ring.Write(c.buf)
		c.filled = 0
	}
	return nil
}

func (c *lineCopier) release() {
	if len(c.buf) == firstChunk {
		firstBuffers.Put((*[firstChunk]byte)(c.buf))
	}
	c.buf = nil
}

// write writes under m.mu. A failure is told once and ends the writing,
// not the run: the supervisor still has to reap every instance.
func (m *LineMux) write(b []byte) {
	if m.failed {
		return
	}
	if _, err := m.w.Write(b); err != nil {
		m.failed = true
		if m.broken != nil {
			m.broken(err)
		}
	}
}

func ignoreEOF(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}
