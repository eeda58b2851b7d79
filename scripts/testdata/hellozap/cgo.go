//go:build cgo

// Linking C makes the binary a dynamically linked cgo one, as gpulaunch
// is for go-nvml: its start pays ld.so and cgo's runtime set-up, and
// nothing else.

package main

import "C"
