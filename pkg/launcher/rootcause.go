//go:build linux

package launcher

import (
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
	if f.ErrorFile != "" {
		f.Error, f.Wrote, f.NoError = instance.ReadErrorFile(f.ErrorFile)
	}
}
