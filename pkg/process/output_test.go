//go:build linux

package process

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowReader hands out data in small, irregular pieces, as pipes do.
type slowReader struct {
	data []byte
	step int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.step, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	r.step = r.step%7919 + 1
	return n, nil
}

func TestLineMux(t *testing.T) {
	var out bytes.Buffer
	m := &LineMux{w: &out}
	long := strings.Repeat("y", 3*chunkSize+17)
	streams := map[string]string{
		"0: ": "alpha\nbeta\n",
		"1: ": "no newline at end",
		"2: ": long + "\nshort\n",
		"3: ": "bin\x00ary\xff\n",
	}
	var wg sync.WaitGroup
	for label, data := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.copyLabelled(&slowReader{data: []byte(data), step: 3}, label, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := out.String()
	for _, want := range []string{"0: alpha\n", "0: beta\n", "1: no newline at end\n", "2: " + long + "\n", "2: short\n", "3: bin\x00ary\xff\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want[:min(len(want), 40)])
		}
	}
	if lines := strings.Count(got, "\n"); lines != 6 {
		t.Errorf("%d lines, want 6", lines)
	}
}

func BenchmarkLineMux(b *testing.B) {
	line := []byte(strings.Repeat("z", 79) + "\n")
	data := bytes.Repeat(line, 1<<14)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		m := &LineMux{w: io.Discard}
		_ = m.copyLabelled(bytes.NewReader(data), "7: ", nil)
	}
}

// fullReader is a writer always ahead of its reader: every read fills
// the space it is given, as a pipe that is never drained does.
type fullReader struct{ data []byte }

func (r *fullReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// A stream's buffer grows only for a writer ahead of it (or a line longer
// than the buffer): short lines from a writer that keeps the pipe full
// are read chunkSize at a time, short lines in small pieces stay in
// firstChunk. Either way every line comes out whole, labelled once.
func TestCopierBufferGrowsForAWriterAhead(t *testing.T) {
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	data := []byte(strings.Repeat(line, 20000))
	for _, tc := range []struct {
		name string
		r    io.Reader
		want int
	}{
		{name: "writer ahead", r: &fullReader{data: data}, want: chunkSize},
		{name: "writer behind", r: &slowReader{data: data, step: 3}, want: firstChunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			c := NewLineMux(&out, nil).copier("7: ", nil)
			most := 0
			for c.readOnce(tc.r) == nil {
				most = max(most, len(c.buf))
			}
			if most != tc.want {
				t.Errorf("the buffer reached %d bytes, want %d", most, tc.want)
			}
			if want := strings.Repeat("7: "+line, 20000); out.String() != want {
				t.Errorf("the output is not every line, labelled once, in order (%d bytes, want %d)", out.Len(), len(want))
			}
		})
	}
}

// A held line is let go only when its writer has paused for holdPause
// and another stream waits; its rest then goes on as a line of its own,
// labelled again, and nothing is lost.
func TestCopierLetsGoOfAPausedLine(t *testing.T) {
	long := bytes.Repeat([]byte("#"), chunkSize)
	for _, tc := range []struct {
		name    string
		waiting bool
		paused  time.Duration
		letGo   bool
	}{
		{"paused while another waits: let go", true, holdPause, true},
		{"nobody waits: the line stays whole", false, time.Hour, false},
		{"a shorter pause: held", true, holdPause - time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			m := NewLineMux(&out, nil)
			c := m.copier("0: ", nil)
			for !c.holding {
				if err := c.readOnce(bytes.NewReader(long)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.waiting {
				m.waiting.Add(1) // as lock() counts a stream blocked on mu
			}
			c.letGoIfPaused(c.heldAt.Add(tc.paused))
			if c.holding == tc.letGo {
				t.Fatalf("holding %v after a pause of %v, waiting %v", c.holding, tc.paused, tc.waiting)
			}
			if tc.waiting {
				m.waiting.Add(-1)
			}
			if err := c.readOnce(strings.NewReader("rest\n")); err != nil {
				t.Fatal(err)
			}
			if _ = c.readOnce(strings.NewReader("")); !m.mu.TryLock() {
				t.Fatal("the mux is still held at the stream's end")
			}
			want := "0: " + string(long) + "rest\n"
			if tc.letGo {
				want = "0: " + string(long) + "\n0: rest\n"
			}
			if got := out.String(); got != want {
				t.Errorf("output of %d bytes ends %q, want %d bytes ending %q", len(got), got[max(0, len(got)-12):], len(want), want[len(want)-12:])
			}
		})
	}
}
