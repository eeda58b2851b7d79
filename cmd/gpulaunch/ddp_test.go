package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"github.com/gpulaunch/gpulaunch/pkg/sched"
)

// nodeOfStep is what srun --nodes=2 --ntasks-per-node=1 gives the task on
// node `node` (0 or 1).
func nodeOfStep(node string) sched.Env {
	return sched.Env{
		"SLURM_JOB_ID": "777", "SLURM_STEP_ID": "2", "SLURMD_NODENAME": "rack1-n0" + node,
		"SLURM_STEP_NODELIST": "rack1-n[00-01]", "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_STEP_NUM_TASKS": "2",
		"SLURM_PROCID": node, "SLURM_NODEID": node, "SLURM_LOCALID": "0", "PATH": os.Getenv("PATH"),
	}
}

func TestDistributedBadInput(t *testing.T) {
	tasks := filepath.Join(t.TempDir(), "tasks")
	os.WriteFile(tasks, []byte("true\n"), 0o644)
	spread := nodeOfStep("1")
	spread["SLURM_STEP_TASKS_PER_NODE"], spread["SLURM_STEP_NUM_TASKS"], spread["SLURM_PROCID"] = "7,1", "8", "7"
	for _, tc := range []struct {
		name string
		env  sched.Env
		args []string
		want string
	}{
		{"master port without --ddp", nil, []string{"-n", "2", "-G", "0", "--master-port", "29500", "--", "true"}, "--master-port only means something with --ddp"},
		{"port out of range", nil, []string{"-n", "2", "-G", "0", "--ddp", "--master-port", "70000", "--", "true"}, "--master-port 70000: too large: a port is 1..65535"},
		{"unknown --ranks", nil, []string{"-n", "2", "-G", "0", "--ranks", "nodes", "--", "true"}, `--ranks "nodes": use global`},
		{"a task queue over nodes with --ranks local", nodeOfStep("0"), []string{"-n", "2", "-G", "0", "--ranks", "local", "--tasks", tasks}, "every node would run every task"},
		{"a task queue over nodes without a key directory", nodeOfStep("0"), []string{"-n", "2", "-G", "0", "--tasks", tasks}, "HOME is not set: set GPULAUNCH_KEY_DIR"},
		{"srun spread 7+1 is not one gpulaunch per node", spread, []string{"-n", "4", "-G", "0", "-O", "--", "true"}, "runs 7,1 tasks per node"},
		{"mpirun over nodes outside Slurm without --master-addr",
			sched.Env{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1", "PATH": os.Getenv("PATH")},
			[]string{"-n", "2", "-G", "0", "--ddp", "--", "true"}, "give --master-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.env, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: ") {
				t.Errorf("exit %d, stderr %q; want one error line with %q", code, stderr, tc.want)
			}
		})
	}
}

