package taskqueue

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// MaxLineBytes is the most a task line may hold.
const MaxLineBytes = 1 << 20

// ReadInput reads a queue's input lines (--tasks, --each-line: what) from
// the file name, or from stdin when name is "-". The rules, in order:
//  1. The file is refused, nothing started, when it does not exist, a
//     directory on its path is not searchable, it is a directory, or it
//     is not readable by the user (OpenInput), each in its own words.
//  2. A line ends at "\n"; a "\r" before it is dropped (a file written
//     on Windows runs the same commands).
//  3. A line longer than MaxLineBytes is refused with its number: the
//     file is likely not a task list.
//  4. A read that fails half-way is refused with the last line read:
//     no queue runs on part of its input.
func ReadInput(what, name string, stdin io.Reader) ([]string, error) {
	r := stdin
	if name != "-" {
		f, err := OpenInput(what, name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for sc.Scan() {
		lines = append(lines, strings.TrimSuffix(sc.Text(), "\r"))
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, fmt.Errorf("%s %s line %d is longer than 1 MiB, the most a task line may hold: is it the right file? Nothing was started", what, name, len(lines)+1)
	case err != nil:
		return nil, fmt.Errorf("%s %s: reading it failed after line %d: %v: nothing was started", what, name, len(lines), pathless(err))
	}
	return lines, nil
}

// OpenInput opens the queue's input (--tasks, --each-line: what), or says
// in one line what is wrong with it and what to do (ReadInput's rule 1).
func OpenInput(what, name string) (*os.File, error) {
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s %s: no such file: check the path; nothing was started", what, name)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%s %s: a directory on its path is not searchable by you: nothing was started", what, name)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %v: nothing was started", what, name, pathless(err))
	case fi.IsDir():
		return nil, fmt.Errorf("%s %s is a directory: give the file that holds one task per line; nothing was started", what, name)
	}
	f, err := os.Open(name)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%s %s is not readable by you (chmod u+r %s): nothing was started", what, name, name)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %v: nothing was started", what, name, pathless(err))
	}
	return f, nil
}

// pathless is an OS error without Go's "open NAME: ", for a message that
// names the file itself (outputs.Pathless, for the files a run writes,
// is the same rule; outputs imports this package, so it cannot be asked).
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
