//go:build linux

package launcher

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Failure is the failure that ended a distributed group (--ddp): the
// first of its ranks that failed by itself in the group's last attempt,
// and what that rank reported in its error file — torchrun's "Root
// Cause (first observed failure)". Under --mps it is the cause of a
// fault of a GPU's MPS server that ended the GPU's instances (MPS;
// fateMode's F2b, F3).
type Failure struct {
	Instance, Rank int
	// Attempt is the group's restart count when it failed.
	Attempt int
	// Code is the exit status, -1 when Signal killed the rank.
	Code   int
	Signal syscall.Signal
	// ErrorFile is the rank's TORCHELASTIC_ERROR_FILE; "" when the run
	// gave none (Policy.ErrorDir unset).
	ErrorFile string
	// Wrote: the rank wrote its error file, readable or not; the file is
	// then kept, since it is the evidence of the failure.
	Wrote bool
	// Error is what the rank wrote there: nil when it wrote nothing (its
	// main is not wrapped in torch's @record) or something unreadable
	// (NoError says which).
	Error *instance.TorchError
	// NoError says why Error is nil, as the summary writes it.
	NoError string
	// MPS is the fault of the instance's GPU's MPS server that failed
	// its neighbours too; nil for a --ddp group's failure.
	MPS *MPSFault
}

// Status is the rank's end as srun writes it: "1", "SIGSEGV".
func (f Failure) Status() string { return job.Status(f.Code, f.Signal) }

// readErrorFile fills in what the failed rank wrote (after the run: the
// rank has exited, so its file is whole).
func (f *Failure) readErrorFile() {
	if f.ErrorFile == "" {
		return
	}
	data, err := os.ReadFile(f.ErrorFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.NoError = "it wrote no error file: wrap its main in torch.distributed.elastic.multiprocessing.errors.record to see its exception here"
		return
	case err != nil:
		f.NoError = err.Error()
		return
	}
	f.Wrote = true
	e, err := instance.ParseErrorFile(f.ErrorFile, data)
	if err != nil {
		f.NoError = err.Error()
		return
	}
	f.Error = &e
}

// ErrorDir is --ddp's private directory of the ranks' error files
// (TORCHELASTIC_ERROR_FILE, instance.ErrorFile; Policy.ErrorDir), made in
// the temp directory as torchrun makes its own (torchelastic_*), once
// every check has passed, so that a refused run leaves nothing. It stays
// when it holds the root cause of the run's failure, which the summary
// and the report point at (Keep), and is removed otherwise (Drop).
type ErrorDir struct {
	Path string // "": none could be made
	keep bool
}

// MakeErrorDir makes the directory in tmpRoot, or in tmpdir ($TMPDIR)
// when that is absolute. Without one the ranks get no error file and a
// failure no root cause; the run goes on (the caller says so).
func MakeErrorDir(tmpRoot, tmpdir string) (*ErrorDir, error) {
	tmp := tmpRoot
	if filepath.IsAbs(tmpdir) {
		tmp = tmpdir
	}
	dir, err := os.MkdirTemp(tmp, "gpulaunch-torchelastic-") // 0700
	if err != nil {
		return &ErrorDir{}, err
	}
	return &ErrorDir{Path: dir}, nil
}

// Keep keeps the directory if rc, the run's root cause, wrote its error
// file there.
func (d *ErrorDir) Keep(rc *Failure) { d.keep = rc != nil && rc.Wrote }

// Drop removes the directory, unless it is kept.
func (d *ErrorDir) Drop() {
	if d.Path != "" && !d.keep {
		_ = os.RemoveAll(d.Path)
	}
}
