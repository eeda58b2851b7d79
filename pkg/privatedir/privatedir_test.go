package privatedir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Each refusal names the directory and carries the caller's fix; the
// rule's cases are tested through control.MakePrivateDir as well.
func TestRefusalsCarryTheFix(t *testing.T) {
	base, uid := t.TempDir(), os.Getuid()
	fix := "set GPULAUNCH_KEY_DIR to a private directory every node sees"
	link := filepath.Join(base, "link")
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(base, "fresh")
	for _, tc := range []struct {
		dir  string
		uid  int
		want string // "" : no error
	}{
		{fresh, uid, ""},
		{fresh, uid, ""}, // again: it exists and is private
		{link, uid, "is not a directory (a symlink?): remove it, or " + fix},
		{fresh, uid + 1, "not to you (uid " + strconv.Itoa(uid+1) + "): someone else created it; remove it, or " + fix},
		{open, uid, "has mode 0755, open to others: run `chmod 700 " + open + "`"},
		{filepath.Join(base, "missing", "dir"), uid, "creating " + filepath.Join(base, "missing", "dir")},
	} {
		err := Make(tc.dir, tc.uid, fix)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Make(%s, uid %d): %v, want %q", tc.dir, tc.uid, err, tc.want)
		}
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("fresh directory: %v %v, want mode 0700", fi, err)
	}
}
