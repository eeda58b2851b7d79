// Package mpsstandin is a stand-in for NVIDIA's nvidia-cuda-mps-control,
// built from its documented interface (docs.nvidia.com/deploy/mps,
// "nvidia-cuda-mps-control" in the driver's man pages), so that gpulaunch's
// MPS lifecycle is tested with real processes on machines without a GPU:
//
//   - `nvidia-cuda-mps-control -d` starts the control daemon in the
//     background and returns; `-f` runs it in the foreground;
//   - the daemon works in CUDA_MPS_PIPE_DIRECTORY (default
//     /tmp/nvidia-mps) and logs to CUDA_MPS_LOG_DIRECTORY (default
//     /var/log/nvidia-mps), control.log; it writes its pid to
//     nvidia-cuda-mps-control.pid in the pipe directory, and refuses to
//     start where another daemon answers;
//   - without an option it is the client: it reads commands on stdin, one
//     per line, sends each to the daemon of CUDA_MPS_PIPE_DIRECTORY and
//     prints the reply; with no daemon there it fails;
//   - commands: quit, get_server_list, set_default_active_thread_percentage
//     P, get_default_active_thread_percentage,
//     set_default_device_pinned_mem_limit DEV VALUE,
//     get_default_device_pinned_mem_limit DEV.
//
// What no document says and this stand-in chooses: the daemon and its
// clients talk over a Unix socket "control" in the pipe directory (the
// real one's protocol is private); TERM ends the daemon as quit does.
// Settings that exist only for gpulaunch's tests:
//
//   - MPS_STANDIN_NO_PIDFILE=1: a daemon that never writes its pid file
//     (one that does not come up);
//   - MPS_STANDIN_SERVER=1: the daemon forks its server at once, as the
//     real one forks nvidia-cuda-mps-server for its first client (its
//     log: "Starting new server N for user U"). What the real server does
//     when its daemon dies is not documented; this one takes the worst:
//     it runs in a session of its own, ignores INT and HUP, and only the
//     daemon's quit (or its own TERM) ends it;
//   - MPS_STANDIN_TERM=ignore: a daemon that does not end on TERM (NVIDIA
//     documents quit, and nothing of what the daemon does with TERM);
//   - MPS_STANDIN_QUIT=ignore: a daemon that does not quit when told
//     (one stuck, as a daemon whose server waits on a GPU may be);
//   - MPS_STANDIN_EVENTS=FILE appends "start PID PIPEDIR GPUS", "server
//     PID", "server-exit PID" and "quit PID" lines to FILE.
//
// Its CUDA client, mpsclient (ClientMain; the program in mpsclient/), is
// what an instance runs to be a client of its GPU's server, and plays
// one client's fatal fault as a real server spread it on an H200
// (../shared/research/gpu-h200.md, "One faulting MPS client fails every
// client of its GPU"):
//
//   - `mpsclient run DURATION` connects to the daemon of
//     CUDA_MPS_PIPE_DIRECTORY, registers its pid as a client of the
//     GPU's server, calls the server every PollInterval (20 ms) for
//     DURATION and once more at its end, and exits 0;
//   - `mpsclient fault AFTER` runs as `run` for AFTER, then faults: the
//     server writes the sticky list to server.log, sets the sticky error
//     on every client, and this one prints ErrFault and exits 1;
//   - MPSCLIENT_FAULT_ONCE=FILE: `fault` faults only where FILE is not
//     there yet (it creates FILE as it goes to fault), else it ends as
//     `run` does: a restarted group succeeds;
//   - MPSCLIENT_FAULT_CLIENTS=N: `fault` faults only once its server has
//     N clients (itself included), working on past AFTER until then: a
//     test knows which clients the fault reaches without timing their
//     starts (not in issue 37's protocol: an addition to it);
//   - a client with the sticky error set prints ErrSticky at its next
//     call (its exit included) and exits 1; one that connects while the
//     server has it set is refused: ErrNotReady, exit 1; bad arguments
//     exit 2; without a daemon to connect to it has a context of its own
//     (as CUDA without MPS): its fault fails only itself.
//
// The daemon's server (mpsServer; in the daemon's process, its pid the
// daemon's unless MPS_STANDIN_SERVER forked one) writes
// CUDA_MPS_LOG_DIRECTORY/server.log as NVIDIA's does, each line
// "[YYYY-MM-DD HH:MM:SS.mmm Server   PID] …": "Creating server context on
// device 0 (MPS stand-in)" for the first client; at a fault "The
// following client process have a sticky error set:" and one pid a line,
// the faulting one first, then the other clients newest first; "Server
// failed to recevie command with status 806, assuming client {PID: N,
// Context ID: 1} exit" for a client that failed or whose connection
// closed (a process killed); "Client {PID: N, Context ID: 1} exiting.
// Number of active client contexts is K." for each that leaves; and,
// when the last one has left, "Destroy server context on device 0 (MPS
// stand-in)": the sticky error is gone and new clients are served.
// control.log logs each client as the control daemon does: "NEW CLIENT
// PID from user UID: Server already exists", the first one "…: Server is
// not ready, push client to pending list" and "Starting new server PID
// for user UID". What this stand-in chooses where NVIDIA says nothing: a
// context is destroyed whenever its last client leaves (sticky or not);
// a refused client leaves no line in server.log.
//
// Every line is written before the client that caused it, or waits on
// it, is answered: once a client has exited, the log says why, and
// tests need no sleeps. A client killed is noticed after its death, as
// the real server notices it, with one exception that keeps restarts
// free of timing: a sticky server, before it refuses a new client,
// first notices those of its clients that have ended (reaped, or
// zombies), so a launcher that saw all of a GPU's instances exit and
// starts them again is served.
package mpsstandin

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PidFile is the daemon's pid file in its pipe directory.
const PidFile = "nvidia-cuda-mps-control.pid"

