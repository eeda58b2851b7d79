// hellozap is hello with the two things the design card fixes for every
// gpulaunch start: cgo (go-nvml; cgo.go) and go.uber.org/zap, which links
// net/http and crypto/tls, whose package init runs at every start of any
// binary that links them. scripts/bench-start.sh times it beside
// `gpulaunch version`: the floor of a gpulaunch built as the card says.
package main

import (
	"fmt"

	"go.uber.org/zap"
)

func main() {
	_ = zap.NewNop()
	fmt.Println("hello")
}
