package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
	"github.com/gpulaunch/gpulaunch/pkg/flagvalue"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// Messages, help and version (issue 22's "half right" list): what was
// accepted and ignored is refused, and every refusal is one line that
// names the flag or value, the reason and the fix.

// oneUsageLine asserts a refusal: exit 2, one `gpulaunch: error:` line
// holding every word, and the marker file the command would have made
// absent (nothing started).
func oneUsageLine(t *testing.T, stderr string, code int, marker string, words ...string) {
	t.Helper()
	if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: ") {
		t.Fatalf("exit %d, stderr %q: want exit 2 and one error line", code, stderr)
	}
	for _, w := range words {
		if !strings.Contains(stderr, w) {
			t.Errorf("%q lacks %q", stderr, w)
		}
	}
	for _, leak := range []string{"Go struct", "Go value", "main.", "strconv.", "invalid syntax"} {
		if strings.Contains(stderr, leak) {
			t.Errorf("%q speaks Go (%q)", stderr, leak)
		}
	}
	if marker != "" {
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s exists: something was started", marker)
		}
	}
}

func TestRefusedNotIgnored(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	app := []string{"--", "touch", marker}
	badType := filepath.Join(dir, "node.json")
	os.WriteFile(badType, []byte("{\"cpu_layout\": {\"sockets\": 1, \"numa_per_socket\": 1, \"cores_per_numa\": 2, \"threads_per_core\": 1},\n \"gpus\": [{\"pci\": \"01:00.0\", \"numa\": \"zero\"}]}"), 0o644)
	badSyntax := filepath.Join(dir, "syntax.json")
	os.WriteFile(badSyntax, []byte("{\"gpus\": [\n  {\"pci\": \"01:00.0\",}\n]}"), 0o644)
	emptyGPUs := filepath.Join(dir, "empty.json")
	os.WriteFile(emptyGPUs, []byte(`{"gpus": []}`), 0o644)
	report := filepath.Join(dir, "report.json")
	os.WriteFile(report, []byte(`[1, 2]`), 0o644)
	os.Mkdir(filepath.Join(dir, "po"), 0o755)
	for _, tc := range []struct {
		name  string
		args  []string
		words []string
	}{
		{"-c 0 in a run", append([]string{"-n", "1", "-G", "0", "-c", "0"}, app...), []string{"-c 0: a slot needs at least 1 CPU", "leave -c out for an even share"}},
		{"-c 0 in a plan", []string{"plan", "--simulate", "dgx-h100", "-n", "1", "-c", "0"}, []string{"-c 0: a slot needs at least 1 CPU"}},
		{"-c 0 in rank mode", append([]string{"exec", "-G", "0", "-c", "0"}, app...), []string{"-c 0: a slot needs at least 1 CPU"}},
		{"-o ''", append([]string{"-n", "1", "-G", "0", "-o", ""}, app...), []string{`-o/--output "": an empty value`, "leave -o/--output out"}},
		{"--report ''", append([]string{"-n", "1", "-G", "0", "--report", ""}, app...), []string{`--report "": an empty value`}},
		{"--simulate ''", []string{"plan", "-n", "1", "--simulate", ""}, []string{`--simulate "": an empty value`}},
		{"--kill-wait ''", append([]string{"-n", "1", "-G", "0", "--kill-wait", ""}, app...), []string{`--kill-wait "": an empty value`, "its default is 10s"}},
		{"--monitor-interval ''", append([]string{"-n", "1", "-G", "0", "--monitor-interval", ""}, app...), []string{`--monitor-interval "": an empty value`}},
		{"--open-mode ''", append([]string{"-n", "1", "-G", "0", "--open-mode", ""}, app...), []string{`--open-mode "": an empty value`}},
		{"--gpu-vendor ''", append([]string{"-n", "1", "-G", "0", "--gpu-vendor", ""}, app...), []string{`--gpu-vendor "": an empty value`}},
		{"--gpu-ids '' keeps its own words", append([]string{"-n", "1", "-G", "0", "--gpu-ids", ""}, app...), []string{`--gpu-ids "": use uuid or index`}},
		{"--socket ''", []string{"status", "--socket", ""}, []string{`--socket "": an empty value`}},
		{"scale --json ''", []string{"scale", "-G", "1", "--json", "", "--", "true"}, []string{`--json "": an empty value`}},
		{"version with an argument", []string{"version", "extra"}, []string{`version takes no arguments (got "extra")`}},
		{"--version with an argument", []string{"--version", "extra"}, []string{`--version takes no arguments`}},
		{"--monitor-interval below the floor", append([]string{"-n", "1", "-G", "0", "--monitor-interval", "1ns"}, app...),
			[]string{"--monitor-interval 1ns: below the floor of 10ms", "or 0 to turn telemetry off"}},
		{"--monitor-interval in seconds below the floor", append([]string{"-n", "1", "-G", "0", "--monitor-interval", "0.001"}, app...),
			[]string{"--monitor-interval 0.001: below the floor of 10ms"}},
		{"a number too large", []string{"plan", "--simulate", "dgx-h100", "-n", "99999999999999999999"},
			[]string{"-n/--ntasks 99999999999999999999: too large: instances on one node are 1..8192"}},
		{"a number too small", []string{"plan", "--simulate", "dgx-h100", "-n", "1", "-c", "-99999999999999999999"},
			[]string{"-c/--cpus-per-task -99999999999999999999: too small"}},
		{"a directory to --simulate", []string{"plan", "-n", "1", "--simulate", dir}, []string{"topology file " + dir + " is a directory"}},
		{"a wrong type in a topology file", []string{"info", "--simulate", badType},
			[]string{"--simulate: topology " + badType + ":2:38: gpus.numa: a string where a whole number belongs"}},
		{"a syntax error in a node file", []string{"info", "--node-file", badSyntax},
			[]string{"--node-file: node file " + badSyntax + ":2:21: invalid character '}'"}},
		{"a node file that lists no GPU", append([]string{"-n", "1", "--node-file", emptyGPUs}, app...),
			[]string{"the node file " + emptyGPUs + ` lists no GPU (its "gpus" list is empty)`, "describe the GPUs in its \"gpus\" list"}},
		{"a report of the wrong shape", []string{"report", report, "--svg", filepath.Join(dir, "x.svg")},
			[]string{report + ":1:1: the document: a list where an object {…} belongs"}},
		{"exec -n", append([]string{"exec", "-n", "2"}, app...),
			[]string{"exec -n 2: rank mode takes no -n", "srun -n 2 gpulaunch exec", "`gpulaunch run -n 2 -- COMMAND`"}},
		{"exec --ntasks=", append([]string{"exec", "--ntasks=3"}, app...), []string{"exec --ntasks=3: rank mode takes no -n"}},
		{"exec -G beyond the node", append([]string{"exec", "-G", "5"}, app...),
			[]string{"-G 5 for each of the 1 rank(s) on this node needs 5 GPU(s), the allocation has 0", "give -G 0 to bind each rank's CPUs only"}},
		{"a mistyped command", []string{"stauts"}, []string{`unknown command "stauts": did you mean ` + "`gpulaunch status`?"}},
		{"help for a mistyped command", []string{"help", "plna"}, []string{`help "plna": no such command: did you mean ` + "`gpulaunch help plan`?"}},
		{"--pid 0", []string{"status", "--pid", "0"}, []string{"--pid 0: give the pid of a running gpulaunch"}},
		{"a mistyped flag", []string{"plan", "-n", "2", "--gpus", "3"}, []string{"unknown flag: --gpus: did you mean --gpus-per-task?"}},
		{"a misspelt flag", append([]string{"-n", "1", "--simulte", "dgx-h100"}, app...), []string{"unknown flag: --simulte: did you mean --simulate?"}},
		{"a hexadecimal count", []string{"plan", "--simulate", "dgx-h100", "-n", "0x4"}, []string{`-n/--ntasks: invalid argument "0x4": not a whole number`}},
		{"a duration beyond time.Duration, in seconds", append([]string{"-n", "1", "-G", "0", "--kill-wait", "1e11"}, app...),
			[]string{`--kill-wait "1e11": too long: the longest is 9223372037 seconds`}},
		{"a duration beyond time.Duration, in hours", append([]string{"-n", "1", "-G", "0", "--timeout", "9999999999h"}, app...),
			[]string{`--timeout "9999999999h": too long: the longest is 2562047h`}},
		{"an infinite duration", append([]string{"-n", "1", "-G", "0", "--timeout", "inf"}, app...), []string{`--timeout "inf": too long`}},
		{"NaN seconds", append([]string{"-n", "1", "-G", "0", "--wait", "NaN"}, app...), []string{`--wait "NaN": not a duration`}},
		{"NaN MiB", append([]string{"-n", "1", "-G", "0", "--mem-per-task", "nan"}, app...), []string{`--mem-per-task "nan": not a memory size`}},
		{"a memory size past 4 EiB says its bound", append([]string{"-n", "1", "-G", "0", "--mem-per-task", "8796093022207"}, app...), []string{`--mem-per-task "8796093022207": too large: a memory size is at most 4194304T`}},
		{"--share-gpus with -G 0", []string{"plan", "--simulate", "dgx-h100", "-n", "2", "-G", "0", "--share-gpus"}, []string{"--share-gpus with -G 0: slots without a GPU have none to share"}},
		{"a number beyond float64", []string{"scale", "-G", "1,2", "--efficiency", "1e999", "--", "true"}, []string{`--efficiency 1e999: out of range: a number here is between`}},
		{"NaN for a number flag", []string{"scale", "-G", "1,2", "--efficiency", "NaN", "--", "true"}, []string{`--efficiency: invalid argument "NaN": not a number`}},
		{"top --interval 0", []string{"top", "--interval", "0"}, []string{"--interval 0: below the floor of 10ms"}},
		{"--open-mode without -o or -e", append([]string{"-n", "1", "-G", "0", "--open-mode", "append"}, app...),
			[]string{"--open-mode append is how the -o/-e files are opened, and there are none: give -o FILE"}},
		// issue 34's half-right rows
		{"a dry run checks -o as the run does", append([]string{"-n", "1", "-G", "0", "--dry-run", "-o", dir + "/nodir/x.log"}, app...),
			[]string{"nodir does not exist (create it: mkdir -p " + dir + "/nodir)"}},
		{"a dry run checks --metrics-file as the run does", append([]string{"-n", "1", "-G", "0", "--dry-run", "--metrics-file", dir + "/prom/x.prom"}, app...),
			[]string{"--metrics-file " + dir + "/prom/x.prom: the directory " + dir + "/prom does not exist"}},
		{"--report's missing directory says how to make it", append([]string{"-n", "1", "-G", "0", "--report", dir + "/nodir/r.json"}, app...),
			[]string{"(create it: mkdir -p " + dir + "/nodir)"}},
		{"--report with %t, one file per node", append([]string{"-n", "2", "-G", "0", "--report", dir + "/r-%t.json"}, app...),
			[]string{"%t is an instance, but this file is one per node"}},
		{"-o through a directory an instance's path walks and that is missing", append([]string{"-n", "2", "-G", "0", "-o", dir + "/po/%t/../%t.log"}, app...),
			[]string{"instance 0 writes " + dir + "/po/0/../0.log, but the directory " + dir + "/po/0/.. does not exist"}},
		{"a command word after run's flags", []string{"-v", "plan", "-n", "2"},
			[]string{"plan: no program of that name in PATH, and plan is a gpulaunch command, whose word comes first", "`gpulaunch plan -v -n 2`"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, tc.args...)
			oneUsageLine(t, stderr, code, marker, tc.words...)
			if strings.HasPrefix(tc.name, "exec -G") && (strings.Contains(stderr, "-n 1") || strings.Contains(stderr, "instances")) {
				t.Errorf("rank mode has no -n and no instances: %q", stderr)
			}
		})
	}
}

