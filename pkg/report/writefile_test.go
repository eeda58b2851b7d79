package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile writes Marshal's bytes whole, and a file it cannot write is
// an error naming --report.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "run.json")
	r := Run{SchemaVersion: SchemaVersion, Host: "node1", Command: []string{"app"}}
	if err := WriteFile(file, r); err != nil {
		t.Fatal(err)
	}
	want, _ := Marshal(r)
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file holds %q (%v), want %q", got, err, want)
	}
	if err := WriteFile(filepath.Join(dir, "none", "run.json"), r); err == nil || !strings.HasPrefix(err.Error(), "--report: ") {
		t.Fatalf("WriteFile into a missing directory = %v, want an error naming --report", err)
	}
}
