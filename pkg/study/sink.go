package study

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpulaunch/gpulaunch/pkg/scaling"
)

// lineSink takes a run's labelled output ("3: text"), hands each line to
// the metric's reading, and keeps the last lines for a failure's report:
// the run's last tail lines, and each instance's own last tail lines (a
// failing instance's error may be long gone from the run's last lines
// when others keep printing: lastLines).
type lineSink struct {
	mu      sync.Mutex
	partial []byte
	reading *scaling.Reading
	tail    int
	last    []sinkLine       // the run's last lines, every instance's
	each    map[int][]string // each labelled instance's last lines
}

// sinkLine is a line as printed and its instance (-1: no label).
type sinkLine struct {
	inst int
	text string
}

// maxKept is the most of a line the sink keeps: it keeps up to tail
// lines of every instance (thousands of them), and an error's line —
// PyTorch's "CUDA out of memory" is some 600 bytes — fits.
const maxKept = 2048

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
	label, text, ok := strings.Cut(l, ": ")
	inst, err := strconv.Atoi(label)
	if !ok || err != nil || inst < 0 {
		inst = -1
	}
	if inst >= 0 && s.reading != nil {
		s.reading.Line(inst, text)
	}
	kept := l
	if len(kept) > maxKept {
		kept = kept[:maxKept] + "…"
	}
	if s.last = append(s.last, sinkLine{inst, kept}); len(s.last) > s.tail {
		s.last = s.last[1:]
	}
	if inst >= 0 {
		if s.each == nil {
			s.each = map[int][]string{}
		}
		if s.each[inst] = append(s.each[inst], kept); len(s.each[inst]) > s.tail {
			s.each[inst] = s.each[inst][1:]
		}
	}
}

// lastLines is what a failed run shows of its output, at most tail
// lines, each indented; failing are the instances that failed. The
// rules, in order:
//
//	L1. The failing instances' own last lines come first, in instance
//	    order, each given an even share of the room (at least its last
//	    line): what an instance prints last before it fails is its
//	    error, and on a packed GPU the others' normal output pushed it
//	    out of the run's last lines (instance 9's "CUDA out of memory"
//	    at 4 per GPU).
//	L2. Then, as room is left, the run's last lines of the other
//	    instances (and lines without a label), in the order printed.
//	L3. With no failing instance (a run stopped by a signal), the run's
//	    last lines.
func (s *lineSink) lastLines(failing []int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	failing = slices.Sorted(slices.Values(failing))
	failing = slices.Compact(failing)
	share := s.tail
	if len(failing) > 0 {
		share = max(1, s.tail/len(failing))
	}
	for _, i := range failing {
		own := s.each[i]
		n := min(share, len(own), s.tail-len(out))
		out = append(out, own[len(own)-n:]...)
	}
	var others []string
	for _, l := range s.last {
		if !slices.Contains(failing, l.inst) {
			others = append(others, l.text)
		}
	}
	out = append(out, others[max(0, len(others)-(s.tail-len(out))):]...)
	return "  " + strings.Join(out, "\n  ")
}
