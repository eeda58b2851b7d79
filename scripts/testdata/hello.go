// hello is the baseline of scripts/bench-start.sh: the start-up of the
// smallest Go program, against which `gpulaunch version` is measured.
package main

import "fmt"

func main() { fmt.Println("hello") }
