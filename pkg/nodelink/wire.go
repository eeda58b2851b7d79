package nodelink

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// The wire: what a connection carries after its handshake. The handshake
// itself (hello, welcome, refused) is one JSON line each way, readable and
// stable across versions, so that a node and a holder of different
// gpulaunch builds can say so (wireVersion); every frame after it is
// binary, in this form:
//
//	frame  = length body           length: uvarint, the body's bytes
//	body   = kind field*           kind: a string
//	field  = tag value             tag: one byte; a zero value is left out
//	string = uvarint length, bytes
//	int    = zig-zag varint
//	list   = uvarint count, then the items
//	struct = uvarint length, then its own tags and values (job.Task,
//	         job.Input, job.Record, taskqueue.QueueStatus)
//
// Why not JSON, which it was: node 0 decodes one message for every task
// that ends anywhere and encodes one for every task it sends, and
// encoding/json's reflection was a quarter of its CPU in a profile of 1,000
// nodes (perf record, test/scale); see BenchmarkWire for the two side by
// side. A tag for every field, left out at its zero value, keeps a frame
// as short as JSON's omitempty did and lets a field be added.

// wireVersion names the frames' form; the hello carries it and the holder
// refuses a node of another (check), the node a holder of another (dial).
// 0 is the JSON lines of gpulaunch before it.
const wireVersion = 1

// otherWire is the refusal of a side (who) whose hello or welcome named
// form: the same words, and the fix, on the holder and on the node.
func otherWire(who string, form int) error {
	return fmt.Errorf("%s runs another gpulaunch build, whose link speaks form %d, not %d: run the same gpulaunch on every node", who, form, wireVersion)
}

// The tags of a frame's fields.
const (
	tagNode byte = 1 + iota
	tagHost
	tagSlots
	tagTask
	tagRecord
	tagSeqs
	tagRunning
	tagWhy
	tagStatus
	tagToken
	tagRun
	tagAll
)

// The tags of job.Task's fields.
const (
	taskSeq byte = 1 + iota
	taskPath
	taskArgs
	taskCommand
	taskStdout
	taskStderr
	taskOwnStdout
	taskOwnStderr
	taskTemplate
	taskInput
)

// The tags of job.Input's fields.
const (
	inputLine byte = 1 + iota
	inputCols
	inputSeq
	inputSlot
)

// The tags of job.Record's fields.
const (
	recordSeq byte = 1 + iota
	recordHost
	recordStart
	recordRuntime
	recordExit
	recordSignal
	recordCommand
)

// The tags of taskqueue.QueueStatus's fields.
const (
	statusTotal byte = 1 + iota
	statusSkipped
	statusDone
	statusFailed
	statusRunning
	statusRemaining
	statusHalted
	statusRate
)

// appendFrame appends f in its wire form to b.
func appendFrame(b []byte, f frame) []byte {
	b, at := beginStruct(b)
	b = appendString(b, string(f.Kind))
	b = appendInt(b, tagNode, f.Node)
	b = appendStr(b, tagHost, f.Host)
	b = appendInt(b, tagSlots, f.Slots)
	if f.Task != nil {
		b = appendTask(b, f.Task)
	}
	if f.Record != nil {
		b = appendRecord(b, f.Record)
	}
	if f.Seqs != nil {
		b = append(b, tagSeqs)
		b = binary.AppendUvarint(b, uint64(len(f.Seqs)))
		for _, s := range f.Seqs {
			b = binary.AppendVarint(b, int64(s))
		}
	}
	b = appendInt(b, tagRunning, f.Running)
	b = appendStr(b, tagWhy, f.Why)
	if f.Status != nil {
		b = appendStatus(b, f.Status)
	}
	b = appendStr(b, tagToken, f.Token)
	b = appendStr(b, tagRun, f.Run)
	if f.All {
		b = append(b, tagAll)
	}
	return endStruct(b, at)
}

func appendTask(b []byte, t *job.Task) []byte {
	b = append(b, tagTask)
	b, at := beginStruct(b)
	b = appendInt(b, taskSeq, t.Seq)
	b = appendStr(b, taskPath, t.Path)
	b = appendStrs(b, taskArgs, t.Args)
	b = appendStr(b, taskCommand, t.Command)
	b = appendStr(b, taskStdout, t.Stdout)
	b = appendStr(b, taskStderr, t.Stderr)
	b = appendBool(b, taskOwnStdout, t.OwnStdout)
	b = appendBool(b, taskOwnStderr, t.OwnStderr)
	b = appendStrs(b, taskTemplate, t.Template)
	if in := t.Input; in != nil {
		b = append(b, taskInput)
		var at int
		b, at = beginStruct(b)
		b = appendStr(b, inputLine, in.Line)
		b = appendStrs(b, inputCols, in.Cols)
		b = appendInt(b, inputSeq, in.Seq)
		b = appendInt(b, inputSlot, in.Slot)
		b = endStruct(b, at)
	}
	return endStruct(b, at)
}