// Rank 0's node checks the derived port before anything starts.
func TestDerivedPortTaken(t *testing.T) {
	env := nodeOfStep("0")
	s, _ := sched.Detect(env)
	g, err := nodegroup.Find(env, s, "h", 2, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := nodegroup.NewRendezvous(env, s, g, "", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(rv.Port))
	if err != nil {
		t.Skipf("port %d is busy already: %v", rv.Port, err)
	}
	defer l.Close()
	marker := filepath.Join(t.TempDir(), "started")
	_, stderr, code := runCLI(t, env, "-n", "2", "-G", "0", "--ddp", "--", "touch", marker)
	if code != exitUsage || !strings.Contains(stderr, "MASTER_PORT "+strconv.Itoa(rv.Port)+" (derived from job 777, step 2) is taken") {
		t.Errorf("exit %d: %q", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("an instance started")
	}
	// node 1 cannot check rank 0's node, and does not refuse
	_, stderr, code = runCLI(t, nodeOfStep("1"), "-n", "2", "-G", "0", "--ddp", "--", "true")
	if code != 0 {
		t.Errorf("node 1: exit %d: %q", code, stderr)
	}
}

// The second node of a 2-node step: its instances are ranks 2 and 3 of 4,
// labelled with the node, with one rendezvous.
func TestSecondNodeOfAStep(t *testing.T) {
	report := filepath.Join(t.TempDir(), "run.json")
	cmd := gpulaunch(t, "-n", "2", "-G", "0", "-l", "--ddp", "--monitor-interval", "0", "--report", report, "--",
		"sh", "-c", `echo RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE MASTER=$MASTER_ADDR:$MASTER_PORT RUN=$TORCHELASTIC_RUN_ID`)
	cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+t.TempDir())
	for k, v := range nodeOfStep("1") {
		if k != "PATH" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	sort.Strings(lines)
	m := regexp.MustCompile(`MASTER=rack1-n00:(\d+) RUN=slurm-777.2$`)
	for i, want := range []string{
		"rack1-n01:0: RANK=2 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 GROUP_WORLD_SIZE=2 ",
		"rack1-n01:1: RANK=3 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 GROUP_WORLD_SIZE=2 ",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) || !m.MatchString(lines[i]) {
			t.Errorf("line %d: %q, want %q… MASTER=rack1-n00:PORT RUN=slurm-777.2", i, lines, want)
		}
	}
	if !strings.Contains(errb.String(), "rack1-n01: node 1 of 2, ranks 2..3 of 4") || !regexp.MustCompile(`(?m)^INSTANCE\s+RANK\s+PID`).MatchString(errb.String()) {
		t.Errorf("summary without the node and ranks:\n%s", errb.String())
	}
	// the report is this node's: its name says so on a shared filesystem
	b, err := os.ReadFile(filepath.Join(filepath.Dir(report), "run.rack1-n01.json"))
	if err != nil {
		t.Fatal(err)
	}
	validateAgainstSchema(t, "report", b)
	for _, want := range []string{`"node": 1`, `"nodes": 2`, `"world_size": 4`, `"master_addr": "rack1-n00"`, `"rank": 3`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %s:\n%s", want, b)
		}
	}
}

// torchRecord is what torch 1.13's @record writes into the error file when
// rank 1's main raises; the other ranks wait to be ended.
const torchRecord = `if [ "$RANK" = 1 ]; then
  printf '%s' '{"message": {"message": "ValueError: bad shard 7", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 6, in main\nValueError: bad shard 7\n", "timestamp": "1795550000"}}}' > "$TORCHELASTIC_ERROR_FILE"
  exit 2
fi
exec sleep 30`

