package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Rule: THIRD_PARTY_NOTICES (scripts/notices.sh), which every tarball and
// `make install` put in share/doc/gpulaunch, covers every module linked
// into gpulaunch — the cgo build's and the CGO_ENABLED=0 build's, at the
// versions go.mod selects — and the Go standard library, each with an
// SPDX licence and the licence's text. A go.mod change that adds or bumps
// a linked module fails here until the notices are written again.
func TestNoticesCoverLinkedModules(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	b, err := os.ReadFile(filepath.Join(repo, "THIRD_PARTY_NOTICES"))
	if err != nil {
		t.Fatalf("%v: scripts/notices.sh writes it", err)
	}
	sections := noticeSections(string(b))
	linked := map[string]bool{}
	for _, cgo := range []string{"1", "0"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "./cmd/gpulaunch")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		if cgo == "0" {
			// make's glibc floor links with the host linker, which a build
			// without cgo cannot use: its GOFLAGS go without it
			cmd.Env = append(cmd.Env, "GOFLAGS="+strings.Join(slices.DeleteFunc(strings.Fields(os.Getenv("GOFLAGS")),
				func(f string) bool { return f == "-ldflags=-linkmode=external" }), " "))
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (CGO_ENABLED=%s): %v %s", cgo, err, stderrOf(err))
		}
		for _, m := range strings.Fields(strings.ReplaceAll(string(out), " ", "@")) {
			linked[strings.ReplaceAll(m, "@", " ")] = true
		}
	}
	if len(linked) < 3 {
		t.Fatalf("go list names %d linked modules: %v", len(linked), linked)
	}
	linked["Go standard library"] = true
	for m := range linked {
		s, ok := sections[m]
		switch {
		case !ok:
			t.Errorf("THIRD_PARTY_NOTICES has no section for %q, which gpulaunch links: run scripts/notices.sh", m)
		case !regexp.MustCompile(`^\((Apache-2\.0|MIT|BSD-[23]-Clause)\)\n---- (LICEN[CS]E|COPYING)`).MatchString(s.body) || len(s.body) < 500:
			t.Errorf("%s's section has no SPDX licence and licence text:\n%.300s", m, s.body)
		}
	}
}

type noticeSection struct{ body string }

// noticeSections: each section of the notices, by its title without the
// licence — "path version", or "Go standard library" for Go's (whose
// version is the toolchain's that wrote the file).
func noticeSections(text string) map[string]noticeSection {
	out := map[string]noticeSection{}
	for _, part := range strings.Split(text, strings.Repeat("=", 80)+"\n")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		name, lic, ok := strings.Cut(title, " (")
		if !ok {
			continue
		}
		if strings.HasPrefix(name, "Go standard library ") {
			name = "Go standard library"
		}
		out[name] = noticeSection{body: "(" + lic + "\n" + body}
	}
	return out
}

// stderrOf is what a failed command printed on stderr.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
