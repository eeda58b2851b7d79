//go:build integration

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The same queue through gpulaunch and through Debian's GNU parallel: 20
// tasks, 5 of them failing (task 19 killed by SIGABRT), task 5 failing on
// its first try only, one slot so that the order is the same for both,
// under each --halt form and --retries. The exit statuses and the joblog
// rows (which tasks, Exitval, Signal) must agree, but for the documented
// differences (docs/tasks.md, "Coming from GNU parallel"):
//   - a task killed by a signal: Exitval 128+signal in gpulaunch, as
//     parallel since 20221222 (bug #63263); Debian 12's 20221122 writes 0.
func TestQueueAgreesWithGNUParallel(t *testing.T) {
	if _, err := exec.LookPath("parallel"); err != nil {
		t.Fatal("GNU parallel is not installed: scripts/slurm-testbed.sh up installs it")
	}
	out, _ := exec.Command("parallel", "--version").Output()
	version, _, _ := strings.Cut(string(out), "\n")
	t.Logf("comparing with %s", version)
	for _, flags := range [][]string{
		nil,
		{"--halt", "soon,fail=3"},
		{"--halt", "now,fail=1"},
		{"--halt", "now,fail=25%"},
		{"--halt", "soon,fail=70%"},
		{"--halt", "now,success=3"},
		{"--halt", "soon,done=10%"},
		{"--halt", "2"},
		{"--retries", "2"},
		{"--retries", "2", "--halt", "now,fail=2"},
	} {
		t.Run(strings.Join(append([]string{"flags"}, flags...), " "), func(t *testing.T) {
			glCode, glLog := runQueue(t, "gpulaunch", flags)
			pCode, pLog := runQueue(t, "parallel", flags)
			if glCode != pCode {
				t.Errorf("exit status: gpulaunch %d, parallel %d", glCode, pCode)
			}
			for seq := 1; seq <= 20; seq++ {
				g, p := glLog[seq], pLog[seq]
				if seq == 19 && p == "0/6" && g == "134/6" {
					continue // documented: parallel ≥ 20221222 writes 134 too
				}
				if g != p {
					t.Errorf("task %d: gpulaunch's joblog row %q, parallel's %q (Exitval/Signal; \"\" is no row)", seq, g, p)
				}
			}
		})
	}
}

// runQueue runs the queue with one tool in a directory of its own: its
// exit status, and its joblog as task → "Exitval/Signal".
func runQueue(t *testing.T, tool string, flags []string) (int, map[int]string) {
	t.Helper()
	dir := t.TempDir()
	var tasks strings.Builder
	for i := 1; i <= 20; i++ {
		switch {
		case i == 5:
			fmt.Fprintf(&tasks, "sh -c 'if [ -e %[1]s/flaky ]; then exit 0; fi; touch %[1]s/flaky; exit 1'\n", dir)
		case i == 19:
			tasks.WriteString("sh -c 'kill -ABRT $$'\n")
		case i%4 == 3:
			fmt.Fprintf(&tasks, "sh -c 'exit %d'\n", i)
		default:
			tasks.WriteString("true\n")
		}
	}
	file, joblog := filepath.Join(dir, "tasks"), filepath.Join(dir, "joblog")
	if err := os.WriteFile(file, []byte(tasks.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if tool == "gpulaunch" {
		cmd = exec.Command("gpulaunch", append([]string{"-n", "1", "-G", "0", "--tasks", file, "--joblog", joblog}, flags...)...)
	} else {
		cmd = exec.Command("parallel", append([]string{"-j", "1", "--joblog", joblog}, flags...)...)
		cmd.Stdin = strings.NewReader(tasks.String())
	}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("%s %v: exit %d\n%s", tool, flags, exitCode(err), out)
	rows := map[int]string{}
	f, ferr := os.Open(joblog)
	if ferr != nil {
		t.Fatalf("%s wrote no joblog: %v", tool, ferr)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		var seq int
		if len(c) < 9 || c[0] == "Seq" {
			continue
		}
		fmt.Sscan(c[0], &seq)
		if _, dup := rows[seq]; dup {
			t.Errorf("%s recorded task %d twice", tool, seq)
		}
		rows[seq] = c[6] + "/" + c[7]
	}
	return exitCode(err), rows
}
