//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// GNU parallel reads gpulaunch's joblog as its own: after a gpulaunch
// queue with failures, parallel --resume-failed reruns exactly the
// failed tasks, and parallel --resume then runs nothing.
func TestJoblogIsGNUParallels(t *testing.T) {
	if _, err := exec.LookPath("parallel"); err != nil {
		t.Fatal("GNU parallel is not installed: scripts/slurm-testbed.sh up installs it")
	}
	dir := t.TempDir()
	var tasks strings.Builder
	for i := 1; i <= 12; i++ {
		// tasks 4 and 9 fail; every run of a task leaves a line in ran.N
		code := 0
		if i == 4 || i == 9 {
			code = 3
		}
		tasks.WriteString("sh -c 'echo x >>" + dir + "/ran." + strconv.Itoa(i) + "; exit " + strconv.Itoa(code) + "'\n")
	}
	file, joblog := filepath.Join(dir, "tasks"), filepath.Join(dir, "joblog")
	if err := os.WriteFile(file, []byte(tasks.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gl := exec.Command("gpulaunch", "-n", "3", "-G", "0", "-O", "--tasks", file, "--joblog", joblog)
	if out, err := gl.CombinedOutput(); exitCode(err) != 2 {
		t.Fatalf("gpulaunch: want exit 2 (two failed tasks), got %v\n%s", err, out)
	}
	parallel := func(flag string) {
		cmd := exec.Command("parallel", flag, "--joblog", joblog, "-j", "2")
		cmd.Stdin = strings.NewReader(tasks.String())
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "Format of") {
			t.Fatalf("parallel %s does not read the joblog: %s", flag, out)
		}
		t.Logf("parallel %s: %v %s", flag, err, out)
	}
	parallel("--resume-failed")
	parallel("--resume")
	for i := 1; i <= 12; i++ {
		b, _ := os.ReadFile(filepath.Join(dir, "ran."+strconv.Itoa(i)))
		want := 1
		if i == 4 || i == 9 {
			want = 2 // gpulaunch, then parallel --resume-failed
		}
		if got := strings.Count(string(b), "x"); got != want {
			t.Errorf("task %d ran %d times, want %d", i, got, want)
		}
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
