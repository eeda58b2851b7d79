//go:build linux

package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// NotRunnable is a COMMAND that cannot be run, with the status a shell
// gives it: 127 when it is not found, 126 when it is found and cannot be
// executed.
type NotRunnable struct {
	Code int
	Msg  string
}

func (e NotRunnable) Error() string { return e.Msg }

// LookPath resolves COMMAND name as a shell would, against pathEnv (the
// PATH gpulaunch was given), before anything starts. Its rules, in order:
//
//	L1. A name with a slash is that file (made absolute), and no PATH is
//	    searched.
//	L2. Otherwise each directory of pathEnv is tried in turn, an empty
//	    one meaning the current directory; the first executable file
//	    found is the command.
//	L3. A file that does not exist is 127; one that exists and cannot be
//	    executed — a directory, no execute bit, a stat error — is 126.
//	L4. When no directory has an executable file, the first file found
//	    that cannot be executed is the answer (126, as bash says
//	    "Permission denied" for it); with none, "command not found" (127).
func LookPath(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") { // L1
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		return abs, runnable(abs)
	}
	var denied error
	for _, dir := range filepath.SplitList(pathEnv) { // L2
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := runnable(p)
		if err == nil {
			return filepath.Abs(p)
		}
		var nr NotRunnable
		if errors.As(err, &nr) && nr.Code == 126 && denied == nil {
			denied = err
		}
	}
	if denied != nil { // L4
		return "", denied
	}
	return "", NotRunnable{127, fmt.Sprintf("%s: command not found in PATH: nothing was started", name)}
}

// runnable is L3 for the file p.
func runnable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NotRunnable{127, fmt.Sprintf("%s: no such file: nothing was started", p)}
	case err != nil:
		return NotRunnable{126, fmt.Sprintf("%s: %v: nothing was started", p, err)}
	case fi.IsDir():
		return NotRunnable{126, fmt.Sprintf("%s is a directory: nothing was started", p)}
	case fi.Mode().Perm()&0o111 == 0:
		return NotRunnable{126, fmt.Sprintf("%s is not executable (chmod +x?): nothing was started", p)}
	}
	return nil
}

// CheckArgv refuses a COMMAND no program could be started with:
//
//	A1. Its first word, the program, is not empty.
//	A2. No word holds a NUL byte, which no program argument can carry.
func CheckArgv(argv []string) error {
	if len(argv) > 0 && argv[0] == "" {
		return errors.New("the COMMAND after -- is an empty word: give the program to run")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("an argument holds a NUL byte, which no program argument can carry: %q", a)
		}
	}
	return nil
}
