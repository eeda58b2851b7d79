package taskqueue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/filelock"
)

// JoblogLock makes one sweep the owner of a joblog: two jobs that --resume
// the same joblog at once (a sweep submitted twice) would both run every
// task and record it twice. The lock is an open file description lock
// (fcntl F_OFD_SETLK: pkg/filelock, the metrics file's too) on the joblog itself, held as long as gpulaunch
// runs: the kernel drops it when gpulaunch ends, however it ends (even
// SIGKILL), so no stale lock is ever left to clear. OFD locks are POSIX
// byte-range locks to a file system: local file systems, NFSv3 (lockd)
// and NFSv4 honour them across clients, GPFS across its nodes, Lustre only
// when mounted with -o flock (-o localflock: on one node alone; without
// either the call fails, and gpulaunch warns and runs unlocked, as GNU
// parallel always does).
//
// Who owns it is written beside the joblog, in JOBLOG.owner (host, pid,
// since), for the refusal to name; the lock, not that file, decides.
type JoblogLock struct {
	f       *os.File
	owner   string // the owner file's path; "" when no lock is held
	created bool   // the joblog did not exist before the lock made it
}

// ErrJoblogLocked is what LockJoblog returns when another process holds
// the joblog; its message names the owner when the owner file says.
type ErrJoblogLocked struct {
	Path, Owner string
}

func (e *ErrJoblogLocked) Error() string {
	who := e.Owner
	if who == "" {
		who = "another process (its owner file " + e.Path + ".owner is missing)"
	}
	return fmt.Sprintf("%s is locked by %s: one sweep at a time owns a joblog", e.Path, who)
}

// ErrLockUnsupported wraps the reason a file system gave for refusing
// locks: the run goes on unlocked (filelock's, the one lock's).
var ErrLockUnsupported = filelock.ErrUnsupported

// LockJoblog takes the joblog's lock for the process host:pid, creating
// the (empty) joblog when it is missing. Nothing is truncated: OpenJoblog
// still decides that once every check has passed.
func LockJoblog(path, host string, pid int, now time.Time) (*JoblogLock, error) {
	created := false
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		created = err == nil
		if errors.Is(err, fs.ErrExist) { // made by another sweep just now
			f, err = os.OpenFile(path, os.O_RDWR, 0)
		}
	}
	if err != nil {
		return nil, err
	}
	l := &JoblogLock{f: f, owner: path + ".owner", created: created}
	switch err := filelock.Lock(f); {
	case errors.Is(err, filelock.ErrHeld):
		f.Close()
		return nil, &ErrJoblogLocked{Path: path, Owner: readOwner(l.owner)}
	case errors.Is(err, filelock.ErrUnsupported):
		l.owner = "" // no lock, so no owner to name
		return l, err
	case err != nil:
		l.Release(false)
		return nil, err
	}
	line := fmt.Sprintf("host %s, pid %d, since %s\n", host, pid, now.UTC().Format(time.RFC3339))
	if err := os.WriteFile(l.owner, []byte(line), 0o644); err != nil {
		l.Release(false)
		return nil, fmt.Errorf("%s: %w", l.owner, err)
	}
	return l, nil
}

// readOwner is the owner file's line, "" when it cannot be read.
func readOwner(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Release gives the lock up: the owner file is removed while the lock is
// still held (so that it never removes the next owner's), and with
// started false — a run refused before it began — a joblog the lock
// created is removed too, so that a refusal leaves the disk as it was.
func (l *JoblogLock) Release(started bool) {
	if l == nil || l.f == nil {
		return
	}
	if l.owner != "" {
		os.Remove(l.owner)
	}
	if l.created && !started {
		os.Remove(l.f.Name())
	}
	l.f.Close()
	l.f = nil
}
