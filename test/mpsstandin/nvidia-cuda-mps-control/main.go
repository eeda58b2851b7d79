// Command nvidia-cuda-mps-control is the MPS stand-in (package
// mpsstandin) as a program: `make integration` puts it on the testbed's
// PATH; never install it where NVIDIA's is wanted.
package main

import (
	"os"

	"github.com/gpulaunch/gpulaunch/test/mpsstandin"
)

func main() { os.Exit(mpsstandin.Main(os.Args[1:])) }
