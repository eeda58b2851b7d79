package outputs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteWhole writes data to path whole or not at all: beside it, then
// renamed over it. A symlink is written through, as a shell's > does, and
// a device or a pipe (/dev/null, /dev/stdout) in place: a rename would
// replace the link, or the device node itself.
func WriteWhole(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return os.WriteFile(path, data, 0o644)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Pathless is an OS error without Go's "open NAME: " wrapping, for a
// message that names the file itself.
func Pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// DirAsOpened is the directory open(2) makes path's file in: path up to
// its last slash, as given. filepath.Dir would clean it, and po/0/..
// (-o 'po/%t/../%t.log') would read as po, which exists, where the
// kernel walks through po/0, which does not: every instance then failed
// to start with 126.
func DirAsOpened(path string) string {
	switch i := strings.LastIndexByte(path, '/'); i {
	case -1:
		return "."
	case 0:
		return "/"
	default:
		return path[:i]
	}
}
