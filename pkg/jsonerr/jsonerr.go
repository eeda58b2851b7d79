package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"sync"
)

// Error is one decoding error, placed in its file.
type Error struct {
	File string
	// Line and Col are 1-based; 0 when the place is not known.
	Line, Col int
	What      string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.What
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.What)
}

// Explain turns err, from decoding data (the whole file) with
// encoding/json, into an *Error. Errors of the decoder itself are placed
// and reworded; an error a type's own UnmarshalJSON returned is kept, as
// its words are already the file's.
func Explain(file string, data []byte, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{File: file, What: strings.TrimPrefix(err.Error(), "json: ")}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF) || len(bytes.TrimSpace(data)) == 0:
		e.What = "the file is empty: it should hold one JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF), err.Error() == "unexpected end of JSON input":
		e.Line, e.Col = Position(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
		e.What = "the JSON ends early: a closing } or ] (or \") is missing"
	case errors.As(err, &syntax):
		// Offset is just after the byte found wrong
		e.Line, e.Col = Position(data, syntax.Offset-1)
		e.What = strings.TrimPrefix(syntax.Error(), "json: ")
	case errors.As(err, &typ):
		e.Line, e.Col = Position(data, valueStart(data, typ.Offset))
		e.What = fmt.Sprintf("%s: %s where %s belongs", fieldPath(typ), article(typ.Value), Want(typ.Type))
	case unknownField().MatchString(err.Error()):
		name := unknownField().FindStringSubmatch(err.Error())[1]
		e.Line, e.Col = keyPosition(data, name)
		e.What = fmt.Sprintf("unknown field %q (misspelt, or from another version?)", name)
	}
	return e
}

// unknownField is compiled at its first use, not at every start of
// gpulaunch: a package-level regexp was this package's init, 0.3 ms of
// each start (GODEBUG=inittrace=1), rank mode's included.
var unknownField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^json: unknown field "(.*)"$`) })

// Position is the 1-based line and column of byte offset off in data.
func Position(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// valueStart is where the value of the wrong kind begins: the decoder
// gives the offset just after a string, number or literal, and just
// after an object's or list's opening bracket.
func valueStart(data []byte, off int64) int64 {
	off = max(0, min(off, int64(len(data))))
	i := off - 1
	if i >= 0 && (data[i] == '{' || data[i] == '[') {
		return i
	}
	if i >= 0 && data[i] == '"' {
		for i--; i >= 0; i-- {
			if data[i] == '"' && !escaped(data, i) {
				return i
			}
		}
		return 0
	}
	for i >= 0 && strings.IndexByte("0123456789+-.eEtrufalsn", data[i]) >= 0 {
		i--
	}
	return i + 1
}

// escaped: the byte at i follows an odd number of backslashes.
func escaped(data []byte, i int64) bool {
	n := 0
	for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// keyPosition finds the first "name": in data (the decoder does not say
// where an unknown field is).
func keyPosition(data []byte, name string) (line, col int) {
	key, _ := json.Marshal(name)
	loc := regexp.MustCompile(regexp.QuoteMeta(string(key)) + `\s*:`).FindIndex(data)
	if loc == nil {
		return 0, 0
	}
	return Position(data, int64(loc[0]))
}

// fieldPath is the field's place in the document ("gpus.numa"; the
// whole document when the top level itself has the wrong kind).
func fieldPath(t *json.UnmarshalTypeError) string {
	if t.Field == "" {
		return "the document"
	}
	return t.Field
}

// article puts "a"/"an" before the kind of value found (json's "string",
// "number", "number -1", "array", "object", "bool").
func article(value string) string {
	switch {
	case value == "array":
		return "a list"
	case value == "bool":
		return "true or false"
	case strings.HasPrefix(value, "number "):
		return "the number " + strings.TrimPrefix(value, "number ")
	case strings.HasPrefix(value, "o"):
		return "an " + value
	}
	return "a " + value
}

// Want names what a Go type takes in JSON, in the file author's words.
func Want(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	if t.Kind() == reflect.Pointer {
		return Want(t.Elem()) + " (or null)"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list […]"
	case reflect.Struct, reflect.Map:
		return "an object {…}"
	}
	return "another kind of value"
}
