package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// stream is one of a process's output streams: the pipe it writes, and
// the copier that passes what it reads on (to the console, with or
// without a label, or to the process's file) besides its output ring.
// Output always passes through gpulaunch, as under srun, so that
// `gpulaunch logs` has it; the child sees a pipe, not a terminal.
type Stream struct {
	child  int // the pipe's write end, a plain descriptor: only the child uses it
	fd     int // the read end, non-blocking
	copier *lineCopier
	// ended is called once, when the stream has reached its end.
	ended func()
	again bool // the last read found the pipe empty but open
	full  bool // the last read filled the space it was given: the pipe may hold more
}

// outputPipe makes the pipe of one output stream. The write end stays a
// plain descriptor, handed to the child and closed: an os.File would
// register it with Go's poller and unregister it again, for every task of
// a queue. The read end is non-blocking: the slot thread reads it when
// poll says so, and drains it without blocking.
func outputPipe() (fd, child int, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, fmt.Errorf("output pipe: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, -1, fmt.Errorf("output pipe: %w", err)
	}
	return fds[0], fds[1], nil
}

// Read makes the stream the copier's reader: an empty open pipe reads as
// nothing, the end of the pipe as io.EOF.
func (s *Stream) Read(p []byte) (int, error) {
	n, err := unix.Read(s.fd, p)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		s.again = true
		return 0, nil
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	s.full = n == len(p)
	return n, nil
}

// readOnce copies what the pipe has; false once the stream has ended.
func (s *Stream) readOnce() bool {
	if err := s.copier.readOnce(s); err != nil {
		_ = unix.Close(s.fd)
		s.ended()
		return false
	}
	return true
}

// maxReadsPerWake bounds the reads of one stream per wake of its slot
// thread, so that a stream that never runs dry does not keep the slot's
// other stream and its process's exit waiting.
const maxReadsPerWake = 16

// readMore copies what the pipe has, reading again at once while each
// read fills its buffer, up to maxReadsPerWake reads; false once the
// stream has ended. A writer faster than gpulaunch keeps its pipe full,
// and a poll before each read was a third system call beside cat's read
// and write: 8 writers through -l ran at 0.70x cat's rate (make bench).
func (s *Stream) readMore() bool {
	for range maxReadsPerWake {
		s.full = false
		if !s.readOnce() {
			return false
		}
		if !s.full {
			return true
		}
	}
	return true
}

// end ends a stream that poll found at its end.
func (s *Stream) end() {
	_ = s.copier.readOnce(atEnd{})
	_ = unix.Close(s.fd)
	s.ended()
}

// atEnd reads as a pipe with no writer left.
type atEnd struct{}

func (atEnd) Read([]byte) (int, error) { return 0, io.EOF }

// drain copies the rest of a stream whose process has exited, and says
// whether it reached the stream's end. When the pipe stays open (a process
// the exited one left behind holds it too), it returns false at once, and
// the caller has copyRest copy the rest.
func (s *Stream) drain() bool {
	for {
		s.again = false
		if !s.readOnce() {
			return true
		}
		if s.again {
			return false
		}
	}
}

// copyRest copies the stream to its end on Go's poller: for a stream
// that outlives its process, and on kernels without pidfds. A closed
// console or file does not end it (LineMux.write): the process must not
// be left blocked on a full pipe.
func (s *Stream) copyRest() error {
	f := &pausable{f: os.NewFile(uintptr(s.fd), "|0")}
	defer s.ended()
	defer f.f.Close()
	for {
		f.awaitAtMost(s.copier.holding)
		if err := s.copier.readOnce(f); err != nil {
			return nil
		}
		if f.paused {
			s.copier.letGoIfPaused(time.Now())
		}
	}
}

// pausable is copyRest's reader: while its copier holds a long line, a
// read waits at most holdPause, and reads as nothing, paused, at the end
// of that wait.
type pausable struct {
	f        *os.File
	deadline bool // a read deadline is set
	paused   bool // the last read ended at its deadline
}

// awaitAtMost sets the next read's deadline: holdPause from now while
// the copier holds a line, none otherwise.
func (p *pausable) awaitAtMost(holding bool) {
	switch {
	case holding:
		p.deadline = p.f.SetReadDeadline(time.Now().Add(holdPause)) == nil
	case p.deadline:
		_ = p.f.SetReadDeadline(time.Time{})
		p.deadline = false
	}
}

func (p *pausable) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	p.paused = errors.Is(err, os.ErrDeadlineExceeded)
	if p.paused {
		return n, nil
	}
	return n, err
}

// close gives up a stream that never started: no process writes it.
func (s *Stream) close() {
	_ = unix.Close(s.child)
	_ = unix.Close(s.fd)
	s.copier.release()
}

// OpenStream makes one output stream of a process about to start: a pipe
// whose read end the copier passes to sink, labelled with label, and to
// ring. ended is called once the stream has reached its end.
func OpenStream(sink *LineMux, label string, ring *Ring, ended func()) (*Stream, error) {
	fd, child, err := outputPipe()
	if err != nil {
		return nil, err
	}
	return &Stream{child: child, fd: fd, copier: sink.copier(label, ring), ended: ended}, nil
}

// ChildFd is the pipe's write end, for the child's file table.
func (s *Stream) ChildFd() uintptr { return uintptr(s.child) }

// CloseChild closes the write end in gpulaunch once the child has it.
func (s *Stream) CloseChild() { _ = unix.Close(s.child) }

// CloseStreams gives up streams that no process will write.
func CloseStreams(ss []*Stream) {
	for _, s := range ss {
		s.close()
		s.ended()
	}
}
