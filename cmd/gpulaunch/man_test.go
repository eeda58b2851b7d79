package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
)

// manSource is `gpulaunch man`'s output.
func manSource(t *testing.T) string {
	t.Helper()
	out, stderr, code := runCLI(t, nil, "man")
	if code != 0 || stderr != "" {
		t.Fatalf("gpulaunch man: exit %d: %s", code, stderr)
	}
	return out
}

// manSections are the page's .SH sections and its commands' .SS
// subsections, by title.
func manSections(page string) map[string]string {
	out := map[string]string{}
	title := ""
	for _, line := range strings.Split(page, "\n") {
		if t, ok := strings.CutPrefix(line, ".SH "); ok {
			title = strings.Trim(t, `"`)
			continue
		}
		if t, ok := strings.CutPrefix(line, ".SS "); ok {
			title = strings.Trim(t, `"`)
			continue
		}
		out[title] += line + "\n"
	}
	return out
}

// TestManPageNamesEveryFlag: every command has its subsection, and every
// flag its flag set registers is in it (walking the flag sets: a flag
// added later without a line fails).
func TestManPageNamesEveryFlag(t *testing.T) {
	sections := manSections(manSource(t))
	everyCommandFlag(t, func(cmd string, f *pflag.Flag) {
		sec, ok := sections["gpulaunch "+cmd]
		if !ok {
			t.Errorf("no subsection for command %s", cmd)
			return
		}
		if f == nil {
			return
		}
		if !strings.Contains(sec, `\fB\-\-`+clidoc.RoffEscape(f.Name)+`\fR`) {
			t.Errorf("gpulaunch %s: --%s is not in its subsection", cmd, f.Name)
		}
		if f.Shorthand != "" && !strings.Contains(sec, `\fB\-`+f.Shorthand+`\fR, \fB\-\-`+clidoc.RoffEscape(f.Name)) {
			t.Errorf("gpulaunch %s: -%s (--%s) is not in its subsection", cmd, f.Shorthand, f.Name)
		}
	})
}

// TestManPageSections: the sections a manual page has, the exit statuses
// main.go and the run's and queue's rules give, and no empty one.
func TestManPageSections(t *testing.T) {
	sections := manSections(manSource(t))
	for _, s := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"} {
		if strings.TrimSpace(strings.ReplaceAll(sections[s], ".PP", "")) == "" {
			t.Errorf("section %s missing or empty", s)
		}
	}
	for _, code := range []string{"0", "1", "2", "126", "127", "128+S", "255"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(code) + `\b|\b` + regexp.QuoteMeta(code) + ` when`).MatchString(sections["EXIT STATUS"]) {
			t.Errorf("EXIT STATUS does not give status %s:\n%s", code, sections["EXIT STATUS"])
		}
	}
}

// TestManPageNamesEnvironment: every GPULAUNCH_* variable gpulaunch's
// code (not its tests) names is in ENVIRONMENT.
func TestManPageNamesEnvironment(t *testing.T) {
	env := manSections(manSource(t))["ENVIRONMENT"]
	name := regexp.MustCompile(`"(GPULAUNCH_[A-Z][A-Z_]*[A-Z])`)
	found := map[string]bool{}
	for _, root := range []string{".", "../../pkg"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			for _, m := range name.FindAllSubmatch(src, -1) {
				found[string(m[1])] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 5 {
		t.Fatalf("found only %v in the source", found)
	}
	for v := range found {
		if !strings.Contains(env, clidoc.RoffEscape(v)) {
			t.Errorf("%s is read or set by gpulaunch but not in the man page's ENVIRONMENT", v)
		}
	}
}

// TestManPageRenders: groff reads the page without a warning, and man
// shows it at 80 columns with its sections and commands.
func TestManPageRenders(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("no groff")
	}
	page := filepath.Join(t.TempDir(), "gpulaunch.1")
	if err := os.WriteFile(page, []byte(manSource(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, device := range []string{"-Tutf8", "-Tascii"} { // a UTF-8 locale's man, a C locale's
		var stderr bytes.Buffer
		check := exec.Command(groff, "-man", device, "-ww", "-z", page)
		check.Stderr = &stderr
		if err := check.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("groff %s -ww: %v\n%s", device, err, stderr.String())
		}
	}
	man, err := exec.LookPath("man")
	if err != nil {
		t.Skip("no man")
	}
	show := exec.Command(man, "-l", page)
	show.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
	out, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("man -l: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"GPULAUNCH(1)", "\nNAME\n       gpulaunch - run N pinned copies", "\nSYNOPSIS\n", "\nCOMMANDS\n", "\nEXIT STATUS\n",
		"\n   gpulaunch status\n", "--monitor-interval", "       -n, --ntasks N\n", "—"} {
		if !strings.Contains(text, want) {
			t.Errorf("man -l shows no %q", want)
		}
	}
	if strings.Contains(text, `\e`) || strings.Contains(text, `\-`) || strings.Contains(text, `\[u`) {
		t.Errorf("an escape shows as itself in the rendered page")
	}
}
