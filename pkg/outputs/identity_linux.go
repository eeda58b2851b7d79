package outputs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Identity is what file path is (Clash's rule 1): "inode DEV:INO" when it
// exists, else its directory's resolved path and its name; false when
// the directory cannot be resolved, and for a device or a pipe.
func Identity(path string) (string, bool) {
	for range 40 { // a dangling symlink: the file it would create
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil {
			break
		}
		target, err := os.Readlink(path)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "", false // a device or pipe (-o /dev/null --report /dev/null) holds nothing to destroy
		}
		return fmt.Sprintf("inode %d:%d", st.Dev, st.Ino), true
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", false
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", false
	}
	return filepath.Join(dir, filepath.Base(path)), true
}
