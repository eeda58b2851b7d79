package study

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

// lineSink takes a run's labelled output ("3: text"), hands each line to
// the metric's reading, and keeps the last lines for a failure's report.
type lineSink struct {
	mu      sync.Mutex
	partial []byte
	reading *scaling.Reading
	tail    int
	last    []string
}

func (s *lineSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		s.line(string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
}

func (s *lineSink) line(l string) {
	if s.last = append(s.last, l); len(s.last) > s.tail {
		s.last = s.last[1:]
	}
	label, text, ok := strings.Cut(l, ": ")
	inst, err := strconv.Atoi(label)
	if ok && err == nil && s.reading != nil {
		s.reading.Line(inst, text)
	}
}

func (s *lineSink) lastLines() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "  " + strings.Join(s.last, "\n  ")
}
