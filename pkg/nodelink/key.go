package nodelink

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
	"github.com/gpulaunch/gpulaunch/pkg/privatedir"
)

// Key is the content of a run's key file.
type Key struct {
	Run string `json:"run"`
	// State is "open" while the holder takes nodes, "over" once the
	// queue has ended (a node that comes late has nothing to do), or
	// "failed" when the holder stopped before it opened (Why says why).
	State    string `json:"state"`
	Addr     string `json:"addr,omitempty"`
	CertHash string `json:"cert_sha256,omitempty"`
	Token    string `json:"token,omitempty"`
	// Nodes and Group are the holder's tree (Groups): a node of a group
	// joins its relay, whose own key file (groupRun) is beside this one.
	Nodes int `json:"nodes,omitempty"`
	Group int `json:"group,omitempty"`
	// HolderCert is, in a relay's key file, node 0's CertHash: a node of
	// the group takes only the file of this run's relay, not one an
	// earlier run with the same id left.
	HolderCert string    `json:"holder_cert_sha256,omitempty"`
	Why        string    `json:"why,omitempty"`
	Written    time.Time `json:"written"`
}

// Key states.
const (
	StateOpen   = "open"
	StateOver   = "over"
	StateFailed = "failed"
)

// KeyDir is the directory of the key files: GPULAUNCH_KEY_DIR, else
// $HOME/.gpulaunch. It must be on a filesystem the nodes share.
func KeyDir(env map[string]string) (string, error) {
	if d := env["GPULAUNCH_KEY_DIR"]; d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("GPULAUNCH_KEY_DIR=%s: give an absolute path", d)
		}
		return d, nil
	}
	home := env["HOME"]
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("a task queue over several nodes keeps its key in $HOME/.gpulaunch, but HOME is not set: set GPULAUNCH_KEY_DIR to a private directory every node sees")
	}
	return filepath.Join(home, ".gpulaunch"), nil
}

// KeyPath is run's key file in dir.
func KeyPath(dir, run string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, run)
	return filepath.Join(dir, "queue-"+clean+".key")
}

// privateDir creates the key directory 0700, or checks that an existing
// one is a real directory of this user's that nobody else may enter.
func privateDir(dir string) error {
	if err := privatedir.Make(dir, os.Getuid(), "set GPULAUNCH_KEY_DIR to a private directory every node sees"); err != nil {
		return fmt.Errorf("the key directory: %w", err)
	}
	return nil
}

// writeKey writes k to path whole or not at all: a 0600 file made beside
// it, then renamed over it, so a node never reads half a key.
func writeKey(path string, k Key) error {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return err
	}
	k.Written = time.Now().UTC()
	data, err := json.Marshal(k)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ReadKey reads a key file, refusing one that others could have read or
// written: it would not prove anything.
func ReadKey(path string) (Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return Key{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Key{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return Key{}, fmt.Errorf("%s is not a regular file", path)
	case int(st.Uid) != os.Getuid():
		return Key{}, fmt.Errorf("%s belongs to uid %d, not to you: not trusted", path, st.Uid)
	case fi.Mode().Perm()&0o077 != 0:
		return Key{}, fmt.Errorf("%s has mode %04o, open to others: not trusted", path, fi.Mode().Perm())
	}
	var k Key
	data, err := io.ReadAll(f)
	if err != nil {
		return Key{}, err
	}
	if err := json.Unmarshal(data, &k); err != nil {
		return Key{}, fmt.Errorf("%w (not a key file gpulaunch wrote?)", jsonerr.Explain(path, data, err))
	}
	return k, nil
}

// Fail writes a failed key for run in dir, so that the other nodes stop
// waiting for a holder that will not come, and say why.
func Fail(dir, run, why string) error {
	return writeKey(KeyPath(dir, run), Key{Run: run, State: StateFailed, Why: why})
}

// Over writes an over key for run in dir: the holder found nothing to do
// (a --resume of a finished queue), and the other nodes have nothing either.
func Over(dir, run string) error {
	return writeKey(KeyPath(dir, run), Key{Run: run, State: StateOver})
}

// token is 32 random bytes in hex.
func token() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// sweep removes this user's key files older than a week: those of runs
// whose holder could not remove them.
func sweep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "queue-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
