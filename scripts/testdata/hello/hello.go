// hello is the baseline of scripts/bench-start.sh: the start-up of the
// smallest Go program, against which `gpulaunch version` is measured.
// Built with cgo it is the floor of any cgo binary's start (cgo.go).
package main

import "fmt"

func main() { fmt.Println("hello") }
