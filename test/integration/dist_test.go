//go:build integration

package integration

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// make dist from this checkout, as a release is made: four binary
// tarballs, the source, SHA256SUMS and the recipes. Every binary runs —
// arm64 under Debian's qemu-user-static — and says what it is; each cgo
// binary needs nothing newer than glibc 2.28 and its tarball's README says
// so with the newest version it really needs (read here with debug/elf,
// not with the readelf the build used); a second make dist
// gives the same sums; the source tarball builds offline with the Spack
// recipe's go build arguments, and the easyconfig's sanity check passes
// against its tarball's tree.
func TestDist(t *testing.T) {
	for _, tool := range []string{"aarch64-linux-gnu-gcc", "qemu-aarch64-static"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: scripts/slurm-testbed.sh installs gcc-aarch64-linux-gnu and qemu-user-static", tool)
		}
	}
	repo, _ := filepath.Abs("../..")
	dist := filepath.Join(t.TempDir(), "dist")
	sums := makeDist(t, repo, dist)
	version := distVersion(t, dist)
	commit := strings.TrimSpace(runIn(t, repo, nil, "git", "rev-parse", "HEAD"))

	if out := runIn(t, dist, nil, "sha256sum", "-c", "SHA256SUMS"); strings.Count(out, ": OK") != 5 {
		t.Errorf("sha256sum -c: %s", out)
	}
	for _, tc := range []struct {
		arch   string
		static bool
		qemu   []string // how this machine runs it
	}{
		{"amd64", false, nil},
		{"arm64", false, []string{"qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"}},
		{"amd64", true, nil},
		{"arm64", true, []string{"qemu-aarch64-static"}},
	} {
		name := "gpulaunch-" + version + "-linux-" + tc.arch
		if tc.static {
			name += "-static"
		}
		t.Run(name, func(t *testing.T) {
			root := unpack(t, filepath.Join(dist, name+".tar.gz"))
			tree := filepath.Join(root, name)
			bin := filepath.Join(tree, "bin", "gpulaunch")
			for _, f := range []string{"README.txt", "share/man/man1/gpulaunch.1", "share/bash-completion/completions/gpulaunch",
				"share/zsh/site-functions/_gpulaunch", "share/fish/vendor_completions.d/gpulaunch.fish", "share/doc/gpulaunch/README.md"} {
				if _, err := os.Stat(filepath.Join(tree, f)); err != nil {
					t.Errorf("the tarball has no %s", f)
				}
			}
			floor := glibcFloor(t, bin)
			if tc.static != (floor == "") {
				t.Errorf("glibc floor %q for a static=%v binary", floor, tc.static)
			}
			if floor != "" && newerThanFloor(floor) {
				t.Errorf("the cgo binary needs glibc %s, newer than 2.28: %v", floor, symbolsAboveFloor(t, bin))
			}
			readme, _ := os.ReadFile(filepath.Join(tree, "README.txt"))
			wants := []string{"Needs: nothing: it is a static binary"}
			if floor != "" {
				wants = []string{"Needs: glibc 2.28 or newer", "the newest symbol version the binary needs is GLIBC_" + floor + " "}
			}
			for _, want := range wants {
				if !strings.Contains(string(readme), want) {
					t.Errorf("README.txt does not say %q:\n%s", want, readme)
				}
			}
			run := func(args ...string) string {
				return runIn(t, tree, nil, append(append(append([]string{}, tc.qemu...), bin), args...)...)
			}
			v := run("version")
			nvml := "nvml:     compiled in"
			if tc.static {
				nvml = "nvml:     not compiled in"
			}
			for _, w := range []string{"gpulaunch " + strings.TrimPrefix(version, "v"), "commit:   " + commit, "linux/" + tc.arch, nvml} {
				if !strings.Contains(strings.Replace(v, "gpulaunch v", "gpulaunch ", 1), w) {
					t.Errorf("version does not say %q:\n%s", w, v)
				}
			}
			if out := run("info"); !strings.Contains(out, "CPUs") {
				t.Errorf("info:\n%s", out)
			}
			if out := run("plan", "--simulate", "dgx-h100", "-n", "8"); strings.Count(out, "GPU-") < 8 {
				t.Errorf("plan --simulate dgx-h100 -n 8:\n%s", out)
			}
		})
	}
	t.Run("reproducible", func(t *testing.T) {
		again := makeDist(t, repo, filepath.Join(t.TempDir(), "dist"))
		if again != sums {
			t.Errorf("a second make dist gave other sums:\n%s\nthen:\n%s", sums, again)
		}
	})
	t.Run("the README's install", func(t *testing.T) { readmeInstall(t, repo, dist, version) })
	t.Run("spack recipe", func(t *testing.T) { checkSpackRecipe(t, dist, version) })
	t.Run("easyconfig", func(t *testing.T) { checkEasyconfig(t, dist, version) })
}