// Every count from the command line is bounded before anything is
// allocated by it (issue 34: -n 99999999999 died out of memory in the
// plan, with a 130-line goroutine dump). Every whole-number flag of every
// command has its range (countRanges), and 2^31, 2^63-1, 10^11 and a
// number past int64 get one line naming the flag and that range — or,
// where the range takes them (--tail, as tail -n), are read as given.
func TestEveryCountIsBounded(t *testing.T) {
	values := []string{"2147483648", "9223372036854775807", "99999999999", "99999999999999999999"}
	for cmd, fs := range commandFlagSets() {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "int" {
				return
			}
			r, ok := countRangeOf(f.Name)
			if !ok {
				t.Errorf("%s --%s: a whole-number flag without a range in countRanges", cmd, f.Name)
				return
			}
			for _, v := range values {
				n, err := strconv.ParseInt(v, 10, 64)
				if err == nil && n <= r.Hi {
					dec := flagvalue.Decimal{Value: f.Value, Hi: r.Hi}
					if err := dec.Set(v); err != nil {
						t.Errorf("%s --%s %s: %v; its range %s takes it", cmd, f.Name, v, err, r)
					}
					continue
				}
				_, stderr, code := runCLI(t, nil, cmd, "--"+f.Name, v)
				oneUsageLine(t, stderr, code, "", "--"+f.Name+" "+v+": too large: "+r.String())
			}
		})
	}
}

