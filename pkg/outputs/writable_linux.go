package outputs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WritableCheck checks files, each directory once.
type WritableCheck struct {
	dirs map[string]error
}

// NewWritableCheck is a check that has seen no directory yet.
func NewWritableCheck() WritableCheck { return WritableCheck{dirs: map[string]error{}} }

// Files checks the stdout and stderr files of one instance or task (who);
// outFlag and errFlag name them as the user gave them (-o PATTERN).
func (c WritableCheck) Files(outFlag, stdout, errFlag, stderr, who string) error {
	for _, f := range [][2]string{{outFlag, stdout}, {errFlag, stderr}} {
		if f[1] == "" {
			continue
		}
		if err := c.File(f[1]); err != nil {
			return fmt.Errorf("%s: %s writes %s, but %v: nothing was started", f[0], who, f[1], err)
		}
	}
	return nil
}

// File says why path could not be opened for writing: it is a directory
// or not writable; or, to be made, its directory is missing, not
// writable, read-only or a kernel pseudo file system.
func (c WritableCheck) File(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c.dir(DirAsOpened(path))
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: give a file name", path)
	case unix.Access(path, unix.W_OK) != nil:
		return fmt.Errorf("%s is not writable by you", path)
	}
	return nil
}

// Replaced is File for a file written whole beside it and renamed over
// it (WriteWhole): its directory must take a new file too.
func (c WritableCheck) Replaced(path string) error {
	if err := c.File(path); err != nil {
		return err
	}
	return c.dir(DirAsOpened(path))
}

func (c WritableCheck) dir(dir string) error {
	err, seen := c.dirs[dir]
	if !seen {
		err = WritableDir(dir)
		c.dirs[dir] = err
	}
	return err
}

// WritableDir says why no file could be made in dir: it is missing, no
// directory, on a kernel pseudo file system, read-only, or not writable
// by you.
func WritableDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist (create it: mkdir -p %s)", dir, dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		if name, pseudo := pseudoFS[int64(st.Type)]; pseudo {
			return fmt.Errorf("the directory %s is on %s, a kernel pseudo file system where no file can be made: give a directory on a disk", dir, name)
		}
		if st.Flags&unix.ST_RDONLY != 0 {
			return fmt.Errorf("the directory %s is on a file system mounted read-only", dir)
		}
	}
	if unix.Access(dir, unix.W_OK|unix.X_OK) != nil {
		return fmt.Errorf("the directory %s is not writable by you", dir)
	}
	return nil
}

// pseudoFS are the kernel's file systems that hold no files of a user's:
// access(2) says root may write in their directories (/proc, /sys), and
// creating a file there then fails after the start (statfs(2)'s magics).
var pseudoFS = map[int64]string{
	unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs", unix.CGROUP_SUPER_MAGIC: "cgroup", unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.DEBUGFS_MAGIC: "debugfs", unix.TRACEFS_MAGIC: "tracefs", unix.SECURITYFS_MAGIC: "securityfs", unix.BPF_FS_MAGIC: "bpf",
	unix.PSTOREFS_MAGIC: "pstore", unix.EFIVARFS_MAGIC: "efivarfs", unix.DEVPTS_SUPER_MAGIC: "devpts",
}

// Document checks, before anything is done, a file a command writes
// whole (report's --svg and --html, scale's --json and --svg): flag is
// its kind's (Kinds: "report --svg"), nothing what a refusal says was not
// done. The rules, in order:
//  1. Its name is one its kind reads (Name).
//  2. "-" is stdout, where its kind has one: there is no file to check.
//  3. It can be replaced whole (WritableCheck.Replaced); a refusal names
//     the command's own flag (--svg).
func Document(flag, path, nothing string) error {
	if err := Name(flag, path, false); err != nil || path == "-" {
		return err
	}
	if err := NewWritableCheck().Replaced(filepath.Clean(path)); err != nil {
		_, own, _ := strings.Cut(flag, " ")
		return fmt.Errorf("%s %s: %v: %s", own, path, err, nothing)
	}
	return nil
}
