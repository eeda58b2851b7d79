package outputs

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDocument(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none", "p.svg")
	for _, tc := range []struct {
		rule, flag, path, err string
	}{
		{"1 its kind's name: scale's stdout is the table", "scale --json", "-", "scale --json -: - is stdout, which carries the study's table; give a file name"},
		{"2 - is report's stdout", "report --svg", "-", ""},
		{"3 a directory that is not there", "report --svg", missing, "--svg " + missing + ": "},
		{"3 a file that can be written", "scale --svg", filepath.Join(dir, "s.svg"), ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			err := Document(tc.flag, tc.path, "nothing was written")
			if (err == nil) != (tc.err == "") || err != nil && !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("Document(%q, %q) = %v, want %q…", tc.flag, tc.path, err, tc.err)
			}
			if err != nil && strings.HasPrefix(tc.rule, "3") && !strings.HasSuffix(err.Error(), ": nothing was written") {
				t.Fatalf("Document's refusal %q does not say what was not done", err)
			}
		})
	}
}
