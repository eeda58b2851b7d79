//go:build !race

package main

// raceBuild: this test binary, which the tests run as gpulaunch, is built
// with the race detector (go test -race).
const raceBuild = false
