// Package chart draws gpulaunch's pictures: a run's GPU use over time
// (`gpulaunch report FILE --svg|--html`) and a scaling study
// (`gpulaunch scale --svg`).
//
// It writes the SVG itself (svg.go: paths, dots, text; axes.go: axes
// with nice ticks, grids, legends; text.go: text widths from a table of
// the font's advances) rather than drawing with a plotting library,
// because every gpulaunch process pays for a library at its start,
// pictures drawn or not: Go runs the init of every linked package before
// main, and links a package whole or not at all, so a library is as
// cheap as its init and its size, never "loaded when it draws". A rank
// wrapper (`mpirun -np 1024 gpulaunch -- app`) starts once per rank.
//
// Measured on the 2-CPU VM (Go 1.26, cgo build, 201 interleaved runs of
// `gpulaunch version` each, medians, under load; init is the sum of
// GODEBUG=inittrace=1's clock):
//
//	                            size     init    wall     RSS
//	Go hello world              2.4 MB   1.1 ms   8.6 ms   8.4 MiB
//	with Gonum's plot (before)  26.2 MB  14.8 ms  28.3 ms  15.7 MiB
//	  the same, -tags minimal   24.5 MB  13.5 ms  27.9 ms  16.0 MiB
//	this SVG writer             18.8 MB  11.7 ms  24.4 ms  12.0 MiB
//
// Of Gonum's 3.2 ms, plot's init parses its 12 embedded Liberation fonts
// (1.9 ms) unconditionally: it has no option to load them when it draws,
// and its "minimal" build tag drops only its PDF, EPS, PNG and TeX back
// ends (1.7 MB), not the fonts nor go-latex's symbol tables (0.9 ms),
// which its text package imports. Keeping the drawing off the start
// would take a second binary or a Go plugin (cgo, built with the same
// toolchain), where gpulaunch is one file to copy. The writer draws the
// same information: the pictures' tests parse it with encoding/xml.
//
// Its inputs are its own types (Run, Study), filled by the callers from
// the report and the study, so that the drawing rules do not depend on
// their JSON.
package chart
