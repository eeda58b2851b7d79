package mpsstandin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// What CUDA prints, as the H200 printed it (../shared/research/gpu-h200.md,
// "One faulting MPS client fails every client of its GPU"): mpsclient
// prints these, and gpulaunch's tests may look for them.
const (
	// ErrNotReady: a client that connects while the server has a sticky
	// error set is refused with it.
	ErrNotReady = "Error 807: MPS server is not ready to accept new MPS client requests"
	// ErrFault: the faulting client's own error.
	ErrFault = "CUDA error: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)"
	// ErrSticky: what every other client of the server fails with at its
	// next call once one client faulted (the sticky error).
	ErrSticky = "CUDA error: an illegal memory access was encountered"
)

// The server's log lines, as NVIDIA's server writes them (driver 580;
// NVIDIA's grammar and spelling, "recevie" included).
const (
	stickyHeader   = "The following client process have a sticky error set:"
	createContext  = "Creating server context on device 0 (MPS stand-in)"
	destroyContext = "Destroy server context on device 0 (MPS stand-in)"
	clientLost     = "Server failed to recevie command with status 806, assuming client {PID: %d, Context ID: 1} exit"
	clientExiting  = "Client {PID: %d, Context ID: 1} exiting. Number of active client contexts is %d."
)

// The server's replies to a client, one line each (the stand-in's own
// protocol: the real one's is private). A reply that is not replyOK is
// one of these words, a space, and the error the client prints.
const (
	replyOK      = "ok"
	replyRefused = "refused"
	replySticky  = "sticky"
)

// mpsServer is the MPS server of one daemon's GPU, in the daemon's
// process: its clients and its sticky error. Every method writes its log
// lines before it returns the reply, so that a client is answered only
// once the log says what happened (tests read the log after a client's
// exit without waiting).
type mpsServer struct {
	mu      sync.Mutex
	logDir  string
	control func(format string, a ...any) // control.log's lines
	dead    func(pid int) bool            // the process has ended (processGone)
	pid     int                           // the server's, as its log names it
	started bool                          // control.log said "Starting new server"
	log     *os.File                      // server.log, from the first client on
	clients []*mpsClient                  // attached, oldest first
	sticky  bool                          // a client faulted: every client has the error set
}

// mpsClient is one attached client (its pid may be reused once it left).
type mpsClient struct{ pid int }

// attach registers client pid. The rules, in order:
//  1. A server with a sticky error set first notices its clients that
//     have ended (lost: their connection may not be read yet when a
//     launcher that saw them exit starts the next), then refuses every
//     new client (ErrNotReady) while one of them lives.
//  2. The first client of a server without a context creates it
//     ("Creating server context on device 0").
//  3. Every client is logged in control.log as the control daemon logs
//     it ("NEW CLIENT pid from user uid: …"), the first one of the
//     daemon starting the server.
func (s *mpsServer) attach(pid int) (string, *mpsClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.control("NEW CLIENT %d from user %d: Server is not ready, push client to pending list", pid, os.Getuid())
		s.control("Starting new server %d for user %d", s.pid, os.Getuid())
		s.started = true
	} else {
		s.control("NEW CLIENT %d from user %d: Server already exists", pid, os.Getuid())
	}
	if s.sticky {
		for _, c := range slices.Clone(s.clients) {
			if s.dead(c.pid) {
				s.leaveLocked(c, true)
			}
		}
	}
	if s.sticky {
		return replyRefused + " " + ErrNotReady, nil
	}
	if len(s.clients) == 0 {
		if err := s.logf("%s", createContext); err != nil {
			return replyRefused + " " + err.Error(), nil
		}
	}
	c := &mpsClient{pid: pid}
	s.clients = append(s.clients, c)
	return replyOK, c
}

// poll is a client's next call: the sticky error once one is set.
func (s *mpsServer) poll(c *mpsClient) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sticky {
		return replySticky + " " + ErrSticky
	}
	return replyOK
}

// count is how many clients the server has.
func (s *mpsServer) count() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s %d", replyOK, len(s.clients))
}

// fault is client c's fatal fault: the server writes the sticky list,
// the faulting pid first and then every other client's, newest first (as
// the H200's server listed them), and sets the error on every client. A
// client that faults after a neighbour did meets the neighbour's error.
func (s *mpsServer) fault(c *mpsClient) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sticky {
		return replySticky + " " + ErrSticky
	}
	s.logf("%s", stickyHeader)
	s.logf("%d", c.pid)
	for _, o := range slices.Backward(s.clients) {
		if o != c {
			s.logf("%d", o.pid)
		}
	}
	s.sticky = true
	return replyOK
}

// exit is a client's clean end; with the sticky error set its teardown
// fails as its calls do, and it stays a client until it leaves.
func (s *mpsServer) exit(c *mpsClient) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sticky {
		return replySticky + " " + ErrSticky
	}
	s.leaveLocked(c, false)
	return replyOK
}

// lost is a client that ended without a clean exit: one that failed, or
// whose connection closed (its process died).
func (s *mpsServer) lost(c *mpsClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaveLocked(c, true)
}

// leaveLocked removes client c. The rules:
//  1. A client lost is logged as the server notices a dead client
//     (clientLost), then as every client that leaves (clientExiting, with
//     the clients left); one that has left already leaves nothing.
//  2. The last client's leaving destroys the context, which ends a sticky
//     error: the next client creates a new context and is served.
func (s *mpsServer) leaveLocked(c *mpsClient, lost bool) {
	i := slices.Index(s.clients, c)
	if i < 0 {
		return
	}
	if lost {
		s.logf(clientLost, c.pid)
	}
	s.clients = slices.Delete(s.clients, i, i+1)
	s.logf(clientExiting, c.pid, len(s.clients))
	if len(s.clients) == 0 {
		s.logf("%s", destroyContext)
		s.sticky = false
	}
}

// logf appends one line to server.log, opened at its first line:
// "[2026-11-27 01:38:32.637 Server   490] message", as the real one.
func (s *mpsServer) logf(format string, a ...any) error {
	if s.log == nil {
		f, err := os.OpenFile(filepath.Join(s.logDir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		s.log = f
	}
	_, err := fmt.Fprintf(s.log, "[%s Server   %d] %s\n", time.Now().Format(logTime), s.pid, fmt.Sprintf(format, a...))
	return err
}

// logTime is the logs' time stamp, milliseconds, local time.
const logTime = "2006-01-02 15:04:05.000"
