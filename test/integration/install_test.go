//go:build integration

package integration

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// lmodScript is what TestInstallLmod's interactive bash runs, given the
// modulefile tree ($1) and the module's name ($2): load, use, and unload,
// printing each variable the module changes before the load and after the
// unload. complete_words prints what TAB gives after its words through
// the compspec the load registered, as bash calls it (the function,
// the word under the cursor, the word before).
const lmodScript = `set -e
source ` + lmodInit + `
vars() { for v in MANPATH XDG_DATA_DIRS FPATH; do echo "$1 $v=${!v-unset}"; done; }
complete_words() {
    local spec fn
    spec=$(complete -p gpulaunch)
    fn=${spec##* -F }; fn=${fn%% *}
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
    "$fn" gpulaunch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" || : # bash ignores its status
    echo "complete [$*] with $fn: ${COMPREPLY[*]}"
}
system=$(man -w ls 2>/dev/null || true) # a system page, where the machine has its pages
vars before
module use "$1"
module load "$2"
echo "interactive: $-"
declare -F _gpulaunch >/dev/null && echo "at load: the completion script was sourced" || echo "at load: no completion script sourced"
echo "which: $(command -v gpulaunch)"
gpulaunch version
echo "manpage: $(man -w gpulaunch)"
MANWIDTH=80 man gpulaunch | head -20
complete_words gpulaunch st
complete_words gpulaunch status --
complete_words gpulaunch completion ""
complete_words gpulaunch signal 2 ""
complete_words gpulaunch --mo
[ -z "$system" ] || [ "$(man -w ls)" = "$system" ] && echo "system pages: kept"
# a shell started after the load, with bash-completion: its loader finds the
# script through XDG_DATA_DIRS
bash --norc --noprofile -i -c "source /usr/share/bash-completion/bash_completion; __load_completion gpulaunch; $(declare -f complete_words)
  complete_words gpulaunch status --j" 2>/dev/null | sed 's/^/a later shell: /'
module unload "$2"
command -v gpulaunch || echo "unloaded"
complete -p gpulaunch 2>/dev/null || echo "completion: removed"
vars after
`

