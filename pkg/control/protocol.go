//go:build linux

package control

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// The protocol: the client writes one JSON Request line; the server
// answers one JSON Response line. For logs, the output follows that line
// as raw bytes until the server closes the connection.
const (
	OpStatus = "status"
	OpLogs   = "logs"
	OpSignal = "signal"
)

// Request is what a client asks.
type Request struct {
	Op       string `json:"op"`
	Instance int    `json:"instance"`         // logs, signal; launcher.AllInstances for every one
	Follow   bool   `json:"follow,omitempty"` // logs: then what comes; status: answer when the run has ended
	Tail     int    `json:"tail,omitempty"`   // logs: the last lines only; 0: all kept; TailNone: none (tail -n 0)
	Signal   int    `json:"signal,omitempty"`
}

// MaxPID is the largest pid Linux gives (PID_MAX_LIMIT on 64-bit,
// include/linux/threads.h): a --pid beyond it names no process.
const MaxPID = 1 << 22

// TailNone asks logs for none of the recent output, only what comes next
// (`logs -f --tail 0`, as `tail -f -n 0`); Tail 0 is every line kept.
const TailNone = -1

// Response is the server's answer; Error set means the request failed.
type Response struct {
	Error     string               `json:"error,omitempty"`
	Status    *launcher.Snapshot   `json:"status,omitempty"`
	Signalled []launcher.Signalled `json:"signalled,omitempty"`
}

// ParseSignal reads a signal as users write it to kill(1): TERM, SIGTERM,
// term or 15.
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("signal %d: not a signal number (1 to 64)", n)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("signal %q: not a signal name (TERM, INT, USR1, USR2, HUP, KILL, … or a number)", s)
}

// Tail is the Request's Tail for `logs --tail N` (given: --tail was on
// the command line; follow: -f). The rules, in order:
//  1. A negative count is refused.
//  2. --tail 0 without -f would show nothing at all: refused, with the
//     choices.
//  3. --tail 0 with -f is only what comes next (TailNone, as tail -f -n 0).
//  4. Otherwise the last N lines; 0 (not given) every line kept.
func Tail(n int, given, follow bool) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("--tail %d: cannot be negative", n)
	case n == 0 && given && !follow:
		return 0, errors.New("--tail 0 shows none of the recent output, and without -f nothing else: give -f to follow what comes next, --tail N for the last N lines, or leave --tail out for all that is kept")
	case n == 0 && given:
		return TailNone, nil
	}
	return n, nil
}

// ParseTarget reads `signal`'s INSTANCE: an instance number, or "all"
// (launcher.AllInstances).
func ParseTarget(word string) (int, error) {
	if word == "all" {
		return launcher.AllInstances, nil
	}
	n, err := strconv.Atoi(word)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("signal %q: INSTANCE is an instance number or all", word)
	}
	return n, nil
}