// The rows, each a real gpulaunch process: one error line naming
// -n and its range, exit 2, where the runtime ran out of memory.
func TestHugeCountsAreRefusedNotAllocated(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "grid.csv")
	os.WriteFile(lines, []byte("a,b\n"), 0o644)
	for _, args := range [][]string{
		{"-q", "-n", "99999999999", "--", "true"},
		{"plan", "-n", "99999999999"},
		{"plan", "-n", "99999999999", "-G", "0"},
		{"--each-line", lines, "-n", "99999999999", "--", "echo", "{}"},
		{"-n", "2147483648", "--", "true"},
		{"plan", "--simulate", "dgx-h100", "-n", "2", "-G", "4611686018427387904"},
		{"plan", "--simulate", "dgx-h100", "-n", "2", "-c", "4611686018427387904", "-G", "0"},
		{"scale", "-n", "1,99999999999", "--", "true"},
	} {
		cmd := gpulaunch(t, args...)
		out, err := cmd.CombinedOutput()
		if code := exitStatus(err); code != exitUsage || strings.Count(string(out), "\n") != 1 || !strings.HasPrefix(string(out), "gpulaunch: error: ") ||
			!strings.Contains(string(out), "too large") {
			t.Errorf("gpulaunch %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// A word that is no command gets no suggestion.
func TestClosestCommand(t *testing.T) {
	for word, want := range map[string]string{"stauts": "status", "sttaus": "status", "plna": "plan", "exce": "exec", "rnu": "run",
		"inof": "info", "logz": "logs", "ls": "", "cat": "", "python": "", "./app": "", "tpo": "top"} {
		if got := clidoc.Closest(word, commands); got != want {
			t.Errorf("clidoc.Closest(%q, commands) = %q, want %q", word, got, want)
		}
	}
	_, stderr, _ := runCLI(t, nil, "python")
	if strings.Contains(stderr, "did you mean") || !strings.Contains(stderr, "`gpulaunch -n N -- python`") {
		t.Errorf("a program's name: %q", stderr)
	}
}

// `help COMMAND` is COMMAND's help, as `gpulaunch COMMAND --help`.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"run", "exec", "info", "plan", "status", "top", "logs", "signal", "scale", "report", "version"} {
		want, _, _ := runCLI(t, nil, cmd, "--help")
		got, stderr, code := runCLI(t, nil, "help", cmd)
		if code != 0 || got != want || stderr != "" || strings.Contains(got, "Commands:") {
			t.Errorf("help %s: exit %d, %d bytes, stderr %q; want %s --help's %d bytes", cmd, code, len(got), stderr, cmd, len(want))
		}
	}
}

// Every flag the main help shows for a command is one of its flags, and
// no flag's help states its default twice.
func TestHelpTellsTheFlagsThereAre(t *testing.T) {
	top, _, _ := runCLI(t, nil, "--help")
	top = top[strings.Index(top, "Usage:"):strings.Index(top, "Commands:")]
	usage := regexp.MustCompile(`(?m)^  gpulaunch (?:\[run\]|([\w|]+)) (.*)$`)
	flag := regexp.MustCompile(`--[a-z-]+`)
	checked := 0
	for _, m := range usage.FindAllStringSubmatch(top, -1) {
		if m[1] == "" {
			m[1] = "run"
		}
		for _, cmd := range strings.Split(m[1], "|") { // status|top: each
			help, _, _ := runCLI(t, nil, cmd, "--help")
			for _, f := range flag.FindAllString(m[2], -1) {
				checked++
				if !strings.Contains(help, f+" ") {
					t.Errorf("the main help shows `gpulaunch %s … %s`, which `gpulaunch %s --help` does not list", m[1], f, cmd)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d flags found in the main help's usage lines", checked)
	}
	for _, cmd := range []string{"run", "exec", "info", "plan", "status", "top", "logs", "signal", "scale", "report"} {
		help, _, _ := runCLI(t, nil, cmd, "--help")
		for _, line := range strings.Split(help, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s --help states a default twice: %q", cmd, line)
			}
		}
	}
}

// Without -ldflags, the version is what the toolchain recorded.
func TestBuildVersion(t *testing.T) {
	// this test binary has build information: not "dev" unless it has none
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		if out, _, _ := runCLI(t, nil, "version"); strings.Contains(out, "dev") {
			t.Errorf("version: %q", out)
		}
	}
}

// --socket says what is at the path when it is no socket; a socket left
// by a gpulaunch that has gone is still "ended".
func TestControlSocketPathChecked(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	os.WriteFile(file, []byte("x"), 0o600)
	for _, tc := range []struct {
		path  string
		words []string
	}{
		{filepath.Join(dir, "missing.sock"), []string{"--socket " + filepath.Join(dir, "missing.sock") + ": no such file", "testhost.PID.sock in", "`gpulaunch status` without --socket"}},
		{file, []string{"--socket " + file + " is a regular file, not a socket"}},
		{dir, []string{"--socket " + dir + " is a directory, not a socket"}},
	} {
		for _, cmd := range [][]string{{"status"}, {"logs", "0"}, {"signal", "all", "TERM"}} {
			args := append([]string{cmd[0], "--socket", tc.path}, cmd[1:]...)
			_, stderr, code := runCLI(t, nil, args...)
			oneUsageLine(t, stderr, code, "", tc.words...)
		}
	}
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	_, stderr, code := runCLI(t, nil, "status", "--socket", stale)
	if code != exitError || !strings.Contains(stderr, "nothing answers: that gpulaunch has ended") {
		t.Errorf("a stale socket: exit %d, %q", code, stderr)
	}
}

// An explicit --master-port is checked on rank 0's node as the derived one
// is; another node cannot tell, and does not refuse.
func TestExplicitMasterPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	marker := filepath.Join(t.TempDir(), "started")
	_, stderr, code := runCLI(t, sched.Env{"PATH": os.Getenv("PATH")}, "-n", "2", "-G", "0", "--ddp", "--master-port", port, "--", "touch", marker)
	oneUsageLine(t, stderr, code, marker, "--master-port "+port+" is taken on this node, where rank 0 runs", "give another --master-port")
	_, stderr, code = runCLI(t, nodeOfStep("1"), "-n", "2", "-G", "0", "--ddp", "--master-port", port, "--", "true")
	if code != 0 {
		t.Errorf("node 1: exit %d: %q", code, stderr)
	}
}

// `logs -f --tail 0` follows what comes next, as `tail -f -n 0`: none of
// the recent output; `--tail 0` without -f, which would show nothing, is
// refused.
func TestLogsTailZero(t *testing.T) {
	r := startLiveRun(t, nil, append([]string{"-n", "1", "-G", "0", "--monitor-interval", "0"}, helperArgs("control-app")...)...)
	r.waitRunning(t)
	waitFor(t, "the ready line in the log", func() bool {
		out, _, _ := r.client(t, "logs", "--pid", r.pid(), "0")
		return strings.Contains(out, "instance 0 ready")
	})
	out, stderr, code := r.client(t, "logs", "--tail", "0", "--pid", r.pid(), "0")
	oneUsageLine(t, stderr, code, "", "--tail 0 shows none of the recent output", "give -f")
	if out != "" {
		t.Errorf("stdout %q", out)
	}
	follow, lines := r.follow(t, "logs", "-f", "--tail", "0", "--pid", r.pid(), "0")
	t.Cleanup(func() { _ = follow.Process.Kill() })
	// The follower may connect after a signal was sent: USR1 again until
	// its line comes through (each USR1 writes one), never assuming the
	// order of the connect and the signal.
	var seen []string
	for got := false; !got; {
		if _, _, code := r.client(t, "signal", "--pid", r.pid(), "0", "USR1"); code != 0 {
			t.Fatalf("signal: exit %d", code)
		}
		for wait := time.After(time.Second); !got; {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("logs -f ended: %q", seen)
				}
				seen = append(seen, l)
				if l == "instance 0 ready" {
					t.Errorf("--tail 0 showed the recent output: %q", seen)
				}
				got = l == "instance 0 got SIGUSR1"
			case <-wait:
				wait = nil
			}
			if wait == nil {
				break
			}
		}
	}
	r.client(t, "signal", "--pid", r.pid(), "all", "TERM")
	for range lines {
	}
	follow.Wait()
	if code := r.wait(t); code != 0 {
		t.Errorf("gpulaunch exit %d", code)
	}
}

