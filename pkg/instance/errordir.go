package instance

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrorDir is --ddp's private directory of the ranks' error files
// (TORCHELASTIC_ERROR_FILE, ErrorFile; launcher's Policy.ErrorDir), made
// in the temp directory as torchrun makes its own (torchelastic_*), once
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

// Keep keeps the directory if the run's root cause wrote its error file
// there (wrote).
func (d *ErrorDir) Keep(wrote bool) { d.keep = wrote }

// Drop removes the directory, unless it is kept.
func (d *ErrorDir) Drop() {
	if d.Path != "" && !d.keep {
		_ = os.RemoveAll(d.Path)
	}
}

// ReadErrorFile reads what a failed rank wrote in its error file, file
// (after the run: the rank has exited, so its file is whole). wrote: it
// wrote the file, readable or not (the evidence of its failure, kept);
// e is nil when it wrote nothing (its main is not wrapped in torch's
// @record) or something unreadable, and why then says why, as the
// summary writes it.
func ReadErrorFile(file string) (e *TorchError, wrote bool, why string) {
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, "it wrote no error file: wrap its main in torch.distributed.elastic.multiprocessing.errors.record to see its exception here"
	case err != nil:
		return nil, false, err.Error()
	}
	te, err := ParseErrorFile(file, data)
	if err != nil {
		return nil, true, err.Error()
	}
	return &te, true, ""
}
