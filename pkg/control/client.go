//go:build linux

package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// dialTimeout bounds a connection to a socket whose server is stuck.
const dialTimeout = 3 * time.Second

// Client talks to one running gpulaunch.
type Client struct {
	Path string
}

// call sends req and reads the response line; the connection stays open
// for what follows it (logs).
func (c Client) call(req Request) (*net.UnixConn, *bufio.Reader, Response, error) {
	d := net.Dialer{Timeout: dialTimeout}
	raw, err := d.Dial("unix", c.Path)
	if err != nil {
		return nil, nil, Response{}, dialError(c.Path, err)
	}
	conn := raw.(*net.UnixConn)
	b, _ := json.Marshal(req)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// A server that refuses the peer answers at once and hangs up, so
	// the request may meet a closed socket: the refusal is still there
	// to read, and says more than the broken pipe.
	_, writeErr := conn.Write(append(b, '\n'))
	rd := bufio.NewReader(conn)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		conn.Close()
		if writeErr != nil {
			return nil, nil, Response{}, fmt.Errorf("%s: %w", c.Path, writeErr)
		}
		return nil, nil, Response{}, fmt.Errorf("%s: no answer (%v): is it a gpulaunch control socket?", c.Path, err)
	}
	_ = conn.SetDeadline(time.Time{})
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		conn.Close()
		return nil, nil, Response{}, fmt.Errorf("%s: an answer that is not a gpulaunch's (%v): is it a gpulaunch control socket?", c.Path, jsonerr.Explain("answer", line, err))
	}
	if resp.Error != "" {
		conn.Close()
		return nil, nil, resp, errors.New(resp.Error)
	}
	return conn, rd, resp, nil
}

func dialError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%s: permission denied: the socket belongs to another user", path)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%s: nothing answers: %w", path, ErrEnded)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// ErrEnded: the socket is left from a gpulaunch that is gone.
var ErrEnded = errors.New("that gpulaunch has ended")

// Status is the live table.
func (c Client) Status() (launcher.Snapshot, error) {
	conn, _, resp, err := c.call(Request{Op: OpStatus})
	if err != nil {
		return launcher.Snapshot{}, err
	}
	conn.Close()
	if resp.Status == nil {
		return launcher.Snapshot{}, fmt.Errorf("%s: the answer has no status", c.Path)
	}
	return *resp.Status, nil
}

// Final is the run's last state, answered when the run has ended (the
// socket closes then, so a later Status would find nobody), or when ctx
// is cancelled. A gpulaunch older than this client answers at once: its
// snapshot is then not Finished.
func (c Client) Final(ctx context.Context) (launcher.Snapshot, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		return launcher.Snapshot{}, dialError(c.Path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b, _ := json.Marshal(Request{Op: OpStatus, Follow: true})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return launcher.Snapshot{}, fmt.Errorf("%s: %w", c.Path, err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return launcher.Snapshot{}, fmt.Errorf("%s: no last state (%v)", c.Path, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return launcher.Snapshot{}, fmt.Errorf("%s: bad answer: %v", c.Path, err)
	}
	if resp.Error != "" || resp.Status == nil {
		return launcher.Snapshot{}, fmt.Errorf("%s: no last state: %s", c.Path, resp.Error)
	}
	return *resp.Status, nil
}

// Signal sends sig to an instance, or to every one (launcher.AllInstances).
func (c Client) Signal(instance int, sig syscall.Signal) ([]launcher.Signalled, error) {
	conn, _, resp, err := c.call(Request{Op: OpSignal, Instance: instance, Signal: int(sig)})
	if err != nil {
		return nil, err
	}
	conn.Close()
	return resp.Signalled, nil
}

// Logs copies an instance's recent output to w and, with follow, what it
// writes next, until the instance is done for good, the run ends or ctx
// is cancelled.
func (c Client) Logs(ctx context.Context, instance int, follow bool, tail int, w io.Writer) error {
	conn, rd, _, err := c.call(Request{Op: OpLogs, Instance: instance, Follow: follow, Tail: tail})
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_, err = io.Copy(w, rd)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Run is a live gpulaunch found through its socket.
type Run struct {
	Client
	Info launcher.RunInfo
}

// Find lists the live runs of this host in dirs, those of job jobID when
// it is set, oldest first. Sockets nobody answers on any more (a
// gpulaunch that was SIGKILLed) are removed on the way.
func Find(dirs []string, host, jobID string) ([]Run, error) {
	host = strings.ReplaceAll(host, "/", "_")
	var runs []Run
	var denied []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				denied = append(denied, dir)
			}
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if socketHost(name) != host {
				continue
			}
			c := Client{Path: filepath.Join(dir, name)}
			snap, err := c.Status()
			if err != nil {
				if errors.Is(err, ErrEnded) {
					_ = os.Remove(c.Path)
				}
				continue
			}
			if jobID != "" && snap.Run.JobID != jobID {
				continue
			}
			runs = append(runs, Run{Client: c, Info: snap.Run})
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Info.Started.Before(runs[j].Info.Started) })
	if len(runs) == 0 && len(denied) > 0 {
		return nil, fmt.Errorf("cannot read %s: permission denied", strings.Join(denied, ", "))
	}
	return runs, nil
}
