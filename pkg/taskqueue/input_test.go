package taskqueue

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadInput(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crlf := file("crlf", "a 1\r\nb 2\n\nc")
	long := file("long", "ok\n"+strings.Repeat("x", MaxLineBytes+1)+"\n")
	for _, tc := range []struct {
		rule, name, stdin string
		want              []string
		err               string
	}{
		{rule: "1 no such file", name: filepath.Join(dir, "none"), err: "--tasks " + filepath.Join(dir, "none") + ": no such file: check the path; nothing was started"},
		{rule: "1 a directory", name: dir, err: "--tasks " + dir + " is a directory: give the file that holds one task per line; nothing was started"},
		{rule: "2 CR before LF dropped, blank lines kept", name: crlf, want: []string{"a 1", "b 2", "", "c"}},
		{rule: "2 stdin as -", name: "-", stdin: "x\r\ny\n", want: []string{"x", "y"}},
		{rule: "3 a line over 1 MiB", name: long, err: "--tasks " + long + " line 2 is longer than 1 MiB, the most a task line may hold: is it the right file? Nothing was started"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, err := ReadInput("--tasks", tc.name, strings.NewReader(tc.stdin))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ReadInput = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}
