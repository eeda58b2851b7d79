package main

// The glibc floor's start path and libraries (pkg/glibcfloor): linked in
// builds with the tag glibcfloor, which the Makefile sets where the floor
// applies; an empty package elsewhere.
import _ "github.com/gpulaunch/gpulaunch/pkg/glibcfloor"
