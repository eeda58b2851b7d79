//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lmodInit is Debian's lmod's init script for bash.
const lmodInit = "/usr/share/lmod/lmod/init/bash"

// installTree is `make install PREFIX=tmp` from this checkout, as a user
// types it: the tree's root.
func installTree(t *testing.T) string {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	prefix := filepath.Join(t.TempDir(), "gpulaunch")
	runIn(t, repo, nil, "make", "--no-print-directory", "install", "PREFIX="+prefix)
	for _, f := range []string{"bin/gpulaunch", "share/man/man1/gpulaunch.1", "share/bash-completion/completions/gpulaunch",
		"share/zsh/site-functions/_gpulaunch", "share/fish/vendor_completions.d/gpulaunch.fish",
		"share/doc/gpulaunch/README.md", "share/doc/gpulaunch/docs/report.schema.json"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("make install wrote no %s: %v", f, err)
		}
	}
	return prefix
}

// TestInstallLmod: make install PREFIX=tmp, then a bash with Debian's
// real Lmod does `module use …; module load gpulaunch`: gpulaunch runs,
// man finds and renders its page, and bash completes `gpulaunch --mo`
// through the completion the module loaded from the installed file. The
// tree is then moved: the modulefile finds it from its own path.
func TestInstallLmod(t *testing.T) {
	if _, err := os.Stat(lmodInit); err != nil {
		t.Fatalf("%s: %v: scripts/slurm-testbed.sh installs lmod", lmodInit, err)
	}
	prefix := installTree(t)
	moved := prefix + "-moved"
	script := `set -e
source ` + lmodInit + `
system=$(man -w ls 2>/dev/null || true) # a system page, where the machine has its pages
module use "$1/share/lmod/modulefiles"
module load gpulaunch
echo "which: $(command -v gpulaunch)"
gpulaunch version
echo "manpage: $(man -w gpulaunch)"
MANWIDTH=80 man gpulaunch | head -20
COMP_WORDS=(gpulaunch --mo); COMP_CWORD=1; COMPREPLY=()
_gpulaunch
echo "completion: ${COMPREPLY[*]}"
[ -z "$system" ] || [ "$(man -w ls)" = "$system" ] && echo "system pages: kept"
module unload gpulaunch
command -v gpulaunch || echo "unloaded"
`
	for _, root := range []string{prefix, moved} {
		if root == moved {
			if err := os.Rename(prefix, moved); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script, "bash", root)
		cmd.Env = cleanEnv("PATH", "MANPATH", "XDG_DATA_DIRS", "FPATH", "LOADEDMODULES", "MODULEPATH")
		cmd.Env = append(cmd.Env, "PATH=/usr/local/bin:/usr/bin:/bin", "MANPAGER=cat", "PAGER=cat")
		out, err := cmd.CombinedOutput()
		text := string(out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", root, err, text)
		}
		for _, want := range []string{
			"which: " + filepath.Join(root, "bin", "gpulaunch") + "\n",
			"\ngpulaunch ",
			"manpage: " + filepath.Join(root, "share", "man", "man1", "gpulaunch.1") + "\n",
			"GPULAUNCH(1)", "NAME\n       gpulaunch - run N pinned copies",
			"completion: --monitor-interval\n",
			"system pages: kept",
			"unloaded",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: no %q in:\n%s", root, want, text)
			}
		}
	}
}