// Main runs the stand-in with args (without the program name) and exits
// with its status.
func Main(args []string) int {
	pipe := env("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
	logDir := env("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps")
	switch {
	case len(args) == 0:
		return client(pipe, os.Stdin, os.Stdout, os.Stderr)
	case args[0] == "-f":
		return daemon(pipe, logDir)
	case args[0] == "-server": // the daemon's server (MPS_STANDIN_SERVER)
		return server()
	case args[0] == "-d":
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c := exec.Command(self, "-f")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case args[0] == "-h" || args[0] == "--help":
		fmt.Println("Usage: nvidia-cuda-mps-control [-d | -f]")
		return 0
	}
	fmt.Fprintf(os.Stderr, "nvidia-cuda-mps-control: unknown option %s\n", args[0])
	return 1
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// client sends each line of in to the daemon and prints its replies.
func client(pipe string, in io.Reader, out, errw io.Writer) int {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd := strings.TrimSpace(sc.Text())
		if cmd == "" {
			continue
		}
		c, err := net.Dial("unix", filepath.Join(pipe, "control"))
		if err != nil {
			fmt.Fprintf(errw, "Cannot find MPS control daemon process\n")
			return 1
		}
		fmt.Fprintln(c, cmd)
		reply, _ := io.ReadAll(c)
		c.Close()
		out.Write(reply)
	}
	return 0
}

// state is what one daemon holds.
type state struct {
	mu       sync.Mutex // the settings below, for connections are served at once
	threads  string
	pinned   map[string]string
	log      *os.File
	quit     chan struct{}
	quitOnce sync.Once
	server   *exec.Cmd  // MPS_STANDIN_SERVER's; nil without
	mps      *mpsServer // the GPU's server: its clients (mpsclient)
}

func daemon(pipe, logDir string) int {
	if c, err := net.Dial("unix", filepath.Join(pipe, "control")); err == nil {
		c.Close()
		fmt.Fprintln(os.Stderr, "An instance of this daemon is already running")
		return 1
	}
	for _, d := range []string{pipe, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	logf, err := os.OpenFile(filepath.Join(logDir, "control.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sock := filepath.Join(pipe, "control")
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := &state{threads: "100.0", pinned: map[string]string{}, log: logf, quit: make(chan struct{})}
	s.logf("Startup (GPUs %q)", os.Getenv("CUDA_VISIBLE_DEVICES"))
	event("start %d %s %s", os.Getpid(), pipe, os.Getenv("CUDA_VISIBLE_DEVICES"))
	if os.Getenv("MPS_STANDIN_SERVER") == "1" {
		s.startServer()
	}
	pidFile := filepath.Join(pipe, PidFile)
	if os.Getenv("MPS_STANDIN_NO_PIDFILE") != "1" {
		os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	s.mps = &mpsServer{logDir: logDir, control: s.logf, dead: processGone, pid: os.Getpid()}
	if s.server != nil { // the server forked at once is the one clients get
		s.mps.pid, s.mps.started = s.server.Process.Pid, true
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c) // a client holds its connection while it runs
		}
	}()
	for stop := false; !stop; {
		select {
		case <-s.quit:
			stop = true
		case sig := <-term:
			s.logf("Received signal %v", sig)
			stop = os.Getenv("MPS_STANDIN_TERM") != "ignore"
		}
	}
	s.stopServer()
	l.Close()
	os.Remove(sock)
	os.Remove(pidFile)
	s.logf("Exit")
	event("quit %d", os.Getpid())
	return 0
}

// startServer forks the daemon's server: this program again, by the
// path it was started as (a test binary runs the stand-in by that name).
func (s *state) startServer() {
	c := exec.Command(os.Args[0], "-server")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		s.logf("Starting server failed: %v", err)
		return
	}
	s.server = c
	s.logf("Starting new server %d for user %d", c.Process.Pid, os.Getuid())
}

// stopServer ends the server, as the real daemon's quit shuts its
// servers down, and waits for it.
func (s *state) stopServer() {
	if s.server == nil {
		return
	}
	_ = s.server.Process.Signal(syscall.SIGTERM)
	_ = s.server.Wait()
}

// server is the daemon's server: it runs until TERM.
func server() int {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	event("server %d", os.Getpid())
	for sig := range ch {
		if sig == syscall.SIGTERM {
			break
		}
	}
	event("server-exit %d", os.Getpid())
	return 0
}

func (s *state) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	line, _ := r.ReadString('\n')
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	if f[0] == clientHello && len(f) == 2 {
		if pid, err := strconv.Atoi(f[1]); err == nil {
			s.serveClient(c, r, pid)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logf("Command %s", strings.Join(f, " "))
	switch {
	case f[0] == "quit" && os.Getenv("MPS_STANDIN_QUIT") == "ignore":
		s.logf("Quit ignored")
	case f[0] == "quit":
		s.quitOnce.Do(func() { close(s.quit) })
	case f[0] == "get_server_list":
	case f[0] == "set_default_active_thread_percentage" && len(f) == 2:
		p, err := strconv.ParseFloat(f[1], 64)
		if err != nil || p <= 0 || p > 100 {
			fmt.Fprintln(c, "Invalid percentage")
			return
		}
		s.threads = strconv.FormatFloat(p, 'f', 1, 64)
		fmt.Fprintln(c, s.threads)
	case f[0] == "get_default_active_thread_percentage":
		fmt.Fprintln(c, s.threads)
	case f[0] == "set_default_device_pinned_mem_limit" && len(f) == 3:
		s.pinned[f[1]] = f[2]
	case f[0] == "get_default_device_pinned_mem_limit" && len(f) == 2:
		fmt.Fprintln(c, s.pinned[f[1]])
	default:
		fmt.Fprintf(c, "Unknown command %s\n", f[0])
	}
}

// serveClient serves one mpsclient for as long as it runs: its calls,
// one line each, answered by the GPU's server; a connection that closes
// without the client's "exit" or "lost" is a client that died, noticed as
// the real server notices it.
func (s *state) serveClient(c net.Conn, r *bufio.Reader, pid int) {
	reply, cl := s.mps.attach(pid)
	fmt.Fprintln(c, reply)
	if reply != replyOK {
		return
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			s.mps.lost(cl)
			return
		}
		switch strings.TrimSpace(line) {
		case callPoll:
			fmt.Fprintln(c, s.mps.poll(cl))
		case callFault:
			fmt.Fprintln(c, s.mps.fault(cl))
		case callClients:
			fmt.Fprintln(c, s.mps.count())
		case callExit:
			reply := s.mps.exit(cl)
			fmt.Fprintln(c, reply)
			if reply == replyOK {
				return
			}
		case callLost:
			s.mps.lost(cl)
			fmt.Fprintln(c, replyOK)
			return
		default:
			fmt.Fprintf(c, "unknown call %q\n", strings.TrimSpace(line))
		}
	}
}

// logf appends one line to control.log: "[2026-11-27 01:38:32.611 Control
// 489] message", as the real daemon's.
func (s *state) logf(format string, a ...any) {
	fmt.Fprintf(s.log, "[%s Control %d] %s\n", time.Now().Format(logTime), os.Getpid(), fmt.Sprintf(format, a...))
}

// event appends one lifecycle line to MPS_STANDIN_EVENTS, for tests.
func event(format string, a ...any) {
	path := os.Getenv("MPS_STANDIN_EVENTS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", a...)
}
