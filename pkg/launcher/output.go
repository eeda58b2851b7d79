package launcher

import (
	"bytes"
	"io"
	"sync"
)

// chunkSize bounds what one instance stream buffers: a line longer than
// this is streamed through while its writer holds the output, so memory
// stays bounded whatever the app writes.
const chunkSize = 64 << 10

// firstChunk is a stream's first buffer. They are pooled: a task queue
// opens two streams per task, thousands of tasks a minute.
const firstChunk = 4 << 10

var firstBuffers = sync.Pool{New: func() any { return new([firstChunk]byte) }}

// lineMux writes the lines of many streams to one writer, each line
// prefixed with its stream's label and never torn: a line is written
// whole, under the lock, so lines of different instances do not
// interleave mid-line. Complete lines read in one go are written in one
// write call, which is what keeps it near cat's throughput.
type lineMux struct {
	mu sync.Mutex
	w  io.Writer
}

// copyLabelled copies r to the mux until EOF, and the same lines,
// unlabelled, to ring (nil: none). A last line without a newline is
// written with one added, so the next label starts a line. Bytes are
// passed through as they are: binary output survives.
func (m *lineMux) copyLabelled(r io.Reader, label string, ring *Ring) error {
	// Most instances write little: the buffer starts small and doubles
	// up to chunkSize only for a stream that fills it, so that starting
	// 64 instances does not allocate 64 × 2 × chunkSize.
	buf := firstBuffers.Get().(*[firstChunk]byte)[:]
	defer func() {
		if len(buf) == firstChunk {
			firstBuffers.Put((*[firstChunk]byte)(buf))
		}
	}()
	var out []byte
	filled := 0
	holding := false // inside an over-long line: the lock is held
	for {
		n, err := r.Read(buf[filled:])
		filled += n
		data := buf[:filled]
		if holding {
			// Continue the long line: up to its newline, then let go.
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				m.write(data)
				ring.Write(data)
				filled = 0
				if err != nil {
					m.write([]byte{'\n'})
					ring.Write([]byte{'\n'})
					m.mu.Unlock()
					return ignoreEOF(err)
				}
				continue
			}
			m.write(data[:i+1])
			m.mu.Unlock()
			ring.Write(data[:i+1])
			holding = false
			data = data[i+1:]
		}
		if j := bytes.LastIndexByte(data, '\n'); j >= 0 {
			lines := data[:j+1]
			ring.Write(lines)
			if label != "" {
				out = out[:0]
				for len(lines) > 0 {
					i := bytes.IndexByte(lines, '\n')
					out = append(out, label...)
					out = append(out, lines[:i+1]...)
					lines = lines[i+1:]
				}
				lines = out
			}
			m.mu.Lock()
			m.write(lines)
			m.mu.Unlock()
			data = data[j+1:]
		}
		filled = copy(buf, data)
		if err != nil {
			if filled > 0 {
				last := append(buf[:filled:filled], '\n')
				ring.Write(last)
				m.mu.Lock()
				m.write(append([]byte(label), last...))
				m.mu.Unlock()
			}
			return ignoreEOF(err)
		}
		if filled == len(buf) && len(buf) < chunkSize {
			buf = append(buf, make([]byte, len(buf))...)
			continue
		}
		if filled == len(buf) {
			// A line longer than the buffer: start it and keep the lock
			// until its newline, so no other line can cut into it.
			m.mu.Lock()
			holding = true
			m.write([]byte(label))
			m.write(buf)
			ring.Write(buf)
			filled = 0
		}
	}
}

// write ignores errors: a closed stdout must not stop the supervisor,
// which still has to reap every instance.
func (m *lineMux) write(b []byte) { _, _ = m.w.Write(b) }

func ignoreEOF(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}
