//go:build linux

package process

import "sync"

// RingSize is how much of each instance's recent output gpulaunch keeps
// for `gpulaunch logs`: enough for a few screens of a training loop's
// progress, small enough that 64 chatty instances cost 8 MiB at most.
const RingSize = 128 << 10

// Ring keeps the last bytes an instance wrote (stdout and stderr, whole
// lines as they arrived) and wakes those following it. Offsets count
// every byte ever written, so a follower that falls more than the ring's
// size behind learns how much it lost instead of reading torn data.
type Ring struct {
	mu     sync.Mutex
	buf    []byte // grows to size, then wraps: byte at offset o sits at o % size
	size   int
	total  int64
	wake   chan struct{} // closed and replaced on every write and on close
	closed bool
}

// NewRing makes a ring of size bytes; memory is taken as output arrives.
func NewRing(size int) *Ring {
	return &Ring{size: size, wake: make(chan struct{})}
}

// Write keeps p, dropping the oldest bytes beyond the ring's size.
func (r *Ring) Write(p []byte) {
	if r == nil || len(p) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.total += int64(len(p))
	if len(p) > r.size {
		p = p[len(p)-r.size:]
	}
	if start := r.total - int64(len(p)); start == int64(len(r.buf)) && len(r.buf)+len(p) <= r.size {
		// Still growing and never wrapped: byte o sits at index o.
		r.buf = append(r.buf, p...)
	} else {
		r.buf = append(r.buf, make([]byte, r.size-len(r.buf))...)
		at := int(start % int64(r.size))
		n := copy(r.buf[at:], p)
		copy(r.buf, p[n:])
	}
	close(r.wake)
	r.wake = make(chan struct{})
}

// Total is how many bytes were ever written.
func (r *Ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Close marks the end of the output: followers stop once caught up.
func (r *Ring) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.wake)
	}
}

// Since returns what was written from offset off on (off < 0: the oldest
// byte kept), the offset to ask for next, how many bytes from off had
// already dropped out, a channel closed when there is more, and whether
// the output has ended and everything has been read.
func (r *Ring) Since(off int64) (data []byte, next, lost int64, more <-chan struct{}, ended bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest := r.total - int64(len(r.buf))
	if off < 0 {
		off = oldest
	}
	if off < oldest {
		lost, off = oldest-off, oldest
	}
	off = min(off, r.total)
	for o := off; o < r.total; {
		at := int(o % int64(r.size))
		end := min(len(r.buf), at+int(r.total-o))
		data = append(data, r.buf[at:end]...)
		o += int64(end - at)
	}
	return data, r.total, lost, r.wake, r.closed
}
