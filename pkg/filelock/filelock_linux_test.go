package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Lock's rules, each by name, on a real file: OFD locks are per open
// file description, so two opens in one process see each other's.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	first, second := open(), open()
	defer second.Close()
	if err := Lock(first); err != nil {
		t.Fatalf("1: a free file is locked: %v", err)
	}
	if err := Lock(second); !errors.Is(err, ErrHeld) {
		t.Errorf("2: a held file is ErrHeld, got %v", err)
	}
	first.Close()
	if err := Lock(second); err != nil {
		t.Errorf("1: closing the holder drops its lock: %v", err)
	}
}

// Rule 3's error is ErrUnsupported and words the reason as the joblog's
// warning always did.
func TestUnsupportedError(t *testing.T) {
	err := error(&UnsupportedError{Reason: errors.New("no locks available")})
	if !errors.Is(err, ErrUnsupported) || err.Error() != "this file system does not support file locks (no locks available)" {
		t.Errorf("%v", err)
	}
}
