package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// The site's defaults from the environment (pkg/sitedefaults), with
// processes: what the report and the files on disk say. The refusals of
// bad values are the CLI contract's rows (contract_test.go).

// siteRun runs gpulaunch in dir with env (NAME=VALUE words) as its only
// GPULAUNCH_* variables; its exit status and stderr.
func siteRun(t *testing.T, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(contractEnv(), "GLTEST_MAIN=1", "TMPDIR="+t.TempDir()), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	return exitStatus(err), stderr.String()
}

// reportInterval is monitor_interval_seconds of the report file.
func reportInterval(t *testing.T, file string) float64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Monitor float64 `json:"monitor_interval_seconds"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Monitor
}

// The acceptance: GPULAUNCH_MONITOR_INTERVAL=500ms is the run's
// interval as its report records it; the flag wins; empty is no default.
func TestSiteDefaultMonitorInterval(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want float64
	}{
		{"the site's default", []string{"GPULAUNCH_MONITOR_INTERVAL=500ms"}, nil, 0.5},
		{"the flag wins", []string{"GPULAUNCH_MONITOR_INTERVAL=500ms"}, []string{"--monitor-interval", "1s"}, 1},
		{"the flag wins over a bad value", []string{"GPULAUNCH_MONITOR_INTERVAL=often"}, []string{"--monitor-interval", "1s"}, 1},
		{"empty is unset", []string{"GPULAUNCH_MONITOR_INTERVAL="}, nil, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(append([]string{"-n", "1", "-G", "0", "--report", "r.json"}, c.args...), "--", "true")
			if code, stderr := siteRun(t, dir, c.env, args...); code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			if got := reportInterval(t, filepath.Join(dir, "r.json")); got != c.want {
				t.Fatalf("monitor_interval_seconds %v, want %v", got, c.want)
			}
		})
	}
}

// GPULAUNCH_REPORT and GPULAUNCH_METRICS_FILE write where they say, %j
// and %N expanded as in --report and --metrics-file; a flag given writes
// its own file instead, and the site's is not written.
func TestSiteDefaultFiles(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	if err := os.Mkdir(filepath.Join(dir, "77"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLURM_JOB_ID=77", "GPULAUNCH_REPORT=" + dir + "/%j-%N.json", "GPULAUNCH_METRICS_FILE=" + dir + "/%j/%N.prom"}
	if code, stderr := siteRun(t, dir, env, "-n", "1", "-G", "0", "--", "true"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, f := range []string{"77-" + host + ".json", "77/" + host + ".prom"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the site's default file: %v", err)
		}
	}
	mine := t.TempDir()
	if code, stderr := siteRun(t, mine, env, "-n", "1", "-G", "0", "--report", "mine.json", "--metrics-file", "mine.prom", "--", "true"); code != 0 {
		t.Fatalf("with the flags: exit %d:\n%s", code, stderr)
	}
	os.Remove(filepath.Join(dir, "77-"+host+".json"))
	os.Remove(filepath.Join(dir, "77", host+".prom"))
	for _, f := range []string{filepath.Join(mine, "mine.json"), filepath.Join(mine, "mine.prom")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the flag's file: %v", err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "77*", "*")); len(left) > 0 {
		t.Errorf("with the flags given, the site's files were written too: %v", left)
	}
}

// sitedefaults' rule 5: a site default's directory that does not exist
// (the prolog did not make it) is a warning naming the variable; the run
// goes on, its app runs, and nothing is written. Given as the flag, the
// same is refused (the contract's "missing directory" rows).
func TestSiteDefaultMissingDirectoryIsAWarning(t *testing.T) {
	dir := t.TempDir()
	env := []string{"GPULAUNCH_REPORT=" + dir + "/nodir/r.json", "GPULAUNCH_METRICS_FILE=" + dir + "/nodir/%N.prom"}
	code, stderr := siteRun(t, dir, env, "-n", "1", "-G", "0", "--", "touch", "ran")
	if code != 0 {
		t.Fatalf("exit %d, want the run to go on:\n%s", code, stderr)
	}
	for _, v := range []string{"GPULAUNCH_REPORT=", "GPULAUNCH_METRICS_FILE="} {
		if !strings.Contains(stderr, "WARN") || !strings.Contains(stderr, v) || !strings.Contains(stderr, "does not exist") {
			t.Errorf("no warning naming %s:\n%s", v, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the app did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nodir")); err == nil {
		t.Errorf("the missing directory was made")
	}
}

// Rule 5 for the port: a site default's port in use is a warning, and
// the run goes on without a listener.
func TestSiteDefaultPortInUseIsAWarning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	code, stderr := siteRun(t, dir, []string{"GPULAUNCH_METRICS_LISTEN=" + ln.Addr().String()}, "-n", "1", "-G", "0", "--", "touch", "ran")
	if code != 0 || !strings.Contains(stderr, "GPULAUNCH_METRICS_LISTEN="+ln.Addr().String()) || !strings.Contains(stderr, "in use") {
		t.Fatalf("exit %d, want 0 and a warning naming the variable:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the app did not run: %v", err)
	}
}

// Rule 5 for the lock: a second run given the site's metrics file while
// another run writes it goes on without one (two gpulaunch in one job on
// one node, the site's name holding %j and %N only).
func TestSiteDefaultMetricsFileOfAnotherRunIsAWarning(t *testing.T) {
	dir := t.TempDir()
	env := []string{"GPULAUNCH_METRICS_FILE=" + dir + "/m.prom"}
	first := exec.Command(os.Args[0], append([]string{"-n", "1", "-G", "0"}, helperArgs("metrics-app", dir)...)...)
	first.Dir, first.Env = dir, append(append(contractEnv(), "GLTEST_MAIN=1", "TMPDIR="+t.TempDir()), env...)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = os.WriteFile(filepath.Join(dir, "release"), nil, 0o644)
		_ = first.Wait()
	}()
	waitFor(t, "the first run's app", func() bool { _, err := os.Stat(filepath.Join(dir, "cvd.0")); return err == nil })
	code, stderr := siteRun(t, dir, env, "-n", "1", "-G", "0", "--", "touch", "ran")
	if code != 0 || !strings.Contains(stderr, "GPULAUNCH_METRICS_FILE=") || !strings.Contains(stderr, "another gpulaunch") {
		t.Fatalf("exit %d, want 0 and a warning naming the variable:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the second run's app did not run: %v", err)
	}
}

// info lists the site defaults set, text and JSON (its schema), a bad
// value with why a run would refuse it; none set is one line.
func TestInfoListsSiteDefaults(t *testing.T) {
	stdout, stderr, code := runCLI(t, nil, "info", "--simulate", "dgx-h100")
	if code != 0 || !strings.Contains(stdout, "Site defaults: none") {
		t.Fatalf("exit %d, no line of no site defaults:\n%s%s", code, stdout, stderr)
	}
	env := sched.Env{"GPULAUNCH_MONITOR_INTERVAL": "500ms", "GPULAUNCH_REPORT": "r-%t.json"}
	stdout, _, code = runCLI(t, env, "info", "--simulate", "dgx-h100")
	_, section, _ := strings.Cut(stdout, "Site defaults")
	if code != 0 || !strings.Contains(section, "GPULAUNCH_MONITOR_INTERVAL=500ms") || !strings.Contains(section, "--monitor-interval") ||
		!strings.Contains(section, "GPULAUNCH_REPORT=r-%t.json") || !strings.Contains(section, "%t is an instance") {
		t.Fatalf("exit %d, info does not list the site defaults:\n%s", code, stdout)
	}
	stdout, _, code = runCLI(t, env, "info", "--simulate", "dgx-h100", "--json")
	if code != 0 {
		t.Fatalf("info --json exit %d", code)
	}
	validateAgainstSchema(t, "info", []byte(stdout))
	var doc struct {
		Site []struct {
			Variable, Flag, Value, Refused string
		} `json:"site_defaults"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Site) != 2 || doc.Site[0].Variable != "GPULAUNCH_MONITOR_INTERVAL" || doc.Site[0].Value != "500ms" ||
		doc.Site[0].Flag != "monitor-interval" || doc.Site[0].Refused != "" || doc.Site[1].Refused == "" {
		t.Fatalf("site_defaults %+v", doc.Site)
	}
}
