package taskqueue

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// joblogHeader is GNU parallel's, column for column, so that parallel's
// own --resume and the tools written for its joblogs read ours.
const joblogHeader = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

// Joblog is the record of finished tasks, in a file opened O_APPEND.
// A task of this node's is written as it is reaped (Record, one
// write(2)); the tasks other nodes report are written in groups (Add,
// then Flush, one write(2) for all the reports the holder's loop took in
// at once: see supervisor.fromNode), before the holder answers any of
// them. Either way, if gpulaunch crashes, every record it acted upon is in
// the file (the kernel has it; a node's report that it received but had
// not yet written is a task that --resume runs again, as one still in the
// socket would be), and no record is ever torn. A crash of the machine
// keeps what the kernel had written back: the joblog is not fsync'd, as
// GNU parallel's is not. Writing 1,000 reports one by one cost the holder
// 7% of its CPU at 13,000 tasks/s (pprof); grouped, one write per loop turn.
type Joblog struct {
	mu   sync.Mutex
	f    *os.File
	path string
	// added are the records Add buffered for the next Flush, as lines;
	// adds counts them.
	added []byte
	adds  int
	// lost counts the records that could not be written, and err is the
	// first reason: a --resume would run those tasks again.
	lost int
	err  error
	// stream: a JoblogStream, which no --resume reads back. readerGone:
	// its reader has gone (a pipe to `head`); its records are dropped
	// from then on, as the tasks' output to it is, with one error and no
	// loss counted (JoblogStream's rule 4).
	stream, readerGone, goneUnsaid bool
}

// OpenJoblog opens path for new records: appending when resuming (with a
// header if the file is new or empty), else truncated with a header. A
// stream (JoblogStream) is appended to, after a header.
func OpenJoblog(path string, resume bool) (*Joblog, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	stream := JoblogStream(path)
	if !resume && !stream {
		flags |= os.O_TRUNC
	}
	f, err := openJoblogFile(path, flags)
	if err != nil {
		return nil, err
	}
	j := &Joblog{f: f, path: path, stream: stream}
	fi, err := f.Stat()
	if err == nil && (stream || fi.Size() == 0) {
		_, err = f.WriteString(joblogHeader)
	}
	if err = j.readerGoneAt(err); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// readerGoneAt is rule 4 of JoblogStream for a write's err: a stream's
// reader gone drops the joblog from then on; the first record's write
// says so (goneUnsaid), once.
func (j *Joblog) readerGoneAt(err error) error {
	if err == nil || !j.stream || !errors.Is(err, syscall.EPIPE) {
		return err
	}
	j.readerGone, j.goneUnsaid = true, true
	return nil
}

// openJoblogFile opens path; "-" is gpulaunch's own stdout, written where
// its other output goes (parallel writes to its STDOUT handle), not
// reopened as /dev/stdout, which starts at another offset of a file.
func openJoblogFile(path string, flags int) (*os.File, error) {
	if path != "-" {
		return os.OpenFile(path, flags, 0o644)
	}
	fd, err := syscall.Dup(1) // Close closes the copy, not stdout
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "stdout"), nil
}