func makeDist(t *testing.T, repo, dist string) string {
	t.Helper()
	runIn(t, repo, nil, "make", "--no-print-directory", "dist", "DIST_DIR="+dist)
	b, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// distVersion: the version in the tarballs' names.
func distVersion(t *testing.T, dist string) string {
	m, _ := filepath.Glob(filepath.Join(dist, "gpulaunch-*-src.tar.gz"))
	if len(m) != 1 {
		t.Fatalf("source tarballs: %v", m)
	}
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "gpulaunch-"), "-src.tar.gz")
}

func runIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func unpack(t *testing.T, tarball string) string {
	dir := t.TempDir()
	runIn(t, dir, nil, "tar", "-xzf", tarball)
	return dir
}

// glibcFloor: the newest GLIBC_x.y version among bin's imported symbols,
// "" for a binary that imports none (static).
func glibcFloor(t *testing.T, bin string) string {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.ImportedSymbols()
	var best []int
	floor := ""
	for _, s := range syms {
		v, ok := strings.CutPrefix(s.Version, "GLIBC_")
		if !ok {
			continue
		}
		var parts []int
		for _, p := range strings.Split(v, ".") {
			n, _ := strconv.Atoi(p)
			parts = append(parts, n)
		}
		if best == nil || lessVersion(best, parts) {
			best, floor = parts, v
		}
	}
	return floor
}

func lessVersion(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func sha256Of(t *testing.T, dist, file string) string {
	b, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == file {
			return f[0]
		}
	}
	t.Fatalf("%s is not in SHA256SUMS", file)
	return ""
}

// The Spack recipe make dist wrote names this release with its source
// tarball's sum, turns cgo on, and its go build arguments build the
// source tarball offline (vendored modules, no proxy) into a binary that
// says its version and has NVML; the post-install commands it runs write
// the man page and the completions.
func checkSpackRecipe(t *testing.T, dist, version string) {
	var recipe struct {
		Versions    map[string]string
		CgoEnabled  bool     `json:"cgo_enabled"`
		BuildArgs   []string `json:"build_args"`
		PostInstall []struct {
			Args   []string
			Output string
		} `json:"post_install"`
	}
	out := runIn(t, ".", nil, "/usr/bin/python3", "testdata/packaging_check.py", "spack", filepath.Join(dist, "spack/gpulaunch/package.py"))
	if err := json.Unmarshal([]byte(out), &recipe); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := recipe.Versions[version], sha256Of(t, dist, "gpulaunch-"+version+"-src.tar.gz"); got != want {
		t.Errorf("version(%q, sha256=%q), want %q", version, got, want)
	}
	if !recipe.CgoEnabled {
		t.Error("cgo_enabled is not True: go-nvml needs cgo")
	}
	src := filepath.Join(unpack(t, filepath.Join(dist, "gpulaunch-"+version+"-src.tar.gz")), "gpulaunch-"+version+"-src")
	offline := []string{"CGO_ENABLED=1", "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOTOOLCHAIN=local"}
	runIn(t, src, offline, append([]string{"go", "build"}, recipe.BuildArgs...)...)
	bin := filepath.Join(src, "gpulaunch")
	if v := runIn(t, src, nil, bin, "version"); !strings.HasPrefix(v, "gpulaunch "+version+"\n") || !strings.Contains(v, "nvml:     compiled in") {
		t.Errorf("the Spack build says:\n%s", v)
	}
	if len(recipe.PostInstall) != 4 {
		t.Errorf("post-install commands: %+v", recipe.PostInstall)
	}
	for _, c := range recipe.PostInstall {
		if out := runIn(t, src, nil, append([]string{bin}, c.Args...)...); len(out) < 200 {
			t.Errorf("gpulaunch %v for %s wrote %q", c.Args, c.Output, out)
		}
	}
}

