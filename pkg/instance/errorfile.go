package instance

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/jsonerr"
)

// ErrorFile is the TORCHELASTIC_ERROR_FILE of the rank in the group's
// attempt (its restart count) under dir, laid out as torchrun lays its
// own (attempt_<restart>/<local rank>/error.json under a directory of
// the run): a fresh directory per attempt, so that a restarted rank
// never finds the last attempt's exception in its file. gpulaunch names
// the rank's directory by its global RANK, which is the local rank on
// one node and still unique when several nodes' files are gathered.
func ErrorFile(dir string, attempt, rank int) string {
	return filepath.Join(dir, "attempt_"+strconv.Itoa(attempt), strconv.Itoa(rank), "error.json")
}

// TorchError is what a worker whose main torch's `record` wraps wrote
// into its error file when the main raised: torch 1.13's
// ErrorHandler.record_exception writes
//
//	{"message": {"message": "<Type>: <text>",
//	             "extraInfo": {"py_callstack": "<traceback>", "timestamp": "<unix seconds>"}}}
//
// and a child's own error reply may put a plain string in "message" with
// the timestamp beside it; torchrun reads both (ProcessFailure).
type TorchError struct {
	// Type is the exception's class ("ValueError"); "" when the message
	// names none.
	Type string
	// Message is the exception's text, without its type.
	Message string
	// Traceback is the Python call stack, as traceback.format_exc()
	// wrote it; "" when the file has none.
	Traceback string
	// Time is when the worker wrote it (whole seconds); zero if unknown.
	Time time.Time
}

// ParseErrorFile reads a worker's error file, file: what is not torch's
// is refused, placed FILE:LINE:COL where the JSON is wrong.
func ParseErrorFile(file string, data []byte) (TorchError, error) {
	var raw struct {
		Message   json.RawMessage `json:"message"`
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		e := &jsonerr.Error{File: file, What: err.Error()}
		errors.As(jsonerr.Explain(file, data, err), &e)
		e.What = "not torch's error file: " + e.What
		return TorchError{}, e
	}
	var text, stack string
	var stamp json.RawMessage
	var plain string
	if err := json.Unmarshal(raw.Message, &plain); err == nil {
		text, stamp = plain, raw.Timestamp
	} else {
		var m struct {
			Message   string `json:"message"`
			ExtraInfo struct {
				Callstack string          `json:"py_callstack"`
				Timestamp json.RawMessage `json:"timestamp"`
			} `json:"extraInfo"`
		}
		if err := json.Unmarshal(raw.Message, &m); err != nil || m.Message == "" {
			return TorchError{}, &jsonerr.Error{File: file, What: "not torch's error file: no \"message\" with the exception"}
		}
		text, stack, stamp = m.Message, m.ExtraInfo.Callstack, m.ExtraInfo.Timestamp
	}
	e := TorchError{Message: text, Traceback: stack, Time: unixStamp(stamp)}
	if typ, msg, ok := strings.Cut(text, ": "); ok && isPythonName(typ) {
		e.Type, e.Message = typ, msg
	} else if isPythonName(text) { // an exception with no text: "KeyboardInterrupt"
		e.Type, e.Message = text, ""
	}
	return e, nil
}

// Where is the traceback's innermost frame ("File "train.py", line 6, in
// main"): where the exception was raised; "" without a traceback.
func (e TorchError) Where() string {
	where := ""
	for _, line := range strings.Split(e.Traceback, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "File ") {
			where = t
		}
	}
	return where
}

// unixStamp is torch's timestamp, a string of seconds (or a number).
func unixStamp(raw json.RawMessage) time.Time {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.Unix(n, 0)
}

// isPythonName: s could be an exception's (dotted) class name.
func isPythonName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}
