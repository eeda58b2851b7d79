//go:build linux

package summary

import (
	"fmt"
	"io"
	"strconv"
	"strings"
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
	if f.MPS != nil {
		writeMPSCause(w, f, paint)
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

// writeMPSCause prints the cause of a fault of a GPU's MPS server that
// ended the GPU's instances (launcher.MPSFault): which instance, its exit
// and its last line (its CUDA error, as a rule), the server's log line,
// the instances that failed with the server, and what the log can and
// cannot tell.
func writeMPSCause(w io.Writer, f *launcher.Failure, paint Paint) {
	m := f.MPS
	head := "root cause (first failure):"
	if m.Listed {
		head = "root cause (listed first by the MPS server):"
	}
	fmt.Fprintf(w, "%s instance %d, GPU %d's MPS client, exit %s\n", paint.Fail(head), f.Instance, m.GPU, f.Status())
	if m.Said != "" {
		fmt.Fprintf(w, "  it said: %s\n", m.Said)
	}
	pids := make([]string, len(m.PIDs))
	for i, p := range m.PIDs {
		pids[i] = strconv.Itoa(p)
	}
	fmt.Fprintf(w, "  GPU %d's MPS server set a sticky error on every client: %s %s\n", m.GPU, m.Line, strings.Join(pids, " "))
	if len(m.With) > 0 {
		fmt.Fprintf(w, "  instance(s) %s failed with the server, not on their own\n", joinInts(m.With))
	}
	how := "it failed first of the GPU's instances"
	if m.Listed {
		how = "its client is listed first, as the H200's server listed the faulting one"
	}
	fmt.Fprintf(w, "  the server's log lists every client with the sticky error, not which one faulted: %s\n", how)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
