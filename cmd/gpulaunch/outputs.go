package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// checkOutputs says, before anything starts or is opened, why a file the
// run will write could not be written: every instance's and every task's
// -o and -e files (a task's for every slot it may run in, when the
// pattern names the slot), --report's file and the joblog. It changes
// nothing on disk.
func checkOutputs(o *runOptions, l *launch, insts []launcher.Instance, q *launcher.Queue) error {
	c := writableCheck{dirs: map[string]error{}}
	for _, inst := range insts {
		// a queue's slots write their tasks' files only
		if err := c.files("-o "+o.flags.output, inst.Stdout, "-e "+o.flags.error, inst.Stderr, fmt.Sprintf("instance %d", inst.Index)); !o.tasks.queueMode() && err != nil {
			return err
		}
	}
	if q != nil && (o.flags.output != "" || o.flags.error != "") {
		slots := 1
		if strings.Contains(o.flags.output+o.flags.error, "{%}") {
			slots = len(insts) // this node's; another node's are checked there
		}
		for _, t := range q.Tasks {
			for slot := range slots {
				ts := q.ForSlot(t, slot)
				if err := c.files("-o "+o.flags.output, ts.Stdout, "-e "+o.flags.error, ts.Stderr, fmt.Sprintf("task %d", t.Seq)); err != nil {
					return err
				}
			}
		}
	}
	if l.report != "" {
		if err := c.file(l.report); err != nil {
			return usagef("--report %s: %v: nothing was started", l.report, err)
		}
	}
	if q != nil && o.tasks.joblog != "" {
		if err := c.file(o.tasks.joblog); err != nil {
			return usagef("--joblog %s: %v: nothing was started", o.tasks.joblog, err)
		}
	}
	return nil
}

// writableCheck checks files, each directory once.
type writableCheck struct {
	dirs map[string]error
}

// files checks the stdout and stderr files of one instance or task (who).
func (c writableCheck) files(outFlag, stdout, errFlag, stderr, who string) error {
	for _, f := range [][2]string{{outFlag, stdout}, {errFlag, stderr}} {
		if f[1] == "" {
			continue
		}
		if err := c.file(f[1]); err != nil {
			return usagef("%s: %s writes %s, but %v: nothing was started", f[0], who, f[1], err)
		}
	}
	return nil
}

// file says why path could not be created or written: its directory is
// missing or not writable, or path is a directory or not writable.
func (c writableCheck) file(path string) error {
	dir := filepath.Dir(path)
	err, seen := c.dirs[dir]
	if !seen {
		err = writableDir(dir)
		c.dirs[dir] = err
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: give a file name", path)
	case unix.Access(path, unix.W_OK) != nil:
		return fmt.Errorf("%s is not writable by you", path)
	}
	return nil
}

func writableDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist (create it: mkdir -p %s)", dir, dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case unix.Access(dir, unix.W_OK|unix.X_OK) != nil:
		return fmt.Errorf("the directory %s is not writable by you", dir)
	}
	return nil
}
