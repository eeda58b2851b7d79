package launcher

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// outputPipe makes the pipe of one output stream. The write end stays a
// plain descriptor, handed to the child and closed: an os.File would
// register it with the poller and unregister it again, for every task of
// a queue. The read end is non-blocking, so its reader parks on the
// poller instead of holding a thread.
func outputPipe() (reader *os.File, child int, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, fmt.Errorf("output pipe: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, -1, fmt.Errorf("output pipe: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), fds[1], nil
}
