package outputs

import (
	"cmp"
	"fmt"
)

// Use is a file a command reads or writes, and the flag that names it.
type Use struct {
	Flag, Path string
	Reads      string // what is read there ("the tasks"); "" for a file written
	Writes     string // what is written there ("output", "the joblog"); "" for a file read
}

// Outputs are an instance's or a task's -o and -e files; -e is left out
// where it is -o's file (srun's default without -e).
func Outputs(stdout, stderr string) []Use {
	var uses []Use
	if stdout != "" {
		uses = append(uses, Use{Flag: "-o", Path: stdout, Writes: "output"})
	}
	if stderr != "" && stderr != stdout {
		uses = append(uses, Use{Flag: "-e", Path: stderr, Writes: "output"})
	}
	return uses
}

// Clash says whether two of uses are one file where that would do harm;
// nil when none are. It opens nothing: identity tells what file a path
// is (Identity; injected). Its rules, in order:
//
//  1. Paths are the same file when their identities are: an existing
//     file's device and inode, through symlinks; a file yet to be made,
//     its directory's resolved path and its name. A path whose identity
//     cannot be told (its directory is missing) is left to the
//     writability checks, which say what is wrong with it.
//  2. A file written is never a file read: the task input, the node's
//     description, the report being drawn or the program being started
//     would be replaced before or while it is read.
//  3. Two writers share a file only when they write the same kind of
//     thing: the output of every instance to one -o file, and -e with -o
//     (srun's), are lines of output by design; a report, a joblog, a
//     picture and output in one file would interleave formats that
//     nothing could read back.
//
// The first clash in the order of uses is reported, naming both flags.
func Clash(uses []Use, identity func(path string) (string, bool)) error {
	seen := map[string][]Use{}
	for _, u := range uses {
		id, ok := identity(u.Path)
		if !ok {
			continue
		}
		for _, prev := range seen[id] {
			if err := cmp.Or(writesOverInput(u, prev), writesOverInput(prev, u), mixesKinds(u, prev)); err != nil {
				return err
			}
		}
		seen[id] = append(seen[id], u)
	}
	return nil
}

// writesOverInput is rule 2: w writes the file r reads.
func writesOverInput(w, r Use) error {
	if w.Writes == "" || r.Reads == "" {
		return nil
	}
	return fmt.Errorf("%s %s is %s %s, which gpulaunch reads (%s): writing there would destroy it; give another file: nothing was started",
		w.Flag, w.Path, r.Flag, r.Path, r.Reads)
}

// mixesKinds is rule 3: a and b write different kinds of thing into one file.
func mixesKinds(a, b Use) error {
	if a.Writes == "" || b.Writes == "" || a.Writes == b.Writes {
		return nil
	}
	return fmt.Errorf("%s %s and %s %s are one file: %s and %s would be written into each other; give each its own file: nothing was started",
		a.Flag, a.Path, b.Flag, b.Path, a.Writes, b.Writes)
}