// TestInstallCompletions: the installed scripts of zsh and fish parse in
// the real shells and complete there; bash's, sourced as
// bash-completion loads it, completes a command's flags.
func TestInstallCompletions(t *testing.T) {
	for _, sh := range []string{"zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Fatalf("%s not found: scripts/slurm-testbed.sh installs zsh and fish", sh)
		}
	}
	prefix := installTree(t)
	share := filepath.Join(prefix, "share")
	bashFile := filepath.Join(share, "bash-completion", "completions", "gpulaunch")
	zshDir := filepath.Join(share, "zsh", "site-functions")
	fishFile := filepath.Join(share, "fish", "vendor_completions.d", "gpulaunch.fish")

	out := runIn(t, prefix, nil, "bash", "--norc", "-c",
		`source "$1"; COMP_WORDS=(gpulaunch status --j); COMP_CWORD=2; _gpulaunch; echo "${COMPREPLY[*]}"`, "bash", bashFile)
	if strings.TrimSpace(out) != "--json" {
		t.Errorf("bash: gpulaunch status --j<TAB>: %q, want --json", out)
	}

	runIn(t, prefix, nil, "zsh", "-n", filepath.Join(zshDir, "_gpulaunch"))
	// compinit reads #compdef from the file in $fpath: gpulaunch is
	// completed by _gpulaunch, which loads and runs without an error
	out = runIn(t, prefix, nil, "zsh", "-f", "-c",
		`fpath=("$1" $fpath); autoload -U compinit; compinit -u -D; print -r -- "compdef: $_comps[gpulaunch]"`, "zsh", zshDir)
	if !strings.Contains(out, "compdef: _gpulaunch") {
		t.Errorf("zsh: compinit did not register _gpulaunch for gpulaunch: %s", out)
	}

	runIn(t, prefix, nil, "fish", "-n", fishFile)
	for _, tc := range []struct{ line, want, notWant string }{
		{"gpulaunch --mo", "--monitor-interval", ""},
		{"gpulaunch status --", "--json", "--monitor-interval"},
		{"gpulaunch st", "status", ""},
		{"gpulaunch --mem-bind ", "preferred", ""},
		{"gpulaunch completion ", "fish", ""},
		{"gpulaunch -n 2 ./app --mo", "", "--monitor-interval"},
	} {
		out := runIn(t, prefix, []string{"GL_FILE=" + fishFile, "GL_LINE=" + tc.line}, "fish", "--no-config", "-c", `source $GL_FILE; complete -C "$GL_LINE"`)
		var words []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				words = append(words, f[0])
			}
		}
		has := func(w string) bool {
			for _, x := range words {
				if x == w {
					return true
				}
			}
			return false
		}
		if tc.want != "" && !has(tc.want) || tc.notWant != "" && has(tc.notWant) {
			t.Errorf("fish: complete -C %q: %v (want %q, not %q)", tc.line, words, tc.want, tc.notWant)
		}
	}
}

// cleanEnv is this process's environment without the named variables.
func cleanEnv(drop ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			keep = keep && k != d
		}
		if keep && !strings.HasPrefix(k, "LMOD") && !strings.HasPrefix(k, "__LMOD") && !strings.HasPrefix(k, "_ModuleTable") {
			env = append(env, kv)
		}
	}
	return env
}

// TestInstallDestdir: a staged install (a package build) writes under
// DESTDIR and nothing of DESTDIR into the files; a modulefile put outside
// the tree (MODULEFILES) has the prefix written in. INSTALL_BIN and
// GEN_BIN given, install builds nothing.
func TestInstallDestdir(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	stage := t.TempDir()
	bin := filepath.Join(binDir, "gpulaunch")
	runIn(t, repo, nil, "make", "--no-print-directory", "install", "DESTDIR="+stage, "PREFIX=/opt/gpulaunch",
		"MODULEFILES=/etc/modulefiles", "INSTALL_BIN="+bin, "GEN_BIN="+bin)
	if _, err := os.Stat(filepath.Join(stage, "opt/gpulaunch/bin/gpulaunch")); err != nil {
		t.Errorf("no staged binary: %v", err)
	}
	lua, _ := filepath.Glob(filepath.Join(stage, "etc/modulefiles/gpulaunch/*.lua"))
	if len(lua) != 1 {
		t.Fatalf("modulefiles staged: %v", lua)
	}
	text, err := os.ReadFile(lua[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), `local root = "/opt/gpulaunch"`) || strings.Contains(string(text), stage) {
		t.Errorf("%s: want the prefix /opt/gpulaunch written in, and not DESTDIR:\n%s", lua[0], text)
	}
}
