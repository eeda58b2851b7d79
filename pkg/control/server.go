//go:build linux

package control

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/process"
)

// Server answers clients on a running gpulaunch's control socket.
type Server struct {
	ln     *net.UnixListener
	path   string
	board  *launcher.Board
	uid    int
	log    *zap.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Listen creates the socket <dir>/<host>.<pid>.sock, 0600, in the
// private directory dir (made if missing), and starts answering. uid is
// the only peer allowed. The host is in the name because $TMPDIR may be
// a filesystem that several nodes of a job share: each node's clients
// must find their node's runs only, and never take another node's live
// socket for a stale one of their own.
func Listen(dir, host string, pid, uid int, board *launcher.Board, log *zap.Logger) (*Server, error) {
	path := filepath.Join(dir, SocketName(host, pid))
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("control socket: its path %s is %d bytes, longer than a Unix socket's %d: set TMPDIR to a shorter directory", path, len(path), maxSocketPath)
	}
	if err := MakePrivateDir(dir, uid); err != nil {
		return nil, err
	}
	// A socket of this host and pid can only be a dead run's (pids are reused).
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, path: path, board: board, uid: uid, log: log, ctx: ctx, cancel: cancel}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// SocketName is the file name of the socket of gpulaunch pid on host.
func SocketName(host string, pid int) string {
	return strings.ReplaceAll(host, "/", "_") + "." + strconv.Itoa(pid) + ".sock"
}

// socketHost is the host a socket file name belongs to ("" if it is not
// a gpulaunch socket).
func socketHost(name string) string {
	base, ok := strings.CutSuffix(name, ".sock")
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return ""
	}
	if _, err := strconv.Atoi(base[i+1:]); err != nil {
		return ""
	}
	return base[:i]
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// CloseAfter answers until done is closed (the run has ended), then
// closes the server with grace: Close.
func (s *Server) CloseAfter(done <-chan struct{}, grace time.Duration) {
	<-done
	s.Close(grace)
}

// Close stops answering and removes the socket. Clients following
// output get up to grace to read what the run wrote last.
func (s *Server) Close(grace time.Duration) {
	s.ln.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		s.cancel()
		<-done
	}
	s.cancel()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(conn)
		}()
	}
}

// peerUID is the uid of the process at the other end of conn.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var credErr error
	err = raw.Control(func(fd uintptr) {
		cred, err := peerCred(int(fd))
		if err != nil {
			credErr = err
			return
		}
		uid = cred
	})
	if err == nil {
		err = credErr
	}
	return uid, err
}

func (s *Server) serve(conn *net.UnixConn) {
	defer conn.Close()
	// The connection ends with the server (after the grace) or when the
	// client hangs up; a client that stops reading cannot hold gpulaunch.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	uid, err := peerUID(conn)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, readErr := bufio.NewReaderSize(conn, 4096).ReadBytes('\n')
	if err != nil || uid != s.uid {
		// The request was read first (and is ignored), so that the
		// refusal reaches the client rather than a reset connection.
		s.log.Warn(fmt.Sprintf("control socket: refused a connection from uid %d (%v)", uid, err))
		reply(conn, Response{Error: fmt.Sprintf("refused: this gpulaunch belongs to uid %d; your uid is %d", s.uid, uid)})
		return
	}
	if readErr != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		reply(conn, Response{Error: "bad request: " + jsonerr.Explain("request", line, err).Error()})
		return
	}
	switch req.Op {
	case OpStatus:
		if req.Follow && !s.awaitEnd(ctx, conn, cancel) {
			return
		}
		snap := s.board.Snapshot()
		reply(conn, Response{Status: &snap})
	case OpSignal:
		if req.Signal <= 0 || req.Signal > 64 {
			reply(conn, Response{Error: fmt.Sprintf("signal %d: not a signal number", req.Signal)})
			return
		}
		sent, err := s.board.Signal(ctx, req.Instance, syscall.Signal(req.Signal))
		if err != nil {
			reply(conn, Response{Error: err.Error()})
			return
		}
		reply(conn, Response{Signalled: sent})
	case OpLogs:
		if req.Instance < 0 || req.Instance >= s.board.Len() {
			reply(conn, Response{Error: fmt.Sprintf("no instance %d: this run has instances 0 to %d", req.Instance, s.board.Len()-1)})
			return
		}
		if !reply(conn, Response{}) {
			return
		}
		// The client sends nothing more: a read ending means it hung up.
		go func() {
			var b [1]byte
			_, _ = conn.Read(b[:])
			cancel()
		}()
		s.streamLogs(ctx, conn, s.board.Output(req.Instance), req)
	default:
		reply(conn, Response{Error: fmt.Sprintf("unknown request %q (this gpulaunch knows status, logs, signal)", req.Op)})
	}
}

// awaitEnd waits until the run has ended (a status request with Follow:
// `gpulaunch top`'s last frame, with every exit); false when the client
// hung up or the server closed first.
func (s *Server) awaitEnd(ctx context.Context, conn *net.UnixConn, cancel context.CancelFunc) bool {
	// The client sends nothing more: a read ending means it hung up.
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		cancel()
	}()
	select {
	case <-s.board.Done():
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) streamLogs(ctx context.Context, conn *net.UnixConn, ring *process.Ring, req Request) {
	data, off, _, more, ended := ring.Since(-1)
	switch {
	case req.Tail == TailNone:
		data = nil
	case req.Tail > 0:
		data = lastLines(data, req.Tail)
	}
	for {
		if len(data) > 0 {
			if _, err := conn.Write(data); err != nil {
				return
			}
		}
		if ended || !req.Follow {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			return
		}
		var lost int64
		data, off, lost, more, ended = ring.Since(off)
		if lost > 0 {
			note := fmt.Sprintf("[gpulaunch: %d bytes of this instance's output were dropped: this reader fell more than %d KiB behind]\n", lost, process.RingSize>>10)
			data = append([]byte(note), data...)
		}
	}
}

// lastLines keeps the last n lines of b.
func lastLines(b []byte, n int) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

func reply(conn net.Conn, r Response) bool {
	b, err := json.Marshal(r)
	if err != nil {
		return false
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Write(append(b, '\n'))
	_ = conn.SetWriteDeadline(time.Time{})
	return err == nil
}

// ListenRun opens the control socket of the run pid in the directory of
// dirs that ListenDir picks (Listen), and tells the board its path. When
// it cannot, and the socket is required (the run is refused without it),
// the directory made for it just now, still empty, is removed: a refused
// run leaves nothing behind.
func ListenRun(dirs []string, host string, pid, uid int, board *launcher.Board, log *zap.Logger, required bool) (*Server, error) {
	dir := ListenDir(dirs, host, pid)
	_, statErr := os.Lstat(dir)
	srv, err := Listen(dir, host, pid, uid, board, log)
	if err == nil {
		board.SetSocket(srv.Path())
		return srv, nil
	}
	if required && statErr != nil {
		_ = os.Remove(dir)
	}
	return nil, err
}