func appendRecord(b []byte, r *job.Record) []byte {
	b = append(b, tagRecord)
	b, at := beginStruct(b)
	b = appendInt(b, recordSeq, r.Seq)
	b = appendStr(b, recordHost, r.Host)
	if !r.Start.IsZero() {
		b = append(b, recordStart)
		b = binary.AppendVarint(b, r.Start.Unix())
		b = binary.AppendUvarint(b, uint64(r.Start.Nanosecond()))
	}
	b = appendInt(b, recordRuntime, int(r.Runtime))
	b = appendInt(b, recordExit, r.Exit)
	b = appendInt(b, recordSignal, r.Signal)
	b = appendStr(b, recordCommand, r.Command)
	return endStruct(b, at)
}

func appendStatus(b []byte, s *taskqueue.QueueStatus) []byte {
	b = append(b, tagStatus)
	b, at := beginStruct(b)
	b = appendInt(b, statusTotal, s.Total)
	b = appendInt(b, statusSkipped, s.Skipped)
	b = appendInt(b, statusDone, s.Done)
	b = appendInt(b, statusFailed, s.Failed)
	b = appendInt(b, statusRunning, s.Running)
	b = appendInt(b, statusRemaining, s.Remaining)
	b = appendStr(b, statusHalted, s.Halted)
	if s.Rate != 0 {
		b = append(b, statusRate)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Rate))
	}
	return endStruct(b, at)
}

// beginStruct makes room for a struct's length, one byte, which fits a
// struct under 128 bytes (a task of a short line, a record, a status):
// endStruct writes it, and moves the struct on for a longer length.
func beginStruct(b []byte) ([]byte, int) {
	b = append(b, 0)
	return b, len(b)
}

func endStruct(b []byte, at int) []byte {
	n := uint64(len(b) - at)
	if n < 0x80 {
		b[at-1] = byte(n)
		return b
	}
	var l [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(l[:], n)
	b[at-1] = l[0]
	return slices.Insert(b, at, l[1:ln]...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStr(b []byte, tag byte, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, tag), s)
}

func appendStrs(b []byte, tag byte, ss []string) []byte {
	if ss == nil {
		return b
	}
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendInt(b []byte, tag byte, v int) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendVarint(append(b, tag), int64(v))
}

func appendBool(b []byte, tag byte, v bool) []byte {
	if !v {
		return b
	}
	return append(b, tag)
}

// readFrame reads one frame from r: io.EOF when the stream ended between
// frames.
func readFrame(r *bufio.Reader) (frame, error) {
	n, err := binary.ReadUvarint(r)
	switch {
	case err != nil:
		return frame{}, err
	case n > maxLine:
		return frame{}, fmt.Errorf("a message of %d bytes, over %d MiB: not a gpulaunch link's (or another version's)", n, maxLine>>20)
	}
	var body []byte
	if int(n) <= r.Size() { // decoded where it lies: its strings are copied out
		if body, err = r.Peek(int(n)); err != nil {
			return frame{}, noEOF(err)
		}
		defer r.Discard(int(n))
	} else {
		body = make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return frame{}, noEOF(err)
		}
	}
	f, err := decodeFrame(body)
	if err != nil {
		return frame{}, fmt.Errorf("a garbled message: %w", err)
	}
	return f, nil
}

// noEOF: a stream that ends inside a frame was cut, not closed.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// wireReader reads a body's values; the first error sticks, and every
// read after it gives zero values.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) fail(what string) {
	if r.err == nil {
		r.err = errors.New(what)
	}
	r.b = nil
}

func (r *wireReader) more() bool { return r.err == nil && len(r.b) > 0 }

