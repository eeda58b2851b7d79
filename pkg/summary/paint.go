//go:build linux

package summary

import "github.com/gpulaunch/gpulaunch/pkg/job"

// Paint colours a table's failure and warning cells for a terminal
// (ANSI SGR colours); false leaves every cell as it is. Whether the
// output gets colour is the caller's rule (no-color.org's NO_COLOR, a
// terminal or not).
//
// On, every cell of a painted column gets the same 9 bytes of escapes
// (Plain for the others), so that tabwriter, which counts them as
// characters, still lines the columns up.
type Paint bool

const (
	sgrFail  = "\x1b[31m" // red
	sgrWarn  = "\x1b[33m" // yellow
	sgrPlain = "\x1b[39m" // the terminal's own colour
	sgrReset = "\x1b[0m"
)

func (p Paint) wrap(sgr, s string) string {
	if !p {
		return s
	}
	return sgr + s + sgrReset
}

// Fail is a failure's cell: an instance's own non-zero exit.
func (p Paint) Fail(s string) string { return p.wrap(sgrFail, s) }

// Warn is a warning's cell: an end gpulaunch caused, a warning line.
func (p Paint) Warn(s string) string { return p.wrap(sgrWarn, s) }

// Plain is an unpainted cell of a painted column.
func (p Paint) Plain(s string) string { return p.wrap(sgrPlain, s) }

// Exit paints an exit status: a failure when the instance failed by
// itself, a warning when gpulaunch ended it (-K, -W, --timeout, a signal
// to gpulaunch), plain when it succeeded.
func (p Paint) Exit(s string, failed bool, by job.Ended) string {
	switch {
	case failed && by == job.EndedItself:
		return p.Fail(s)
	case failed:
		return p.Warn(s)
	}
	return p.Plain(s)
}
