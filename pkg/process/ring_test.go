//go:build linux

package process

import (
	"bytes"
	"strings"
	"testing"
)

func TestRingKeepsTheLastBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		writes []string
		from   int64
		want   string
		lost   int64
	}{
		{name: "empty", size: 8, from: -1},
		{name: "fits", size: 8, writes: []string{"ab", "cd"}, from: -1, want: "abcd"},
		{name: "exactly full", size: 4, writes: []string{"ab", "cd"}, from: -1, want: "abcd"},
		{name: "wraps", size: 4, writes: []string{"abc", "def"}, from: -1, want: "cdef"},
		{name: "wraps twice", size: 4, writes: []string{"abc", "def", "ghij"}, from: -1, want: "ghij"},
		{name: "one write over the size", size: 4, writes: []string{"a", "bcdefgh"}, from: -1, want: "efgh"},
		{name: "growing ring, write past the end", size: 5, writes: []string{"ab", "cdefg"}, from: -1, want: "cdefg"},
		{name: "from an offset", size: 8, writes: []string{"abcdef"}, from: 2, want: "cdef"},
		{name: "from an offset across the wrap", size: 4, writes: []string{"abc", "de"}, from: 2, want: "cde"},
		{name: "fell behind", size: 4, writes: []string{"abcdef"}, from: 0, want: "cdef", lost: 2},
		{name: "caught up", size: 4, writes: []string{"abcdef"}, from: 6, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRing(tc.size)
			total := 0
			for _, w := range tc.writes {
				r.Write([]byte(w))
				total += len(w)
			}
			data, next, lost, _, ended := r.Since(tc.from)
			if string(data) != tc.want || lost != tc.lost || next != int64(total) || ended {
				t.Errorf("Since(%d) = %q, next %d, lost %d, ended %v; want %q, next %d, lost %d", tc.from, data, next, lost, ended, tc.want, total, tc.lost)
			}
		})
	}
}

// A follower that keeps up reads everything exactly once, in order,
// while the writer wraps the ring many times; it is woken for each write
// and stops at Close.
func TestRingFollowerSeesEveryByteOnce(t *testing.T) {
	r := NewRing(64)
	read := make(chan int64)
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		off := int64(-1)
		for {
			data, next, lost, more, ended := r.Since(off)
			if lost > 0 {
				t.Errorf("lost %d bytes", lost)
			}
			b.Write(data)
			off = next
			if ended {
				got <- b.String()
				return
			}
			if len(data) > 0 {
				read <- off
			}
			<-more
		}
	}()
	var want bytes.Buffer
	for i := range 500 {
		line := []byte(strings.Repeat(string(rune('a'+i%26)), 1+i%40) + "\n")
		want.Write(line)
		r.Write(line)
		for off := <-read; off < int64(want.Len()); off = <-read {
		}
	}
	r.Close()
	r.Write([]byte("after close\n"))
	if s := <-got; s != want.String() {
		t.Errorf("follower read %d bytes, want %d", len(s), want.Len())
	}
}

func TestLabelledCopyTeesUnlabelledLinesToTheRing(t *testing.T) {
	var console bytes.Buffer
	m := &LineMux{w: &console}
	r := NewRing(1 << 10)
	if err := m.copyLabelled(&slowReader{data: []byte("one\ntwo\nthree"), step: 3}, "5: ", r); err != nil {
		t.Fatal(err)
	}
	if console.String() != "5: one\n5: two\n5: three\n" {
		t.Errorf("console %q", console.String())
	}
	if data, _, _, _, _ := r.Since(-1); string(data) != "one\ntwo\nthree\n" {
		t.Errorf("ring %q", data)
	}
}
