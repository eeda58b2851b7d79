package instance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ErrorDir's rules: made in $TMPDIR when it is absolute, else in the
// temp root; removed at the end unless it holds the root cause.
func TestErrorDir(t *testing.T) {
	root, tmpdir := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		rule   string
		tmpdir string
		in     string
		wrote  bool // the root cause wrote its error file
		stays  bool
	}{
		{"made in an absolute $TMPDIR, dropped without a failure", tmpdir, tmpdir, false, false},
		{"a relative $TMPDIR is not taken", "rel", root, false, false},
		{"a failure that wrote no error file leaves nothing to keep", "", root, false, false},
		{"kept when it holds the root cause", "", root, true, true},
	} {
		d, err := MakeErrorDir(root, tc.tmpdir)
		if err != nil || filepath.Dir(d.Path) != tc.in || !strings.HasPrefix(filepath.Base(d.Path), "gpulaunch-torchelastic-") {
			t.Fatalf("%s: %+v, %v; want a directory in %s", tc.rule, d, err, tc.in)
		}
		d.Keep(tc.wrote)
		d.Drop()
		if _, err := os.Stat(d.Path); (err == nil) != tc.stays {
			t.Errorf("%s: stays %v, want %v", tc.rule, err == nil, tc.stays)
		}
	}
	if d, err := MakeErrorDir(filepath.Join(root, "missing"), ""); err == nil || d.Path != "" {
		t.Errorf("no directory: %+v, %v", d, err)
	}
}
