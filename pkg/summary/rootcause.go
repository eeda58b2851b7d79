//go:build linux

package summary

import (
	"fmt"
	"io"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// WriteRootCause prints the failure that ended a distributed group
// (--ddp) under the table, as torchrun prints its "Root Cause (first
// observed failure)": which rank, in which attempt, how it ended, and the
// exception its @record main wrote — or why there is none. It is printed
// under -q too, and whether the ranks' output went to the console or to
// files: it is the line a failed job is read for.
func WriteRootCause(w io.Writer, f *launcher.Failure, paint Paint) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "%s instance %d, rank %d, attempt %d: exit %s\n", paint.Fail("root cause (first failure):"), f.Instance, f.Rank, f.Attempt, f.Status())
	e := f.Error
	if e == nil {
		if f.NoError != "" {
			fmt.Fprintf(w, "  %s\n", f.NoError)
		}
		if f.Wrote { // not torch's: kept, as it is all there is
			fmt.Fprintf(w, "  error file (kept): %s\n", f.ErrorFile)
		}
		return
	}
	exc := e.Message
	if e.Type != "" {
		exc = e.Type + ": " + e.Message
	}
	fmt.Fprintf(w, "  %s\n", exc)
	if where := e.Where(); where != "" {
		fmt.Fprintf(w, "  raised at %s\n", where)
	}
	if !e.Time.IsZero() {
		fmt.Fprintf(w, "  at %s\n", e.Time.Format(time.DateTime))
	}
	if e.Traceback != "" {
		fmt.Fprintf(w, "  error file (kept, with the traceback): %s\n", f.ErrorFile)
	} else {
		fmt.Fprintf(w, "  error file (kept; it holds no traceback): %s\n", f.ErrorFile)
	}
}
