package job

import (
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalName is a signal as users write it: "SIGUSR1"; "" for none.
func SignalName(s syscall.Signal) string {
	if s == 0 {
		return ""
	}
	return "SIG" + strings.TrimPrefix(unix.SignalName(s), "SIG")
}