// TestInstallLmod: make install PREFIX=tmp, then an interactive bash
// with Debian's real Lmod does `module use …; module load gpulaunch` with
// the modulefile where make install put it, linked from another tree
// (a site's central tree), copied there with its root written in (the
// documented one-line edit), and in the tree after it was moved: each
// time gpulaunch runs, man finds and renders its page, bash completes a
// command, a command's flags, completion's shells and signal's signals
// through the compspec the load registered (the load sourced no script:
// the first TAB does), and the unload leaves MANPATH, XDG_DATA_DIRS and
// FPATH unset as they were before. A copy without its root is refused.
func TestInstallLmod(t *testing.T) {
	for _, f := range []string{lmodInit, "/usr/share/bash-completion/bash_completion"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v: scripts/slurm-testbed.sh installs lmod and bash-completion", f, err)
		}
	}
	prefix := installTree(t)
	moved := prefix + "-moved"
	installed, _ := filepath.Glob(filepath.Join(prefix, "share/lmod/modulefiles/gpulaunch/*.lua"))
	if len(installed) != 1 {
		t.Fatalf("modulefiles installed: %v", installed)
	}
	file := filepath.Base(installed[0])
	site := t.TempDir()
	linked, copied, bare := filepath.Join(site, "linked"), filepath.Join(site, "copied"), filepath.Join(site, "bare")
	for _, d := range []string{linked, copied, bare} {
		if err := os.MkdirAll(filepath.Join(d, "gpulaunch"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// a relative link, as `ln -s ../../…` in a site's tree makes one
	rel, err := filepath.Rel(filepath.Join(linked, "gpulaunch"), installed[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(linked, "gpulaunch", "1.0.lua")); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(installed[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "\nlocal root = \"\"\n") {
		t.Fatalf("%s: no line local root = \"\" to write the root into:\n%s", installed[0], text)
	}
	edited := strings.Replace(string(text), "\nlocal root = \"\"\n", "\nlocal root = \""+prefix+"\"\n", 1)
	if err := os.WriteFile(filepath.Join(copied, "gpulaunch", "1.0.lua"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "gpulaunch", "1.0.lua"), text, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ name, tree, module, root string }{
		{"its own tree", filepath.Join(prefix, "share/lmod/modulefiles"), "gpulaunch", prefix},
		{"linked from a site's tree", linked, "gpulaunch/1.0", prefix},
		{"copied with its root written in", copied, "gpulaunch/1.0", prefix},
		{"the tree moved", filepath.Join(moved, "share/lmod/modulefiles"), "gpulaunch/" + strings.TrimSuffix(file, ".lua"), moved},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root == moved {
				if err := os.Rename(prefix, moved); err != nil {
					t.Fatal(err)
				}
			}
			text, err := lmodBash(c.tree, c.module)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			for _, want := range []string{
				"interactive: ", "at load: no completion script sourced\n",
				"which: " + filepath.Join(c.root, "bin", "gpulaunch") + "\n",
				"\ngpulaunch ",
				"manpage: " + filepath.Join(c.root, "share", "man", "man1", "gpulaunch.1") + "\n",
				"GPULAUNCH(1)", "NAME\n       gpulaunch - run N pinned copies",
				"complete [gpulaunch st] with _gpulaunch_load: status\n",
				"complete [gpulaunch completion ] with _gpulaunch: bash zsh fish\n",
				"complete [gpulaunch signal 2 ] with _gpulaunch: INT TERM HUP QUIT USR1 USR2 KILL\n",
				"complete [gpulaunch --mo] with _gpulaunch: --monitor-interval\n",
				"system pages: kept",
				"a later shell: complete [gpulaunch status --j] with _gpulaunch: --json\n",
				"unloaded", "completion: removed",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q in:\n%s", want, text)
				}
			}
			_, status, _ := strings.Cut(text, "complete [gpulaunch status --] with _gpulaunch: ")
			status, _, _ = strings.Cut(status, "\n")
			if flags := strings.Fields(status); !slices.Contains(flags, "--json") || !slices.Contains(flags, "--pid") || slices.Contains(flags, "--monitor-interval") {
				t.Errorf("status --<TAB>: %v, want status's flags (--json, --pid), not run's:\n%s", flags, text)
			}
			for _, v := range []string{"MANPATH", "XDG_DATA_DIRS", "FPATH"} {
				for _, when := range []string{"before", "after"} {
					if !strings.Contains(text, when+" "+v+"=unset\n") {
						t.Errorf("%s the module: want %s unset:\n%s", when, v, text)
					}
				}
			}
		})
	}

	t.Run("copied without its root", func(t *testing.T) {
		text, err := lmodBash(bare, "gpulaunch/1.0")
		if err == nil {
			t.Fatalf("module load of a bare copy succeeded:\n%s", text)
		}
		if !strings.Contains(strings.Join(strings.Fields(text), " "), `local root = "" (docs/install.md)`) || strings.Contains(text, "which: ") {
			t.Errorf("want Lmod's error naming the line to edit, and nothing loaded:\n%s", text)
		}
	})
}

// lmodBash runs lmodScript in an interactive bash (no rc files) with the
// variables the module changes unset and none of Lmod's own.
func lmodBash(tree, module string) (string, error) {
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i", "-c", lmodScript, "bash", tree, module)
	cmd.Env = cleanEnv("PATH", "MANPATH", "XDG_DATA_DIRS", "FPATH", "LOADEDMODULES", "MODULEPATH", "_LMFILES_")
	cmd.Env = append(cmd.Env, "PATH=/usr/local/bin:/usr/bin:/bin", "MANPAGER=cat", "PAGER=cat")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstallLmodStartsNothing: a load of the module is a plain one — it
// starts the processes a load of a module with one setenv starts (Lmod's
// own), not one more (source_sh started a bash per load), counted as
// strace sees the execs — and `module show` prints the module's lines,
// not the completion script.
func TestInstallLmodStartsNothing(t *testing.T) {
	for _, f := range []string{lmodInit, "/usr/share/bash-completion/bash_completion"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v: scripts/slurm-testbed.sh installs lmod and bash-completion", f, err)
		}
	}
	prefix := installTree(t)
	tree := filepath.Join(prefix, "share/lmod/modulefiles")
	show, err := lmodRun(nil, `module use "$1"; module show gpulaunch`, tree)
	if err != nil || !strings.Contains(show, "complete(") {
		t.Fatalf("module show gpulaunch: %v\n%s", err, show)
	}
	for _, script := range []string{"_gpulaunch_flags", "source_sh", "COMP_WORDS"} {
		if strings.Contains(show, script) {
			t.Errorf("module show gpulaunch prints %q, the completion script's:\n%s", script, show)
		}
	}

	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace to count the execs of a load (apt-get install strace)")
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.MkdirAll(filepath.Join(plain, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "plain", "1.0.lua"), []byte(`setenv("PLAIN", "1")`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	execs := func(tree, module string) map[string]int {
		trace := filepath.Join(t.TempDir(), "trace")
		text, err := lmodRun([]string{strace, "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", trace},
			`module use "$1"; module load "$2"`, tree, module)
		if err != nil {
			t.Fatalf("module load %s: %v\n%s", module, err, text)
		}
		data, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, line := range strings.Split(string(data), "\n") {
			if _, after, ok := strings.Cut(line, `execve("`); ok && strings.HasSuffix(line, "= 0") {
				prog, _, _ := strings.Cut(after, `"`)
				got[prog]++
			}
		}
		return got
	}
	if a, b := execs(plain, "plain"), execs(tree, "gpulaunch"); !maps.Equal(a, b) {
		t.Errorf("module load gpulaunch execs %v; a plain module's load execs %v", b, a)
	}
}

// lmodRun runs script after Lmod's init in a bash (no rc files) with
// args as $1…, under the command wrap (none: nil), with none of Lmod's
// variables.
func lmodRun(wrap []string, script string, args ...string) (string, error) {
	argv := append(slices.Clip(wrap), "bash", "--norc", "--noprofile", "-c", "source "+lmodInit+"; "+script, "bash")
	cmd := exec.Command(argv[0], append(argv[1:], args...)...)
	cmd.Env = cleanEnv("PATH", "MANPATH", "XDG_DATA_DIRS", "FPATH", "LOADEDMODULES", "MODULEPATH", "_LMFILES_")
	cmd.Env = append(cmd.Env, "PATH=/usr/local/bin:/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstallLmodLeavesZshsFpath: the module never sets an FPATH that was
// not set (an exported FPATH replaces every later zsh's whole fpath, zsh's
// own functions with it): a zsh started after a load in bash still runs
// compinit; a zsh that loads the module has its fpath with the module's
// directory first and compinit completes gpulaunch there, FPATH still not
// exported, and the unload gives the fpath back as it was; an FPATH a user
// exported gets the directory prepended and exactly its value back at
// unload.
func TestInstallLmodLeavesZshsFpath(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Fatalf("zsh not found: scripts/slurm-testbed.sh installs zsh")
	}
	prefix := installTree(t)
	tree := filepath.Join(prefix, "share/lmod/modulefiles")
	dir := filepath.Join(prefix, "share/zsh/site-functions")
	compdump := filepath.Join(t.TempDir(), "zcompdump")

	text, err := lmodRun(nil, `module use "$1"; module load gpulaunch; echo "FPATH=${FPATH-unset}"
zsh -f -c 'autoload -Uz compinit && compinit -u -d "$1" && print "a later zsh: compinit ran"' zsh "$2" 2>&1`, tree, compdump)
	if err != nil || !strings.Contains(text, "FPATH=unset\n") || !strings.Contains(text, "a later zsh: compinit ran") {
		t.Errorf("bash, FPATH unset: want FPATH still unset after the load and a later zsh's compinit to run: %v\n%s", err, text)
	}

	zshInit := strings.Replace(lmodInit, "/init/bash", "/init/zsh", 1)
	cmd := exec.Command("zsh", "-f", "-c", `source "$1"; autoload -Uz compinit; compinit -u -d "$4"
before=($fpath)
module use "$2"; module load gpulaunch
print "first: $fpath[1]"
[[ "${fpath[2,-1]}" == "$before" ]] && print "load: the fpath kept"
[[ ${(t)FPATH} != *export* ]] && print "load: FPATH not exported"
compinit -u -d "$4"; print "compdef: $_comps[gpulaunch]"
module unload gpulaunch
[[ "$fpath" == "$before" ]] && print "unload: fpath as before"`, "zsh", zshInit, tree, dir, compdump+"2")
	cmd.Env = cleanEnv("PATH", "FPATH", "LOADEDMODULES", "MODULEPATH", "_LMFILES_")
	cmd.Env = append(cmd.Env, "PATH=/usr/local/bin:/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	zsh := string(out)
	for _, want := range []string{"first: " + dir + "\n", "load: the fpath kept", "load: FPATH not exported", "compdef: _gpulaunch\n", "unload: fpath as before"} {
		if err != nil || !strings.Contains(zsh, want) {
			t.Errorf("zsh loading the module: %v: no %q in:\n%s", err, want, zsh)
		}
	}
	text, err = lmodRun(nil, `export FPATH=/opt/site/zsh; module use "$1"; module load gpulaunch; echo "loaded FPATH=$FPATH"; module unload gpulaunch; echo "unloaded FPATH=$FPATH"`, tree)
	if err != nil || !strings.Contains(text, "loaded FPATH="+dir+":/opt/site/zsh\n") || !strings.Contains(text, "unloaded FPATH=/opt/site/zsh\n") {
		t.Errorf("FPATH exported by the user: want the directory prepended, and its value back at unload: %v\n%s", err, text)
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
