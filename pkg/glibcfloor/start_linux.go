//go:build glibcfloor && cgo && (amd64 || arm64)

package glibcfloor

// The link's part of the floor (pins.h's rules 3 and 4): the libraries
// where the floor's glibc has the pinned symbols are loaded (DT_NEEDED)
// even where the build's glibc has them in libc.so.6. -l:NAME names the run-time
// file: glibc 2.34 and later ship libpthread and libdl as empty archives,
// with no .so to link against.

/*
#cgo LDFLAGS: -Wl,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -lresolv
extern int glibcfloor_constructor_runs;
*/
import "C"

// ConstructorRuns is how many times the program's constructors ran: one
// when the start path works, zero when an old glibc was given no init
// function, two when a new one ran them as well as the init function.
func ConstructorRuns() int { return int(C.glibcfloor_constructor_runs) }