// A failed --ddp group's root cause (G7): the first failed rank's
// exception in the summary and the report, with -o sending the ranks'
// output to files; its error file in a private directory per attempt,
// kept; without an error file, the reason, and nothing left behind; a
// group that succeeds leaves nothing either.
func TestRootCauseOfAFailedGroup(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		restarts     string
		code         int
		summary      []string // lines the summary must hold
		report       string   // what the report's root_cause holds
		kept         string   // how the summary names the kept error file; "": none stays
	}{
		{"a @record main that raised, output in files", torchRecord, "0", 2,
			[]string{"root cause (first failure): instance 1, rank 1, attempt 0: exit 2", "  ValueError: bad shard 7", `  raised at File "train.py", line 6, in main`},
			`"type": "ValueError"`, "error file (kept, with the traceback)"},
		{"the last attempt's", torchRecord, "1", 2,
			[]string{"root cause (first failure): instance 1, rank 1, attempt 1: exit 2", "  ValueError: bad shard 7"},
			`"attempt": 1`, "error file (kept, with the traceback)"},
		{"no error file", `[ "$RANK" = 1 ] && exit 4; exec sleep 30`, "0", 4,
			[]string{"root cause (first failure): instance 1, rank 1, attempt 0: exit 4", "  it wrote no error file: wrap its main in torch.distributed.elastic.multiprocessing.errors.record to see its exception here"},
			`"no_error": "it wrote no error file`, ""},
		// issue 34: a malformed file was deleted, its error in Go's words
		{"an error file that is not torch's: placed, and kept", `[ "$RANK" = 1 ] && { printf '{"message": {"message":\n "x' > "$TORCHELASTIC_ERROR_FILE"; exit 3; }; exec sleep 30`, "0", 3,
			[]string{"root cause (first failure): instance 1, rank 1, attempt 0: exit 3", "error.json:2:4: not torch's error file: the JSON ends early: a closing } or ] (or \") is missing"},
			`error.json:2:4: not torch's error file`, "error file (kept)"},
		{"an error file without a traceback", `[ "$RANK" = 1 ] && { printf '{"message": "RuntimeError: NCCL error", "timestamp": 1795550001}' > "$TORCHELASTIC_ERROR_FILE"; exit 5; }; exec sleep 30`, "0", 5,
			[]string{"  RuntimeError: NCCL error"}, `"type": "RuntimeError"`, "error file (kept; it holds no traceback)"},
		{"a group that succeeds", `test -n "$TORCHELASTIC_ERROR_FILE"`, "0", 0, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, tmp := t.TempDir(), t.TempDir()
			report := filepath.Join(dir, "run.json")
			cmd := gpulaunch(t, "-n", "2", "-G", "0", "--ddp", "--restarts", tc.restarts, "--monitor-interval", "0", "-o", filepath.Join(dir, "rank%t.log"),
				"--report", report, "--", "sh", "-c", tc.script)
			cmd.Env = append(withoutSlurm(cmd.Env), "XDG_RUNTIME_DIR="+t.TempDir(), "TMPDIR="+tmp)
			var errb strings.Builder
			cmd.Stderr = &errb
			if code := exitStatus(cmd.Run()); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, errb.String())
			}
			for _, want := range tc.summary {
				if !strings.Contains(errb.String(), want+"\n") {
					t.Errorf("summary lacks %q:\n%s", want, errb.String())
				}
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			validateAgainstSchema(t, "report", b)
			if tc.report == "" && strings.Contains(string(b), "root_cause") || !strings.Contains(string(b), tc.report) {
				t.Errorf("report's root cause, want %q:\n%s", tc.report, b)
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "gpulaunch-torchelastic-*"))
			if tc.kept == "" {
				if len(left) > 0 {
					t.Errorf("left behind: %q", left)
				}
				if strings.Contains(string(b), "error_file") || strings.Contains(errb.String(), "error file (") {
					t.Errorf("an error file that is gone is named:\n%s\n%s", b, errb.String())
				}
				return
			}
			files, _ := filepath.Glob(filepath.Join(tmp, "gpulaunch-torchelastic-*", "attempt_"+tc.restarts, "1", "error.json"))
			if len(left) != 1 || len(files) != 1 || !strings.Contains(errb.String(), tc.kept+": "+files[0]+"\n") {
				t.Fatalf("kept %q, error file %q:\n%s", left, files, errb.String())
			}
			if fi, err := os.Stat(left[0]); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("the error files' directory: %v, %v; want mode 0700", fi.Mode(), err)
			}
			if want := instance.ErrorFile(left[0], mustAtoi(t, tc.restarts), 1); files[0] != want {
				t.Errorf("rank 1's error file %q, want %q", files[0], want)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// torchrun 2.x's worker contract (issue 36): `-n 2 -G 0 --ddp -- env`
// gives every rank TORCHELASTIC_SIGNALS_TO_HANDLE (torchrun's default)
// and TORCH_NCCL_ASYNC_ERROR_HANDLING=1, and no NCCL_ASYNC_ERROR_HANDLING,
// on which torch 2.11 warns on every rank; the user's own values stand.
func TestDDPWorkerContractOfTorchrun2(t *testing.T) {
	for _, tc := range []struct {
		name string
		user []string          // the user's environment
		want map[string]string // every rank's; "" for a variable that must be absent
	}{
		{"torchrun's defaults", nil, map[string]string{"TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
			"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "NCCL_ASYNC_ERROR_HANDLING": ""}},
		{"the user's values", []string{"TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGUSR1", "NCCL_ASYNC_ERROR_HANDLING=1"},
			map[string]string{"TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGUSR1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "", "NCCL_ASYNC_ERROR_HANDLING": "1"}},
		{"the user's TORCH_ name", []string{"TORCH_NCCL_ASYNC_ERROR_HANDLING=3"},
			map[string]string{"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3", "NCCL_ASYNC_ERROR_HANDLING": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := gpulaunch(t, "-n", "2", "-G", "0", "-l", "--ddp", "--monitor-interval", "0", "--", "env")
			cmd.Env = slices.DeleteFunc(withoutSlurm(cmd.Env), func(kv string) bool {
				k, _, _ := strings.Cut(kv, "=")
				return strings.HasPrefix(k, "TORCHELASTIC_") || strings.HasSuffix(k, "NCCL_ASYNC_ERROR_HANDLING")
			})
			cmd.Env = append(cmd.Env, tc.user...)
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			for rank := range 2 {
				got := map[string][]string{}
				for _, line := range strings.Split(out.String(), "\n") {
					if kv, ok := strings.CutPrefix(line, strconv.Itoa(rank)+": "); ok {
						k, v, _ := strings.Cut(kv, "=")
						got[k] = append(got[k], v)
					}
				}
				if len(got["RANK"]) != 1 {
					t.Fatalf("rank %d printed no environment:\n%s", rank, out.String())
				}
				for k, want := range tc.want {
					if want == "" && len(got[k]) > 0 || want != "" && !slices.Equal(got[k], []string{want}) {
						t.Errorf("rank %d: %s = %q, want %q (\"\": unset)", rank, k, got[k], want)
					}
				}
			}
		})
	}
}

// The signals TORCHELASTIC_SIGNALS_TO_HANDLE names by default, and
// Slurm's checkpoint USR1 the user adds to it, reach every rank of a
// --ddp run; the stop signals stop the run (128 + the signal, README's
// "Signals" rule 5, as torchrun ends its workers), USR1 is passed on and
// nothing else (rule 4): the ranks checkpoint and exit 0, and so does the
// run.
func TestDDPSignalsReachEveryRank(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		user string // the user's TORCHELASTIC_SIGNALS_TO_HANDLE; "": unset
		exit int
	}{
		{syscall.SIGTERM, "", 128 + int(syscall.SIGTERM)},
		{syscall.SIGINT, "", 128 + int(syscall.SIGINT)},
		{syscall.SIGHUP, "", 128 + int(syscall.SIGHUP)},
		{syscall.SIGQUIT, "", 128 + int(syscall.SIGQUIT)},
		{syscall.SIGUSR1, "SIGTERM,SIGUSR1", 0},
	} {
		t.Run(unix.SignalName(tc.sig), func(t *testing.T) {
			mk := filepath.Join(t.TempDir(), "got")
			cmd := gpulaunch(t, append([]string{"-n", "2", "-G", "0", "-O", "-l", "--ddp", "--monitor-interval", "0", "--kill-wait", "5s"}, helperArgs("sig-marker", mk)...)...)
			cmd.Env = slices.DeleteFunc(withoutSlurm(cmd.Env), func(kv string) bool { return strings.HasPrefix(kv, "TORCHELASTIC_SIGNALS_TO_HANDLE=") })
			want := "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
			if tc.user != "" {
				cmd.Env, want = append(cmd.Env, "TORCHELASTIC_SIGNALS_TO_HANDLE="+tc.user), tc.user
			}
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "2 ranks ready", func() bool { return strings.Count(out.String(), "ready") == 2 })
			_ = cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			for rank := range 2 {
				b, err := os.ReadFile(fmt.Sprintf("%s.%d.%s", mk, rank, unix.SignalName(tc.sig)))
				if err != nil {
					t.Errorf("rank %d did not get %s:\n%s", rank, unix.SignalName(tc.sig), out.String())
				} else if string(b) != want {
					t.Errorf("rank %d: TORCHELASTIC_SIGNALS_TO_HANDLE=%q, want %q", rank, b, want)
				}
			}
			if got := exitStatus(err); got != tc.exit {
				t.Errorf("exit %d, want %d\n%s", got, tc.exit, out.String())
			}
		})
	}
}