func (r *wireReader) byte() byte {
	if len(r.b) == 0 {
		r.fail("it ends inside a field")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *wireReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("a number runs past its end")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) int() int {
	v, n := binary.Varint(r.b)
	if n <= 0 || v != int64(int(v)) {
		r.fail("a number runs past its end")
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// bytes reads a length and that many bytes.
func (r *wireReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("a string or struct runs past its end")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *wireReader) string() string { return string(r.bytes()) }

// count reads a list's length: every item takes a byte at least, so a
// count over the bytes left is garbage, not an allocation to make.
func (r *wireReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("a list runs past its end")
		return 0
	}
	return int(n)
}

func (r *wireReader) strings() []string {
	ss := make([]string, r.count())
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// sub reads a struct: a reader of its bytes.
func (r *wireReader) sub() *wireReader { return &wireReader{b: r.bytes()} }

// unknown is a tag the reader does not know: a frame of another form.
func (r *wireReader) unknown(in string, tag byte) {
	r.fail(fmt.Sprintf("an unknown field %d in %s", tag, in))
}

// decodeFrame reads a frame's body.
func decodeFrame(body []byte) (frame, error) {
	r := &wireReader{b: body}
	var f frame
	f.Kind = taskqueue.MessageKind(r.string())
	for r.more() {
		switch tag := r.byte(); tag {
		case tagNode:
			f.Node = r.int()
		case tagHost:
			f.Host = r.string()
		case tagSlots:
			f.Slots = r.int()
		case tagTask:
			f.Task = decodeTask(r.sub(), r)
		case tagRecord:
			f.Record = decodeRecord(r.sub(), r)
		case tagSeqs:
			f.Seqs = make([]int, r.count())
			for i := range f.Seqs {
				f.Seqs[i] = r.int()
			}
		case tagRunning:
			f.Running = r.int()
		case tagWhy:
			f.Why = r.string()
		case tagStatus:
			f.Status = decodeStatus(r.sub(), r)
		case tagToken:
			f.Token = r.string()
		case tagRun:
			f.Run = r.string()
		case tagAll:
			f.All = true
		default:
			r.unknown("a message", tag)
		}
	}
	if r.err != nil {
		return frame{}, fmt.Errorf("%s message: %w", f.Kind, r.err)
	}
	return f, nil
}

// decodeTask reads a task's struct s; its error goes to the frame's r.
func decodeTask(s, r *wireReader) *job.Task {
	t := &job.Task{}
	for s.more() {
		switch tag := s.byte(); tag {
		case taskSeq:
			t.Seq = s.int()
		case taskPath:
			t.Path = s.string()
		case taskArgs:
			t.Args = s.strings()
		case taskCommand:
			t.Command = s.string()
		case taskStdout:
			t.Stdout = s.string()
		case taskStderr:
			t.Stderr = s.string()
		case taskOwnStdout:
			t.OwnStdout = true
		case taskOwnStderr:
			t.OwnStderr = true
		case taskTemplate:
			t.Template = s.strings()
		case taskInput:
			t.Input = decodeInput(s.sub(), s)
		default:
			s.unknown("a task", tag)
		}
	}
	pass(s, r)
	return t
}

func decodeInput(s, r *wireReader) *job.Input {
	in := &job.Input{}
	for s.more() {
		switch tag := s.byte(); tag {
		case inputLine:
			in.Line = s.string()
		case inputCols:
			in.Cols = s.strings()
		case inputSeq:
			in.Seq = s.int()
		case inputSlot:
			in.Slot = s.int()
		default:
			s.unknown("a task's input", tag)
		}
	}
	pass(s, r)
	return in
}

func decodeRecord(s, r *wireReader) *job.Record {
	rec := &job.Record{}
	for s.more() {
		switch tag := s.byte(); tag {
		case recordSeq:
			rec.Seq = s.int()
		case recordHost:
			rec.Host = s.string()
		case recordStart:
			sec := s.int()
			nsec := s.uvarint()
			if nsec >= uint64(time.Second) {
				s.fail("a start time's nanoseconds over a second")
			}
			rec.Start = time.Unix(int64(sec), int64(nsec))
		case recordRuntime:
			rec.Runtime = time.Duration(s.int())
		case recordExit:
			rec.Exit = s.int()
		case recordSignal:
			rec.Signal = s.int()
		case recordCommand:
			rec.Command = s.string()
		default:
			s.unknown("a record", tag)
		}
	}
	pass(s, r)
	return rec
}

func decodeStatus(s, r *wireReader) *taskqueue.QueueStatus {
	st := &taskqueue.QueueStatus{}
	for s.more() {
		switch tag := s.byte(); tag {
		case statusTotal:
			st.Total = s.int()
		case statusSkipped:
			st.Skipped = s.int()
		case statusDone:
			st.Done = s.int()
		case statusFailed:
			st.Failed = s.int()
		case statusRunning:
			st.Running = s.int()
		case statusRemaining:
			st.Remaining = s.int()
		case statusHalted:
			st.Halted = s.string()
		case statusRate:
			if len(s.b) < 8 {
				s.fail("a rate runs past its end")
				break
			}
			st.Rate = math.Float64frombits(binary.LittleEndian.Uint64(s.b))
			s.b = s.b[8:]
		default:
			s.unknown("a status", tag)
		}
	}
	pass(s, r)
	return st
}

// pass hands a struct's error to the reader it was read from.
func pass(s, r *wireReader) {
	if s.err != nil && r.err == nil {
		r.err = s.err
		r.b = nil
	}
}
