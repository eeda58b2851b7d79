//go:build integration

package integration

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
// against its tarball's tree. The version is the VERSION file's, with the
// commit beside it; the source tarball, without git, builds the same
// version, commit and date; every tarball has LICENSE and the third-party
// notices of the modules its binary links.
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
	if file := versionFile(t, repo); version != strings.TrimPrefix(file, "v") {
		t.Errorf("the tarballs are named %q; the VERSION file says %q", version, file)
	}
	var releaseVersion string // the amd64 cgo binary's `gpulaunch version`: what every other build must say

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
				"share/zsh/site-functions/_gpulaunch", "share/fish/vendor_completions.d/gpulaunch.fish", "share/doc/gpulaunch/README.md",
				"share/doc/gpulaunch/LICENSE", "share/doc/gpulaunch/THIRD_PARTY_NOTICES", "share/doc/gpulaunch/CHANGELOG.md",
				"share/doc/gpulaunch/docs/security.md"} {
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
			if above := versionsNeededAboveFloor(t, bin); len(above) > 0 {
				t.Errorf("the binary needs versions glibc 2.28 does not define: %v", above)
			}
			readme, _ := os.ReadFile(filepath.Join(tree, "README.txt"))
			wants := []string{"Needs: nothing: it is a static binary"}
			if floor != "" {
				wants = []string{"Needs: glibc 2.28 or newer", "the newest symbol version the binary needs is GLIBC_" + floor + " "}
			}
			// the install lines are copied and pasted: -C needs the directory
			wants = append(wants, "mkdir -p $HOME/.local && tar -xzf "+name+".tar.gz -C $HOME/.local")
			for _, want := range append(wants, "sha256sum -c --ignore-missing SHA256SUMS", "not signed", "Apache-2.0") {
				if !strings.Contains(string(readme), want) {
					t.Errorf("README.txt does not say %q:\n%s", want, readme)
				}
			}
			noticesCover(t, bin, filepath.Join(tree, "share/doc/gpulaunch"))
			run := func(args ...string) string {
				return runIn(t, tree, nil, append(append(append([]string{}, tc.qemu...), bin), args...)...)
			}
			v := run("version")
			nvml := "nvml:     compiled in"
			if tc.static {
				nvml = "nvml:     not compiled in"
			}
			if tc.arch == "amd64" && !tc.static {
				releaseVersion = v
			}
			for _, w := range []string{"gpulaunch " + version + "\n", "commit:   " + commit + "\n", "linux/" + tc.arch, nvml} {
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
		// a rebuilder's umask is not the release's: RHEL's 0002 for users
		old := syscall.Umask(0o022)
		syscall.Umask(old)
		other := "0002"
		if old == 0o002 {
			other = "0022"
		}
		dist2 := filepath.Join(t.TempDir(), "dist")
		runIn(t, repo, nil, "sh", "-c", `umask "$1" && exec make --no-print-directory dist DIST_DIR="$2"`, "sh", other, dist2)
		again, err := os.ReadFile(filepath.Join(dist2, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != sums {
			t.Errorf("a second make dist, umask %s (the first's %04o), gave other sums:\n%s\nthen:\n%s", other, old, sums, again)
		}
	})
	t.Run("the README's install", func(t *testing.T) { readmeInstall(t, repo, dist, version) })
	t.Run("the source tarball", func(t *testing.T) { checkSourceTarball(t, dist, version, releaseVersion) })
	t.Run("checksum instructions", func(t *testing.T) { checksumInstructions(t, repo, dist, version) })
	t.Run("spack recipe", func(t *testing.T) { checkSpackRecipe(t, dist, version, releaseVersion) })
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

// versionFile: the release number in the checkout's VERSION file.
func versionFile(t *testing.T, repo string) string {
	b, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil || strings.TrimSpace(string(b)) == "" {
		t.Fatalf("the VERSION file: %v %q", err, b)
	}
	return strings.TrimSpace(string(b))
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

// The Spack recipe make dist wrote names this release (its url and its
// version line with the source tarball's sum), carries the review items
// (licence, maintainers, Linux only), turns cgo on, and its go build
// arguments build the source tarball offline (vendored modules, no proxy)
// into a binary that says what the release binary says — version, commit,
// date: no "-s -w", the Makefile's stamps; the post-install commands it
// runs write the man page and the completions, and it installs the
// tarball's share/doc/gpulaunch (licence and notices included).
func checkSpackRecipe(t *testing.T, dist, version, releaseVersion string) {
	var recipe struct {
		Versions    map[string]string
		URL         string
		Licenses    []string
		Maintainers []string
		Requires    []string
		CgoEnabled  bool     `json:"cgo_enabled"`
		BuildArgs   []string `json:"build_args"`
		PostInstall []struct {
			Args   []string
			Output string
		} `json:"post_install"`
	}
	src := filepath.Join(unpack(t, filepath.Join(dist, "gpulaunch-"+version+"-src.tar.gz")), "gpulaunch-"+version+"-src")
	prefix := t.TempDir()
	out := runIn(t, ".", nil, "/usr/bin/python3", "testdata/packaging_check.py", "spack", filepath.Join(dist, "spack/gpulaunch/package.py"), src, prefix)
	if err := json.Unmarshal([]byte(out), &recipe); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := recipe.Versions[version], sha256Of(t, dist, "gpulaunch-"+version+"-src.tar.gz"); got != want {
		t.Errorf("version(%q, sha256=%q), want %q", version, got, want)
	}
	if want := "/releases/download/v" + version + "/gpulaunch-" + version + "-src.tar.gz"; !strings.HasSuffix(recipe.URL, want) {
		t.Errorf("url %q does not name this release (%s)", recipe.URL, want)
	}
	if strings.Join(recipe.Licenses, ",") != "Apache-2.0" || len(recipe.Maintainers) == 0 || !slices.Contains(recipe.Requires, "platform=linux") {
		t.Errorf("license %v, maintainers %v, requires %v: want Apache-2.0, someone, platform=linux", recipe.Licenses, recipe.Maintainers, recipe.Requires)
	}
	if !recipe.CgoEnabled {
		t.Error("cgo_enabled is not True: go-nvml needs cgo")
	}
	if i := slices.Index(recipe.BuildArgs, "-ldflags"); i < 0 || strings.Contains(recipe.BuildArgs[i+1], "-s") || strings.Contains(recipe.BuildArgs[i+1], "-w") {
		t.Errorf("build args %q: the ldflags must be the Makefile's stamps, without -s -w", recipe.BuildArgs)
	}
	offline := []string{"CGO_ENABLED=1", "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOTOOLCHAIN=local"}
	// the stage inside another git checkout (a home kept in git)
	runIn(t, filepath.Dir(src), nil, "git", "init", "-q")
	runIn(t, filepath.Dir(src), nil, "git", "-c", "user.name=home", "-c", "user.email=home@example.org", "commit", "-q", "--allow-empty", "-m", "a home in git")
	runIn(t, src, offline, append([]string{"go", "build"}, recipe.BuildArgs...)...)
	bin := filepath.Join(src, "gpulaunch")
	if v := runIn(t, src, nil, bin, "version"); v != releaseVersion || !strings.Contains(v, "nvml:     compiled in") {
		t.Errorf("the Spack build says:\n%s\nthe release's amd64 binary:\n%s", v, releaseVersion)
	}
	if m := runIn(t, src, nil, "go", "version", "-m", bin); strings.Contains(m, "vcs.revision") {
		t.Errorf("the Spack build records the enclosing checkout's commit:\n%s", m)
	}
	if len(recipe.PostInstall) != 4 {
		t.Errorf("post-install commands: %+v", recipe.PostInstall)
	}
	for _, c := range recipe.PostInstall {
		if out := runIn(t, src, nil, append([]string{bin}, c.Args...)...); len(out) < 200 {
			t.Errorf("gpulaunch %v for %s wrote %q", c.Args, c.Output, out)
		}
	}
	tarball := filepath.Join(unpack(t, filepath.Join(dist, "gpulaunch-"+version+"-linux-amd64.tar.gz")), "gpulaunch-"+version+"-linux-amd64")
	if got, want := treeOf(t, filepath.Join(prefix, "share/doc/gpulaunch")), treeOf(t, filepath.Join(tarball, "share/doc/gpulaunch")); got != want {
		t.Errorf("the Spack install's share/doc/gpulaunch:\n%s\nthe tarball's:\n%s", got, want)
	}
}

// treeOf: the files under dir, one a line, with their sizes.
func treeOf(t *testing.T, dir string) string {
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&sb, "%s %d\n", rel, fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// The source tarball, unpacked where there is no git, builds with the
// README's command (make build) offline into a binary that says what the
// release binaries say: the VERSION file's version, the release's commit
// and date (the tarball's COMMIT and SOURCE_DATE_EPOCH files). It has
// LICENSE and the notices at its top.
func checkSourceTarball(t *testing.T, dist, version, releaseVersion string) {
	src := filepath.Join(unpack(t, filepath.Join(dist, "gpulaunch-"+version+"-src.tar.gz")), "gpulaunch-"+version+"-src")
	for _, f := range []string{"LICENSE", "THIRD_PARTY_NOTICES", "CHANGELOG.md", "VERSION", "COMMIT", "SOURCE_DATE_EPOCH", "vendor/modules.txt"} {
		if _, err := os.Stat(filepath.Join(src, f)); err != nil {
			t.Errorf("the source tarball has no %s", f)
		}
	}
	// no git: the temp dir may be inside this checkout (make sets TMPDIR
	// to its .tmp), so git is told not to look above the unpacked tree
	nogit := []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(src)}
	probe := exec.Command("git", "-C", src, "rev-parse", "--show-toplevel")
	probe.Env = append(os.Environ(), nogit...)
	if out, err := probe.CombinedOutput(); err == nil {
		t.Fatalf("git finds a checkout at the unpacked source (%s): the test would not show a build without git", out)
	}
	bin := filepath.Join(t.TempDir(), "gpulaunch")
	runIn(t, src, append(nogit, "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOTOOLCHAIN=local"), "make", "--no-print-directory", "build", "BIN="+bin)
	if v := runIn(t, src, nil, bin, "version"); v != releaseVersion {
		t.Errorf("make build in the source tarball says:\n%s\nthe release's amd64 binary:\n%s", v, releaseVersion)
	}
	checkSourceTarballInAnotherCheckout(t, dist, version, releaseVersion)
}

// The source tarball unpacked inside another git checkout (a Spack or
// EasyBuild stage under a home or a site tree kept in git), one owned by
// another user, which git refuses to read ("dubious ownership"): make build
// builds it offline all the same, into a binary that says the release's
// version, commit and date and records no commit of that checkout in its
// build information.
func checkSourceTarballInAnotherCheckout(t *testing.T, dist, version, releaseVersion string) {
	outer := t.TempDir()
	runIn(t, outer, nil, "git", "init", "-q")
	runIn(t, outer, nil, "git", "-c", "user.name=site", "-c", "user.email=site@example.org", "commit", "-q", "--allow-empty", "-m", "the site's tree")
	runIn(t, outer, nil, "chown", "-R", "65534:65534", outer)
	runIn(t, outer, nil, "tar", "-xzf", filepath.Join(dist, "gpulaunch-"+version+"-src.tar.gz"))
	src := filepath.Join(outer, "gpulaunch-"+version+"-src")
	bin := filepath.Join(t.TempDir(), "gpulaunch")
	out, code := runCode(src, "env", "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOTOOLCHAIN=local", "make", "--no-print-directory", "build", "BIN="+bin)
	if code != 0 {
		t.Fatalf("make build of the source tarball inside another user's git checkout: exit %d\n%s", code, out)
	}
	if v := runIn(t, src, nil, bin, "version"); v != releaseVersion {
		t.Errorf("make build in the source tarball inside another checkout says:\n%s\nthe release's amd64 binary:\n%s", v, releaseVersion)
	}
	if m := runIn(t, src, nil, "go", "version", "-m", bin); strings.Contains(m, "vcs.revision") {
		t.Errorf("the binary records the enclosing checkout's commit:\n%s", m)
	}
}

// noticesCover: the notices in doc cover every module `go version -m`
// finds linked into bin (with its version), and doc has the LICENSE.
func noticesCover(t *testing.T, bin, doc string) {
	notices, err := os.ReadFile(filepath.Join(doc, "THIRD_PARTY_NOTICES"))
	if err != nil {
		t.Fatal(err)
	}
	if lic, err := os.ReadFile(filepath.Join(doc, "LICENSE")); err != nil || !strings.Contains(string(lic), "Apache License") {
		t.Errorf("share/doc/gpulaunch/LICENSE is not the Apache License (%v)", err)
	}
	deps := 0
	for _, line := range strings.Split(runIn(t, ".", nil, "go", "version", "-m", bin), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "dep" {
			deps++
			if !strings.Contains(string(notices), "\n"+f[1]+" "+f[2]+" (") {
				t.Errorf("%s links %s %s, which THIRD_PARTY_NOTICES does not cover", filepath.Base(filepath.Dir(filepath.Dir(bin))), f[1], f[2])
			}
		}
	}
	if deps < 3 {
		t.Errorf("go version -m %s lists %d modules", bin, deps)
	}
}

// The checksum instructions agree everywhere a site reads them: README.md
// and docs/install.md (README.txt is checked per tarball) say
// `sha256sum -c --ignore-missing SHA256SUMS`, which passes in a directory
// holding one tarball, and none says the bare `sha256sum -c SHA256SUMS`,
// which fails there.
func checksumInstructions(t *testing.T, repo, dist, version string) {
	for _, f := range []string{"README.md", "docs/install.md"} {
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "sha256sum -c --ignore-missing SHA256SUMS") || strings.Contains(string(b), "sha256sum -c SHA256SUMS") {
			t.Errorf("%s: the checksum line is not `sha256sum -c --ignore-missing SHA256SUMS`", f)
		}
	}
	// a site that downloaded one tarball and SHA256SUMS
	one := t.TempDir()
	name := "gpulaunch-" + version + "-linux-amd64.tar.gz"
	for _, f := range []string{name, "SHA256SUMS"} {
		runIn(t, one, nil, "cp", filepath.Join(dist, f), one)
	}
	if out := runIn(t, one, nil, "sha256sum", "-c", "--ignore-missing", "SHA256SUMS"); strings.TrimSpace(out) != name+": OK" {
		t.Errorf("sha256sum -c --ignore-missing SHA256SUMS beside one tarball: %s", out)
	}
	bare := exec.Command("sha256sum", "-c", "SHA256SUMS")
	bare.Dir = one
	if err := bare.Run(); err == nil {
		t.Error("sha256sum -c SHA256SUMS beside one tarball passed: the instruction's reason is gone")
	}
}

// The easyconfig make dist wrote, read as EasyBuild reads it on x86_64,
// names the amd64 tarball with its sum, says where its licence and docs
// are, and its sanity check — paths and commands — passes against that
// tarball's tree installed as its easyblock (Tarball) installs it: the
// unpacked tree, then its postinstallcmds, which remove the tarball's own
// modulefile (EasyBuild writes the module). Read on ppc64le, it parses
// (no architecture dict that raises) and names a tarball that is not made.
func checkEasyconfig(t *testing.T, dist, version string) {
	var ec struct {
		Easyblock           string
		Sources             []string
		SoftwareLicenseURLs []string `json:"software_license_urls"`
		Docurls             []string
		Postinstallcmds     []string
		Checksums           []map[string]string
		SanityCheckPaths    struct {
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
	if len(ec.SoftwareLicenseURLs) != 1 || !strings.HasSuffix(ec.SoftwareLicenseURLs[0], "/v"+version+"/LICENSE") || len(ec.Docurls) == 0 {
		t.Errorf("software_license_urls %v, docurls %v", ec.SoftwareLicenseURLs, ec.Docurls)
	}
	// a maintainer reads the glibc it needs: the floor, not a symbol version
	if text, _ := os.ReadFile(filepath.Join(dist, "easybuild/gpulaunch-"+version+".eb")); !strings.Contains(string(text), "needs glibc 2.28 or newer") {
		t.Errorf("the easyconfig does not say the glibc it needs (2.28 or newer):\n%s", text)
	}
	install := filepath.Join(unpack(t, filepath.Join(dist, name)), strings.TrimSuffix(name, ".tar.gz"))
	for _, c := range ec.Postinstallcmds {
		runIn(t, install, nil, "sh", "-c", strings.ReplaceAll(c, "%(installdir)s", install))
	}
	if m, _ := filepath.Glob(filepath.Join(install, "share/lmod/modulefiles/*/*")); len(m) != 0 {
		t.Errorf("after postinstallcmds the install still has a modulefile of its own: %v", m)
	}
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
	out = runIn(t, ".", nil, "/usr/bin/python3", "testdata/packaging_check.py", "easyconfig", filepath.Join(dist, "easybuild/gpulaunch-"+version+".eb"), "ppc64le")
	if !strings.Contains(out, "gpulaunch-"+version+"-linux-ppc64le.tar.gz") {
		t.Errorf("read on ppc64le the easyconfig says:\n%s", out)
	}
}

// make build and go install both give a binary that says its version and
// commit: make's stamp (the VERSION file's version, git's commit — not
// git describe, which names no release without a tag), and the toolchain's build
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
		{"make build", filepath.Join(dir, "make", "gpulaunch"), versionFile(t, repo), wantCommit},
		{"go install", filepath.Join(dir, "install", "gpulaunch"), commit[:12], commit},
	} {
		out := runIn(t, dir, nil, tc.bin, "version")
		first, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(first, "gpulaunch ") || !strings.Contains(first, tc.version) || tc.how == "make build" && first != "gpulaunch "+tc.version || !strings.Contains(out, "commit:   "+tc.commit+"\n") || strings.Contains(out, "unknown") {
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