// Counts are read in base 10, as srun reads them: 010 is ten, 08 eight
// (pflag alone reads 010 as octal 8 and refuses 08).
func TestCountsAreDecimal(t *testing.T) {
	for n, want := range map[string]int{"010": 10, "08": 8, "+3": 3} {
		stdout, stderr, code := runCLI(t, nil, "plan", "--simulate", "dgx-h100", "-G", "0", "-n", n, "--json")
		var p planOut
		if code != 0 || !jsonInto(stdout, &p) || len(p.Slots) != want {
			t.Errorf("-n %s: exit %d, %d slots, stderr %q; want %d", n, code, len(p.Slots), stderr, want)
		}
	}
}

// A half-set Slurm environment: the error names the variables seen and
// missing, and does not advise the --node-file already in use.
func TestHalfSetSlurmGivesItsEvidence(t *testing.T) {
	node := nodeFile(t, 2)
	marker := filepath.Join(t.TempDir(), "started")
	for _, tc := range []struct {
		env   sched.Env
		words []string
	}{
		{sched.Env{"SLURM_JOB_ID": "5"}, []string{"SLURM_JOB_ID=5, SLURMD_NODENAME unset: an salloc shell", "outside any job, unset SLURM_JOB_ID"}},
		{sched.Env{"SLURM_JOB_ID": "5", "SLURMD_NODENAME": "n1", "SLURM_GPUS_ON_NODE": "2", "SLURM_JOB_GPUS": "junk"},
			[]string{"SLURM_JOB_GPUS=junk (not a list of GPU ids)", "set CUDA_VISIBLE_DEVICES to the job's GPUs"}},
	} {
		tc.env["PATH"] = os.Getenv("PATH")
		_, stderr, code := runCLI(t, tc.env, "-n", "1", "--node-file", node, "--", "touch", marker)
		oneUsageLine(t, stderr, code, marker, tc.words...)
		if strings.Contains(stderr, "--node-file FILE") {
			t.Errorf("advises the --node-file in use: %q", stderr)
		}
	}
}

// A directory named without a slash is still a directory, not an unknown
// simulated node.
func TestSimulateADirectoryByName(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "nodes"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	_, stderr, code := runCLI(t, nil, "plan", "-n", "1", "--simulate", "nodes")
	oneUsageLine(t, stderr, code, "", "topology file nodes is a directory: give the JSON file in it")
	if strings.Contains(stderr, "no simulated node") {
		t.Errorf("%q", stderr)
	}
}
