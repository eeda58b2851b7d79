package nodelink

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// wireCases are frames of every kind the link carries, each with the
// fields that kind sets, and the edges of the form: lengths of one byte
// and of several, strings with what JSON would escape, empty lists that
// are not nil.
var wireCases = []struct {
	name string
	f    frame
}{
	{"task of an --each-line queue", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 12, Task: &job.Task{
		Seq: 5, Path: "/usr/bin/python3", Args: []string{"python3", "train.py", "--lr", "a b\tc\n"}, Command: "python3 train.py --lr 'a b\tc\n'",
		Stdout: "out/5.txt", Stderr: "err/{#}.txt", OwnStdout: true, OwnStderr: true,
		Template: []string{"python3", "train.py", "--lr", "{}", "{%}"}, Input: &job.Input{Line: "a b\tc\n", Cols: []string{"a b", "c\n"}, Seq: 5, Slot: 3},
	}}}},
	{"task of a --tasks line", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 1, Task: &job.Task{Seq: 1, Path: "/bin/true", Args: []string{}, Command: "true"}}}},
	{"task of a long line", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgTask, Node: 3, Task: &job.Task{Seq: 1 << 40, Args: []string{strings.Repeat("x", 200<<10)}, Command: "«é» \x00 \u2028"}}}},
	{"done", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Node: 9999, Running: 4, Record: &job.Record{
		Seq: 77, Host: "frontier01234", Start: time.Unix(1764000000, 123456789), Runtime: 1500 * time.Millisecond, Exit: 143, Signal: 15, Command: "sleep 1",
	}}}},
	{"done before 1970, and a negative exit", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgDone, Record: &job.Record{Seq: 1, Start: time.Unix(-5, 7), Exit: -1, Runtime: -time.Second}}}},
	{"returned", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgReturned, Node: 2, Seqs: []int{3, 1 << 33, 1}}}},
	{"status, to all", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgStatus, Node: 7, Status: &taskqueue.QueueStatus{
		Total: 1000, Skipped: 3, Done: 500, Failed: 2, Running: 40, Remaining: 455, Halted: "--halt now,fail=1", Rate: 19054.25,
	}}, All: true}},
	{"stop", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgStopNow, Node: 4, Why: "a task failed: --halt now,fail=1"}}},
	{"joined through a relay", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgJoined, Node: 101, Host: "n101", Slots: 8}}},
	{"end", frame{NodeMessage: taskqueue.NodeMessage{Kind: taskqueue.MsgEnd}}},
	{"ping", frame{NodeMessage: taskqueue.NodeMessage{Kind: kindPing}}},
	{"token and run", frame{NodeMessage: taskqueue.NodeMessage{Kind: kindHello}, Token: strings.Repeat("ab", 32), Run: "job7.0"}},
}

// Every frame read is the frame written, in a stream of them.
func TestWireCarriesEveryKind(t *testing.T) {
	var stream []byte
	for _, c := range wireCases {
		stream = appendFrame(stream, c.f)
	}
	r := bufio.NewReaderSize(bytes.NewReader(stream), readBuffer)
	for _, c := range wireCases {
		got, err := readFrame(r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.f) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.f)
		}
	}
	if _, err := readFrame(r); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF (the connection was closed)", err)
	}
}

// Every field of a frame, and of the structs it carries, is on the wire:
// a field added to taskqueue.NodeMessage, job.Task, job.Input, job.Record
// or taskqueue.QueueStatus without a tag fails here, where it would have
// been dropped between nodes without a word.
func TestWireCarriesEveryField(t *testing.T) {
	var f frame
	fill(t, reflect.ValueOf(&f).Elem(), "frame")
	f.Wire = 0 // the handshake's alone (a JSON line): not a frame's
	got, err := readFrame(bufio.NewReader(bytes.NewReader(appendFrame(nil, f))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Errorf("a field was lost:\n got %+v\nwant %+v", got, f)
	}
}

// fill sets every field of v to a value that is not its zero.
func fill(t *testing.T, v reflect.Value, path string) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Unix(1764000000, 5)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(t, v.Index(0), path+"[0]")
		fill(t, v.Index(1), path+"[1]")
	case reflect.String:
		v.SetString(path)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(0.5)
	default:
		t.Fatalf("%s: a field of kind %s that fill does not know", path, v.Kind())
	}
}

