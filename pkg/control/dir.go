//go:build linux

package control

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpulaunch/gpulaunch/pkg/privatedir"
)

// Env is the environment the socket directory is chosen from.
type Env map[string]string

// Dirs are the directories where this user's gpulaunch sockets may be,
// the one a server uses first. The runtime directory ($XDG_RUNTIME_DIR,
// private by the XDG spec) is preferred; without one (Slurm jobs often
// have none on compute nodes) a per-user directory in the temp dir. A
// client looks in every candidate, because the shell it runs in (a
// tmux pane, an `srun --pty` shell) may see a different environment
// from the one gpulaunch started in. tmp is the system's temp directory,
// the last resort ("/tmp"; a test gives its own, so that it never finds
// another gpulaunch of the machine).
func Dirs(env Env, uid int, tmp string) []string {
	var dirs []string
	add := func(d string) {
		for _, have := range dirs {
			if have == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	if x := env["XDG_RUNTIME_DIR"]; x != "" && filepath.IsAbs(x) {
		if fi, err := os.Stat(x); err == nil && fi.IsDir() && privatedir.OwnedBy(fi, uid) {
			add(filepath.Join(x, "gpulaunch"))
		}
	}
	if t := env["TMPDIR"]; t != "" && filepath.IsAbs(t) {
		add(filepath.Join(t, fmt.Sprintf("gpulaunch-%d", uid)))
	}
	add(filepath.Join(tmp, fmt.Sprintf("gpulaunch-%d", uid)))
	return dirs
}

// maxSocketPath is the longest path a Unix socket may have on Linux:
// sun_path is 108 bytes, with the path's NUL.
const maxSocketPath = 107

// ListenDir is the directory of dirs (Dirs' order) that a server's socket
// goes in: the first whose socket path fits in sun_path. A job's TMPDIR
// on a deep scratch path can be too long for one (bind says only "invalid
// argument"); the run then uses the next candidate, where every client
// looks as well, instead of going without a socket. When none fits, the
// first: Listen says why.
func ListenDir(dirs []string, host string, pid int) string {
	for _, d := range dirs {
		if len(filepath.Join(d, SocketName(host, pid))) <= maxSocketPath {
			return d
		}
	}
	return dirs[0]
}

// MakePrivateDir creates dir 0700 for uid, or checks that an existing one
// is a real directory owned by uid that nobody else may enter: a
// directory planted in a shared temp dir by someone else must not
// receive the socket.
func MakePrivateDir(dir string, uid int) error {
	return privatedir.Make(dir, uid, "set TMPDIR to a directory of yours")
}
