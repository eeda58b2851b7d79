//go:build linux

package process

import (
	"fmt"
	"os"
	"sync"
)

// OpenMode is how a run opens its output files (srun's --open-mode).
type OpenMode string

// Open modes.
const (
	// OpenTruncate empties a file the first time the run opens it.
	OpenTruncate OpenMode = "truncate"
	// OpenAppend keeps what a file holds and appends.
	OpenAppend OpenMode = "append"
)

// OutputFiles are the files a run's jobs write. A file is open once at a
// time, however many jobs name it, and they all write it through one
// LineMux: lines of different instances or tasks land whole, as srun
// writes a file pattern without %t (one file holding every task's
// output). The first open of a path in the run truncates it (OpenTruncate)
// and every later one appends, so that a restart or the next task naming
// the same file adds to it; a queue task's own file is started afresh by
// each of its tries (acquire's fresh). A file is closed when the last
// job writing it ends; per-task files of a long queue do not pile up.
//
// Its lock is a leaf: it is taken on slot threads without the
// supervisor's lock, and by streams ending, never inside a LineMux's.
type OutputFiles struct {
	mode OpenMode
	// broken is told once per file that writing it failed (a full disk).
	broken func(path string, err error)

	mu     sync.Mutex
	open   map[string]*outputFile
	opened map[string]bool // paths this run has opened before: later opens append
}

type outputFile struct {
	mux  *LineMux
	f    *os.File
	refs int // streams writing it now
}

func NewOutputFiles(mode OpenMode, broken func(path string, err error)) *OutputFiles {
	return &OutputFiles{mode: mode, broken: broken, open: map[string]*outputFile{}, opened: map[string]bool{}}
}

// acquire opens path for one more stream, or shares it when it is open
// already; release gives the stream's share back. fresh: the file is the
// job's own (a queue task's file, Task.OwnStdout): a path not open now is
// emptied whatever the mode and whoever opened it before, so that a
// retry, or a --resume's rerun of a task gpulaunch ended, starts it
// afresh instead of after the killed attempt's partial output.
func (o *OutputFiles) Acquire(path string, fresh bool) (mux *LineMux, release func(), err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	of := o.open[path]
	if of == nil {
		flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if fresh || o.mode != OpenAppend && !o.opened[path] {
			flags |= os.O_TRUNC
		}
		f, err := os.OpenFile(path, flags, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("output file: %w", err)
		}
		of = &outputFile{f: f, mux: &LineMux{w: f}}
		if o.broken != nil {
			of.mux.broken = func(err error) { o.broken(path, err) }
		}
		o.open[path], o.opened[path] = of, true
	}
	of.refs++
	return of.mux, func() { o.release(path, of) }, nil
}

func (o *OutputFiles) release(path string, of *outputFile) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if of.refs--; of.refs == 0 {
		_ = of.f.Close()
		delete(o.open, path)
	}
}