// A frame cut anywhere, or with a field of another form, is an error,
// never a panic nor a frame made up of its parts.
func TestWireGarbled(t *testing.T) {
	whole := appendFrame(nil, wireCases[0].f)
	for cut := 1; cut < len(whole); cut++ {
		_, err := readFrame(bufio.NewReader(bytes.NewReader(whole[:cut])))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d of %d: %v, want an unexpected end", cut, len(whole), err)
		}
	}
	for _, c := range []struct {
		name, want string
		wire       []byte
	}{
		{"an unknown field", "an unknown field 99 in a message", []byte{6, 4, 't', 'a', 's', 'k', 99}},
		{"a field in a task of another form", "an unknown field 200 in a task", []byte{8, 4, 't', 'a', 's', 'k', tagTask, 1, 200}},
		{"a string past its struct", "runs past its end", []byte{9, 4, 'd', 'o', 'n', 'e', tagRecord, 2, recordHost, 5}},
		{"a list longer than its bytes", "a list runs past its end", []byte{7, 4, 'r', 'e', 't', 'd', tagSeqs, 100}},
		{"a length over the limit", "over 16 MiB", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"JSON, as gpulaunch before wireVersion wrote", "", []byte(`{"kind":"task","node":1}` + "\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readFrame(bufio.NewReader(bytes.NewReader(c.wire)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error with %q", err, c.want)
			}
		})
	}
}

// FuzzWire: whatever the bytes, reading them gives an error or a frame
// whose wire form reads back to the same wire form; never a panic. (The
// form, not the frame: a NaN rate is not equal to itself, and a start at
// the zero instant read in local time is the zero time once written.)
func FuzzWire(f *testing.F) {
	for _, c := range wireCases {
		f.Add(appendFrame(nil, c.f))
	}
	f.Add([]byte{3, 0, tagSeqs, 0}) // an empty list, not nil
	f.Fuzz(func(t *testing.T, wire []byte) {
		got, err := readFrame(bufio.NewReader(bytes.NewReader(wire)))
		if err != nil {
			return
		}
		written := appendFrame(nil, got)
		again, err := readFrame(bufio.NewReader(bytes.NewReader(written)))
		if err != nil {
			t.Fatalf("read %+v, written %x, not read again: %v", got, written, err)
		}
		if rewritten := appendFrame(nil, again); !bytes.Equal(rewritten, written) {
			t.Fatalf("read %+v, written %x, read again %+v, written %x", got, written, again, rewritten)
		}
	})
}

// A node of a gpulaunch before this form (its hello has no wire) is
// refused with the fix, and the node hears it; a node the holder welcomes
// in another form gives up with the same fix.
func TestHelloOfAnotherWireIsRefused(t *testing.T) {
	h, k, dir := holderOfTwo(t, time.Minute)
	var mu sync.Mutex
	var refused []string
	h.Refused = func(_, why string) { mu.Lock(); refused = append(refused, why); mu.Unlock() }
	raw, err := net.Dial("tcp", k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, pinned(k.CertHash))
	if err := writeOne(tc, frame{NodeMessage: taskqueue.NodeMessage{Kind: kindHello, Node: 1, Slots: 2}, Token: k.Token, Run: "job7.0"}, time.Second); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(tc).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var answer frame
	if err := json.Unmarshal(line, &answer); err != nil || answer.Kind != kindRefused || !strings.Contains(answer.Why, "run the same gpulaunch on every node") {
		t.Fatalf("the holder answered %s (%v)", line, err)
	}
	mu.Lock()
	if len(refused) != 1 || refused[0] != answer.Why {
		t.Errorf("the holder's side was told %q", refused)
	}
	mu.Unlock()
	// the node of this build still joins after it
	w, err := join(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}

// The node's side: a welcome without this form (a holder of a gpulaunch
// before it) ends the join with the fix, for good.
func TestWelcomeOfAnotherWireIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cert, hash, err := newCert("job7.0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		defer raw.Close()
		tc := tls.Server(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		if _, err := bufio.NewReader(tc).ReadBytes('\n'); err != nil {
			return
		}
		writeOne(tc, frame{NodeMessage: taskqueue.NodeMessage{Kind: kindWelcome}}, time.Second)
		io.Copy(io.Discard, tc)
	}()
	k := Key{Run: "job7.0", State: StateOpen, Addr: ln.Addr().String(), CertHash: hash, Token: "t", Nodes: 2}
	_, err = dial(context.Background(), WorkerConfig{Run: "job7.0", Node: 1, Host: "n1", Slots: 2, Beat: testBeat}, k, "job7.0")
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "run the same gpulaunch on every node") {
		t.Fatalf("a welcome of form 0: %v", err)
	}
}

// BenchmarkWire writes and reads the two messages of every task (its
// task, its done), in this form and as the JSON lines before it.
func BenchmarkWire(b *testing.B) {
	task := wireCases[1].f
	task.Task = &job.Task{Seq: 123456, Path: "/usr/bin/python3", Args: []string{"python3", "train.py", "--seed", "123456"}, Command: "python3 train.py --seed 123456"}
	done := wireCases[3].f
	b.Run("binary", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			for _, f := range []frame{task, done} {
				buf = appendFrame(buf[:0], f)
				_, n := binary.Uvarint(buf)
				if _, err := decodeFrame(buf[n:]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			for _, f := range []frame{task, done} {
				data, _ := json.Marshal(f)
				var g frame
				if err := json.Unmarshal(data, &g); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
