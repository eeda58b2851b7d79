// Command mpsclient is the MPS stand-in's CUDA client (package
// mpsstandin) as a program: an instance's app in gpulaunch's tests, the
// client of the stand-in daemon of its CUDA_MPS_PIPE_DIRECTORY. Never
// install it where real CUDA programs run.
package main

import (
	"os"

	"github.com/gpulaunch/gpulaunch/test/mpsstandin"
)

func main() { os.Exit(mpsstandin.ClientMain(os.Args[1:])) }
