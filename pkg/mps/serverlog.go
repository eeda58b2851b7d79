package mps

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServerLog is the name of an MPS server's log in its daemon's log
// directory (CUDA_MPS_LOG_DIRECTORY), beside control.log.
const ServerLog = "server.log"

// Sticky is one fault that an MPS server spread to its clients: a client
// hit a fatal GPU error (an illegal address, a kernel that asserted), and
// the server set a sticky error on every client of its context, so that
// each one fails at its next CUDA call and new clients are refused
// ("Error 807: MPS server is not ready to accept new MPS client
// requests") until every client has exited (NVIDIA's MPS documentation;
// seen on an H200: ../shared/research/gpu-h200.md).
type Sticky struct {
	// At is the time of the server's line (its clock, local time as
	// written), Line that line as written.
	At   time.Time
	Line string
	// Server is the server's pid.
	Server int
	// PIDs are the clients the server listed with the sticky error, in
	// its order: every client of the context, the faulting one among
	// them. The log does not say which one faulted (on the H200 it was
	// listed first, which NVIDIA does not document).
	PIDs []int
	// Recovered: the server destroyed its context afterwards (once every
	// client had exited): new clients are served again.
	Recovered bool
}

// stickyHeader is the line that starts a Sticky's list, as the server
// writes it (driver 580; NVIDIA's own grammar).
const stickyHeader = "The following client process have a sticky error set:"

// serverLine is a line of server.log: "[2026-11-27 01:38:32.637 Server
// 490] message"; compiled at its first use, not at every start of
// gpulaunch (TestStartPathInits).
var serverLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) +Server +(\d+)\] (.*)$`)
})

// ReadStickies reads the faults a server's log records, oldest first; a
// log that is not there (no server started: no client yet) has none.
func ReadStickies(logDir string) ([]Sticky, error) {
	f, err := os.Open(filepath.Join(logDir, ServerLog))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseStickies(f)
}

// ParseStickies reads server.log's lines. The rules, in order:
//  1. A line that is not the server's ("[date time Server pid] …") is
//     skipped: the log is the server's to write, and a line cut short
//     by a write in progress ends nothing.
//  2. stickyHeader starts a Sticky at that line's time.
//  3. The lines right after it that are a number each are its clients'
//     pids; any other of the server's lines ends the list.
//  4. "Destroy server context" after a Sticky marks every Sticky so far
//     recovered: the server destroys its context once its last client
//     has exited, and the next client gets a new one.
func ParseStickies(r io.Reader) ([]Sticky, error) {
	var out []Sticky
	listing := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := serverLine().FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		msg := strings.TrimSpace(m[3])
		if pid, err := strconv.Atoi(msg); err == nil && listing {
			out[len(out)-1].PIDs = append(out[len(out)-1].PIDs, pid)
			continue
		}
		listing = false
		switch {
		case msg == stickyHeader:
			at, _ := time.ParseInLocation("2006-01-02 15:04:05.000", m[1], time.Local)
			server, _ := strconv.Atoi(m[2])
			out = append(out, Sticky{At: at, Line: sc.Text(), Server: server})
			listing = true
		case strings.HasPrefix(msg, "Destroy server context"):
			for i := range out {
				out[i].Recovered = true
			}
		}
	}
	return out, sc.Err()
}
