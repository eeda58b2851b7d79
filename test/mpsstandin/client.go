package mpsstandin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The client's calls to its daemon (the stand-in's protocol): the first
// line "client PID" registers it, then one call a line, each answered
// with one line (replyOK, or a word and the error to print).
const (
	clientHello = "client"
	callPoll    = "poll"    // a CUDA call: is the sticky error set?
	callFault   = "fault"   // this client's fatal fault
	callExit    = "exit"    // a clean exit (the context torn down)
	callLost    = "lost"    // leaving after an error, as a process that dies
	callClients = "clients" // how many clients the server has: "ok N"
)

// PollInterval is how often a running client calls its server.
const PollInterval = 20 * time.Millisecond

// FaultOnceEnv names the file that makes `fault` fault once: the first
// client to create it faults, every later one runs.
const FaultOnceEnv = "MPSCLIENT_FAULT_ONCE"

// FaultClientsEnv, a number N: `fault` faults only once its server has N
// clients (itself included), working on until then, so that a test
// knows which clients the fault reaches without timing the starts.
const FaultClientsEnv = "MPSCLIENT_FAULT_CLIENTS"

// Program is the stand-in's program that argv0 names (a test binary
// linked under these names runs them), or nil.
func Program(argv0 string) func(args []string) int {
	switch filepath.Base(argv0) {
	case "nvidia-cuda-mps-control":
		return Main
	case "mpsclient":
		return ClientMain
	}
	return nil
}

// ClientMain is mpsclient, a CUDA program as an MPS server sees it, with
// args (without the program name); it returns its exit status:
//
//	mpsclient run DURATION   works for DURATION, exits 0
//	mpsclient fault AFTER    works for AFTER, then faults, exits 1
//
// Where it meets the sticky error, or is refused, it prints CUDA's error
// and exits 1; bad arguments exit 2.
func ClientMain(args []string) int {
	mode, d, err := clientArgs(args)
	if err == nil {
		err = faultClientsArg()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mpsclient: %v\nusage: mpsclient run DURATION | mpsclient fault AFTER\n", err)
		return 2
	}
	pipe := env("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
	c, err := net.Dial("unix", filepath.Join(pipe, "control"))
	if err != nil {
		// CUDA without an MPS daemon gives the process a context of its
		// own: its fault is its own (the H200 under --share-gpus).
		return ownContext(mode, d)
	}
	defer c.Close()
	sv := &serverConn{c: c, r: bufio.NewReader(c)}
	if reply := sv.call(fmt.Sprintf("%s %d", clientHello, os.Getpid())); reply != replyOK {
		return failed(reply)
	}
	if reply := sv.work(d); reply != replyOK {
		return sv.fail(reply)
	}
	if mode == callFault {
		once, err := faultNow()
		if err != nil {
			fmt.Fprintf(os.Stderr, "mpsclient: %s: %v\n", FaultOnceEnv, err)
			sv.call(callLost)
			return 1
		}
		if once {
			if reply := sv.waitClients(); reply != replyOK {
				return sv.fail(reply)
			}
			if reply := sv.call(callFault); reply != replyOK {
				return sv.fail(reply)
			}
			fmt.Fprintln(os.Stderr, ErrFault)
			sv.call(callLost)
			return 1
		}
	}
	if reply := sv.call(callExit); reply != replyOK {
		return sv.fail(reply)
	}
	return 0
}

// clientArgs reads "run DURATION" or "fault AFTER".
func clientArgs(args []string) (mode string, d time.Duration, err error) {
	if len(args) != 2 || (args[0] != "run" && args[0] != callFault) {
		return "", 0, errors.New("want two arguments: run DURATION or fault AFTER")
	}
	d, err = time.ParseDuration(args[1])
	if err != nil || d < 0 {
		return "", 0, fmt.Errorf("%q is not a duration (e.g. 500ms, 2s)", args[1])
	}
	return args[0], d, nil
}

// faultClientsArg checks FaultClientsEnv: unset, or a number from 1.
func faultClientsArg() error {
	v := os.Getenv(FaultClientsEnv)
	if n, err := strconv.Atoi(v); v != "" && (err != nil || n < 1) {
		return fmt.Errorf("%s=%q is not a number of clients (1 or more)", FaultClientsEnv, v)
	}
	return nil
}

// faultNow says whether `fault` faults: always, or with FaultOnceEnv
// only where its file was not there yet (created now, before the fault).
func faultNow() (bool, error) {
	path := os.Getenv(FaultOnceEnv)
	if path == "" {
		return true, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return true, f.Close()
}

// ownContext is a client without MPS: it works, and its fault is its own.
func ownContext(mode string, d time.Duration) int {
	time.Sleep(d)
	if mode != callFault {
		return 0
	}
	once, err := faultNow()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mpsclient: %s: %v\n", FaultOnceEnv, err)
		return 1
	}
	if !once {
		return 0
	}
	fmt.Fprintln(os.Stderr, ErrFault)
	return 1
}

// serverConn is a client's connection to its GPU's server.
type serverConn struct {
	c net.Conn
	r *bufio.Reader
}

// call sends one call and returns the server's reply; a server gone
// answers as an error the client prints.
func (sv *serverConn) call(line string) string {
	if _, err := fmt.Fprintln(sv.c, line); err != nil {
		return "gone " + err.Error()
	}
	reply, err := sv.r.ReadString('\n')
	if err == io.EOF && reply == "" {
		return "gone the MPS server closed the connection"
	}
	if err != nil && reply == "" {
		return "gone " + err.Error()
	}
	return strings.TrimSpace(reply)
}

// work polls the server every PollInterval for d, and once more at its
// end: a client attached when a neighbour faults always meets the error.
func (sv *serverConn) work(d time.Duration) string {
	end := time.Now().Add(d)
	for {
		if reply := sv.call(callPoll); reply != replyOK {
			return reply
		}
		left := time.Until(end)
		if left <= 0 {
			return replyOK
		}
		time.Sleep(min(left, PollInterval))
	}
}

// waitClients works on until the server has FaultClientsEnv's clients.
func (sv *serverConn) waitClients() string {
	want, _ := strconv.Atoi(os.Getenv(FaultClientsEnv))
	for {
		if reply := sv.call(callPoll); reply != replyOK {
			return reply
		}
		reply := sv.call(callClients)
		word, n, _ := strings.Cut(reply, " ")
		if word != replyOK {
			return reply
		}
		if have, _ := strconv.Atoi(n); have >= want {
			return replyOK
		}
		time.Sleep(PollInterval)
	}
}

// fail prints the error of a reply, leaves the server as a client that
// failed (the server logs it before it answers), and exits 1.
func (sv *serverConn) fail(reply string) int {
	code := failed(reply)
	sv.call(callLost)
	return code
}

// failed prints the error a reply carries and returns 1.
func failed(reply string) int {
	_, msg, _ := strings.Cut(reply, " ")
	if msg == "" {
		msg = reply
	}
	fmt.Fprintln(os.Stderr, msg)
	return 1
}
