// rankwrap is the 3-line select_gpu wrapper written in Go:
//
//	export ROCR_VISIBLE_DEVICES=$SLURM_LOCALID; exec "$@"
//
// and nothing else. scripts/bench-start.sh times it beside gpulaunch's
// rank mode and the bash wrapper: it is the floor of a rank wrapper in
// Go on this machine, without cgo and, built with it, with (cgo.go).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rankwrap CMD [ARG...]")
		os.Exit(2)
	}
	os.Setenv("ROCR_VISIBLE_DEVICES", os.Getenv("SLURM_LOCALID"))
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "rankwrap:", err)
	os.Exit(127)
}
