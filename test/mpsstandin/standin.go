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
	threads string
	pinned  map[string]string
	log     *os.File
	quit    chan struct{}
	server  *exec.Cmd // MPS_STANDIN_SERVER's; nil without
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
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.serve(c)
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
	line, _ := bufio.NewReader(c).ReadString('\n')
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	s.logf("Command %s", strings.Join(f, " "))
	switch {
	case f[0] == "quit" && os.Getenv("MPS_STANDIN_QUIT") == "ignore":
		s.logf("Quit ignored")
	case f[0] == "quit":
		close(s.quit)
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

func (s *state) logf(format string, a ...any) {
	fmt.Fprintf(s.log, "[%s] %s\n", time.Now().Format("2006-01-02 15:04:05.000"), fmt.Sprintf(format, a...))
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
