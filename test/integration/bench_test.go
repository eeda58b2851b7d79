//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make bench` right after `scripts/slurm-testbed.sh up` on a fresh
// machine: the Slurm section makes the work directory it needs instead of
// failing on it (a fresh testbed root holds only the node file).
func TestBenchSlurmOnAFreshTestbed(t *testing.T) {
	root := filepath.Join(workRoot, "fresh-root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	node, err := os.ReadFile(filepath.Join(testbedRoot, "node.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "node.json"), node, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("../../scripts/bench-slurm.sh")
	cmd.Env = append(os.Environ(), "TESTBED_ROOT="+root, "BENCH_RUNS=1", "GL="+filepath.Join(binDir, "gpulaunch"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "speed-up") {
		t.Fatalf("bench-slurm.sh on a fresh testbed root: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
}
