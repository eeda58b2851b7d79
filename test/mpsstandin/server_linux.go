package mpsstandin

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processGone: pid has ended, reaped (no such process) or a zombie (its
// files, the client's connection among them, already closed).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	return len(bytes.Fields(rest)) > 0 && string(bytes.Fields(rest)[0]) == "Z"
}
