package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrHeld is Lock's answer when another open file description (another
// process, or another open of the file) holds the lock.
var ErrHeld = errors.New("the file is locked by another process")

// ErrUnsupported is what an UnsupportedError is (errors.Is): the caller
// goes on unlocked, with a warning.
var ErrUnsupported = errors.New("this file system does not support file locks")

// UnsupportedError is the reason a file system gave for refusing locks.
type UnsupportedError struct{ Reason error }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%v (%v)", ErrUnsupported, e.Reason)
}

// Is makes it ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Unwrap is the file system's reason.
func (e *UnsupportedError) Unwrap() error { return e.Reason }

// Lock takes the write lock on the whole of f, without waiting; it is
// held until f is closed. Its answers:
//  1. nil: f's open file description holds the lock.
//  2. ErrHeld: another holds it (EAGAIN or EACCES, as fcntl(2) gives either).
//  3. An *UnsupportedError (ErrUnsupported) with the reason: the file
//     system keeps no locks (ENOLCK, EOPNOTSUPP, ENOSYS, EINVAL: a Lustre
//     without -o flock).
//  4. Any other error as fcntl gave it.
func Lock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	switch err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES):
		return ErrHeld
	case errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL):
		return &UnsupportedError{Reason: err}
	default:
		return err
	}
}
