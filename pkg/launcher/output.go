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

// lineMux writes the lines of many streams to one writer, each line
// prefixed with its stream's label and never torn: a line is written
// whole, under the lock, so lines of different instances do not
// interleave mid-line. Complete lines read in one go are written in one
// write call, which is what keeps it near cat's throughput.
type lineMux struct {
	mu sync.Mutex
	w  io.Writer
}

// copyLabelled copies r to the mux until EOF. A last line without a
// newline is written with one added, so the next label starts a line.
// Bytes are passed through as they are: binary output survives.
func (m *lineMux) copyLabelled(r io.Reader, label string) error {
	buf := make([]byte, chunkSize)
	out := make([]byte, 0, chunkSize+chunkSize/8)
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
				filled = 0
				if err != nil {
					m.write([]byte{'\n'})
					m.mu.Unlock()
					return ignoreEOF(err)
				}
				continue
			}
			m.write(data[:i+1])
			m.mu.Unlock()
			holding = false
			data = data[i+1:]
		}
		out = out[:0]
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			out = append(out, label...)
			out = append(out, data[:i+1]...)
			data = data[i+1:]
		}
		if len(out) > 0 {
			m.mu.Lock()
			m.write(out)
			m.mu.Unlock()
		}
		filled = copy(buf, data)
		if err != nil {
			if filled > 0 {
				m.mu.Lock()
				m.write(append(append([]byte(label), buf[:filled]...), '\n'))
				m.mu.Unlock()
			}
			return ignoreEOF(err)
		}
		if filled == len(buf) {
			// A line longer than the buffer: start it and keep the lock
			// until its newline, so no other line can cut into it.
			m.mu.Lock()
			holding = true
			m.write([]byte(label))
			m.write(buf)
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