// ownDescriptor is the name of one of gpulaunch's own file descriptors;
// compiled at its first use, not at every start (TestStartPathInits: 32
// KB at each start, rank mode's included).
var ownDescriptor = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/(dev/(stdin|stdout|stderr|fd/[0-9]+)|proc/(self|thread-self|[0-9]+)/fd/[0-9]+)$`)
})

// JoblogStream says whether a --joblog path is a stream rather than a
// file: what is written there cannot be read back by a --resume, nor
// kept by a lock. The rules, in order:
//  1. "-" is stdout (GNU parallel's --joblog -), and the name of one of
//     gpulaunch's own file descriptors —
//     /dev/stdout, /dev/stderr, /dev/stdin, /dev/fd/N, /proc/self/fd/N — is a
//     stream, whatever the shell opened there (a terminal, a pipe, or a
//     file opened with > or >>, whose name is not this one): the joblog
//     goes where gpulaunch's own output goes, as parallel's does.
//  2. So is any other path that is not a regular file: a FIFO, a
//     terminal, /dev/null.
//  3. A stream is appended to, never truncated (a `>> log` keeps what it
//     held), after a header; it is not locked and gets no owner file
//     beside it (there is no "beside" in /proc/self/fd, and no second
//     sweep can resume it); and --resume refuses it.
//  4. A stream whose reader has gone (`--joblog - | head`) drops the
//     records after that, with one error: they are not lost to a
//     --resume, which no stream has, and the run's status stays its
//     tasks' (it was 255 with an error per record).
func JoblogStream(path string) bool {
	if path == "-" || ownDescriptor().MatchString(filepath.Clean(path)) {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && !fi.Mode().IsRegular() && !fi.IsDir()
}

// blanks turns a command's newlines and tabs into blanks, which keep a
// record one line of tab-separated fields. Made once: a Replacer built per
// record showed in the profile of a holder recording 20,000 tasks a
// second (scripts/bench-holder.sh).
var blanks = strings.NewReplacer("\n", " ", "\t", " ")

// recordLine renders a record as parallel does: start time in epoch seconds
// with milliseconds, run time right-aligned in ten columns. Send and
// Receive are parallel's bytes transferred to and from remote hosts:
// always 0 here, as for parallel's local jobs.
func recordLine(r job.Record) string {
	cmd := blanks.Replace(r.Command)
	return fmt.Sprintf("%d\t%s\t%.3f\t%10.3f\t0\t0\t%d\t%d\t%s\n", r.Seq, r.Host,
		float64(r.Start.UnixMilli())/1000, float64(r.Runtime.Milliseconds())/1000, r.Exit, r.Signal, cmd)
}

// ErrReaderGone is a stream joblog's reader gone (JoblogStream's rule 4):
// said once, as a warning, not a loss.
var ErrReaderGone = errors.New("its reader has gone")

// Record appends one record now (with any that Add buffered before it).
func (j *Joblog) Record(r job.Record) error {
	j.Add(r)
	return j.Flush()
}

// Add buffers one record for the next Flush.
func (j *Joblog) Add(r job.Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.added = append(j.added, recordLine(r)...)
	j.adds++
}

// Flush writes the records Add buffered, in one write(2).
func (j *Joblog) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.adds == 0 {
		return nil
	}
	var err error
	if !j.readerGone {
		_, err = j.f.Write(j.added)
		err = j.readerGoneAt(err)
	}
	switch {
	case j.goneUnsaid:
		j.goneUnsaid = false
		err = fmt.Errorf("%s: %w: the rest of the joblog is dropped, as output to it is", j.path, ErrReaderGone)
	case err != nil:
		if j.lost += j.adds; j.err == nil {
			j.err = err
		}
	}
	j.added, j.adds = j.added[:0], 0
	return err
}

// Path is where the joblog is written.
func (j *Joblog) Path() string { return j.path }

// Lost is how many records could not be written, and why the first
// could not.
func (j *Joblog) Lost() (int, error) {
	if j == nil {
		return 0, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lost, j.err
}

// Close closes the file; a nil Joblog has none.
func (j *Joblog) Close() error {
	if j == nil {
		return nil
	}
	return j.f.Close()
}

// JoblogEntry is what a resume needs of a task's records: whether one of
// them succeeded, and the last one's Command column, to tell the user of
// a command changed since.
type JoblogEntry struct {
	Succeeded bool // a record with Exitval 0 and Signal 0
	Command   string
}

// ReadJoblog reads the records of an earlier run, by task number; a task
// recorded more than once (rerun by a --resume-failed) succeeded when one
// of its records did, as parallel reads it. A missing file is an empty
// log: the first run of a resumable job.
func ReadJoblog(path string) (map[int]JoblogEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[int]JoblogEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory: give the joblog file", path)
	}
	out := map[int]JoblogEntry{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 && strings.HasPrefix(line, "Seq\t") {
			continue
		}
		f := strings.SplitN(line, "\t", 9)
		if len(f) < 9 {
			if line == "" {
				continue
			}
			return nil, fmt.Errorf("%s line %d: not a joblog record (want 9 tab-separated columns, Seq … Command)", path, n)
		}
		seq, err1 := strconv.Atoi(f[0])
		exit, err2 := strconv.Atoi(f[6])
		sig, err3 := strconv.Atoi(f[7])
		if err := errors.Join(err1, err2, err3); err != nil || seq < 1 {
			return nil, fmt.Errorf("%s line %d: Seq, Exitval and Signal must be numbers: %q", path, n, line)
		}
		out[seq] = JoblogEntry{Succeeded: out[seq].Succeeded || exit == 0 && sig == 0, Command: f[8]}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: reading it failed: %w", path, err)
	}
	return out, nil
}

// SameCommand says whether a joblog's Command column (recorded) is the
// command planned for the same task number: equal once tabs and newlines
// are blanks (the joblog writes them so); or equal word for word, for a
// joblog that GNU parallel wrote with its own quoting (a\ b for 'a b');
// a "{%}" planned (the slot, not known before the task starts) matches
// any slot number.
func SameCommand(recorded, planned string) bool {
	planned = blanks.Replace(planned)
	if matchSlot(recorded, planned) {
		return true
	}
	rw, err1 := SplitWords(recorded)
	pw, err2 := SplitWords(planned)
	if err1 != nil || err2 != nil || len(rw) != len(pw) {
		return false
	}
	for i := range rw {
		if !matchSlot(rw[i], pw[i]) {
			return false
		}
	}
	return true
}

// matchSlot: s is pattern with each "{%}" a slot number.
func matchSlot(s, pattern string) bool {
	if !strings.Contains(pattern, "{%}") {
		return s == pattern
	}
	parts := strings.Split(pattern, "{%}")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[0-9]+") + "$").MatchString(s)
}