// The easyconfig make dist wrote, read as EasyBuild reads it on x86_64,
// names the amd64 tarball with its sum, and its sanity check — paths and
// commands — passes against that tarball's tree installed as its
// easyblock (Tarball) installs it: the unpacked tree, as is.
func checkEasyconfig(t *testing.T, dist, version string) {
	var ec struct {
		Easyblock        string
		Sources          []string
		Checksums        []map[string]string
		SanityCheckPaths struct {
			Files, Dirs []string
		} `json:"sanity_check_paths"`
		SanityCheckCommands []string `json:"sanity_check_commands"`
	}
	out := runIn(t, ".", nil, "/usr/bin/python3", "testdata/packaging_check.py", "easyconfig", filepath.Join(dist, "easybuild/gpulaunch-"+version+".eb"), "x86_64")
	if err := json.Unmarshal([]byte(out), &ec); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	name := "gpulaunch-" + version + "-linux-amd64.tar.gz"
	if len(ec.Sources) != 1 || ec.Sources[0] != name || len(ec.Checksums) != 1 || ec.Checksums[0][name] != sha256Of(t, dist, name) {
		t.Errorf("sources %v checksums %v, want %s with its sum", ec.Sources, ec.Checksums, name)
	}
	if arm := "gpulaunch-" + version + "-linux-arm64.tar.gz"; ec.Checksums[0][arm] != sha256Of(t, dist, arm) {
		t.Errorf("arm64's checksum %q", ec.Checksums[0][arm])
	}
	install := filepath.Join(unpack(t, filepath.Join(dist, name)), strings.TrimSuffix(name, ".tar.gz"))
	for _, p := range append(append([]string{}, ec.SanityCheckPaths.Files...), ec.SanityCheckPaths.Dirs...) {
		if _, err := os.Stat(filepath.Join(install, p)); err != nil {
			t.Errorf("sanity_check_paths: %v", err)
		}
	}
	path := "PATH=" + filepath.Join(install, "bin") + ":" + os.Getenv("PATH")
	sort.Strings(ec.SanityCheckCommands)
	for _, c := range ec.SanityCheckCommands {
		runIn(t, install, []string{path}, "sh", "-c", c)
	}
	if !regexp.MustCompile(`^(Tarball|BinariesTarball)$`).MatchString(ec.Easyblock) {
		t.Errorf("easyblock %q", ec.Easyblock)
	}
}

// make build and go install both give a binary that says its version and
// commit: make's stamp (git describe), and the toolchain's build
// information for go install. GOFLAGS=-buildvcs=true is what a user's Go
// does by default in a checkout; it is said here because this machine's
// go env turns it off (go env GOFLAGS: -buildvcs=false).
func TestBuildsSayTheirVersion(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): no commit to compare with", err)
	}
	commit := strings.TrimSpace(string(head))
	dirty := exec.Command("git", "-C", repo, "diff", "--quiet", "HEAD").Run() != nil
	describe := strings.TrimSpace(runIn(t, repo, nil, "git", "describe", "--tags", "--always", "--dirty"))
	wantCommit := commit
	if dirty {
		wantCommit += "+dirty"
	}
	dir := t.TempDir()
	runIn(t, repo, nil, "make", "--no-print-directory", "build", "BIN="+filepath.Join(dir, "make", "gpulaunch"))
	// go install in a clone of the checkout, as a user's: Go records no
	// commit in a git worktree (its .git is a file), which this checkout
	// may be; the clone has HEAD, without the checkout's changes.
	clone := filepath.Join(dir, "clone")
	runIn(t, dir, nil, "git", "clone", "-q", repo, clone)
	runIn(t, clone, []string{"GOBIN=" + filepath.Join(dir, "install"), "GOFLAGS=-buildvcs=true"}, "go", "install", "./cmd/gpulaunch")
	for _, tc := range []struct{ how, bin, version, commit string }{
		{"make build", filepath.Join(dir, "make", "gpulaunch"), describe, wantCommit},
		{"go install", filepath.Join(dir, "install", "gpulaunch"), commit[:12], commit},
	} {
		out := runIn(t, dir, nil, tc.bin, "version")
		first, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(first, "gpulaunch ") || !strings.Contains(first, tc.version) || !strings.Contains(out, "commit:   "+tc.commit+"\n") || strings.Contains(out, "unknown") {
			t.Errorf("%s: version says\n%s\nwant %q and commit %s", tc.how, out, tc.version, tc.commit)
		}
	}
}

// The README's install from a release tarball, run as written (VERSION
// replaced) in the directory of the downloads with a fresh HOME: the
// sums, the unpack, PATH, `gpulaunch version`; then its module line
// through Debian's real Lmod.
func readmeInstall(t *testing.T, repo, dist, version string) {
	b, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\\*\\*A release tarball\\*\\*.*?```bash\\n(.*?)```\\n\\nor, instead of `PATH`, its module: `([^`]*)`").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no release tarball install block followed by its module line")
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".local"), 0o755)
	env := []string{"HOME=" + home}
	script := "set -e\n" + strings.ReplaceAll(string(m[1]), "VERSION", version)
	said := func(out string) bool {
		return strings.Contains(strings.Replace(out, "gpulaunch v", "gpulaunch ", 1), "gpulaunch "+version+"\n")
	}
	if out := runIn(t, dist, env, "bash", "-c", script); !said(out) {
		t.Errorf("the README's install said:\n%s", out)
	}
	module := "set -e\nsource /usr/share/lmod/lmod/init/bash\n" + strings.ReplaceAll(string(m[2]), "VERSION", version) + "\ngpulaunch version\n"
	if out := runIn(t, dist, env, "bash", "-c", module); !said(out) {
		t.Errorf("the README's module line said:\n%s", out)
	}
}
