package privatedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Make creates dir 0700, or checks that an existing one is private to
// uid (Check). elsewhere is the fix that puts the directory somewhere
// else ("set TMPDIR to a directory of yours"), for the errors.
func Make(dir string, uid int, elsewhere string) error {
	err := os.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w (%s)", dir, err, elsewhere)
	}
	return Check(dir, uid, elsewhere)
}

// Check says why dir is not a private directory of uid, with the fix.
func Check(dir string, uid int, elsewhere string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (a symlink?): remove it, or %s", dir, elsewhere)
	case !OwnedBy(fi, uid):
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): someone else created it; remove it, or %s", dir, fi.Sys().(*syscall.Stat_t).Uid, uid, elsewhere)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %04o, open to others: run `chmod 700 %s`", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// OwnedBy: fi's owner is uid.
func OwnedBy(fi fs.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}
