package launcher

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/mps"
)

// fateApp is an instance on a GPU shared under MPS, with the server's log
// fabricated: instance 2 (unless $D/once exists, with ONCE set) waits
// until its 3 neighbours have written their pids, writes the sticky list
// as the H200's server does — its own pid first — and "Destroy server
// context" after it, says the CUDA error and exits 1 after its
// neighbours have had time to exit first (never required); each neighbour
// exits 1 with the sticky error once the list names it, and 0 after
// 1.5 s of work otherwise.
const fateApp = `echo $$ > "$D/pid.$I"
stamp() { date '+%Y-%m-%d %H:%M:%S.%3N'; }
if [ "$I" = 2 ] && { [ -z "$ONCE" ] || [ ! -e "$D/once" ]; }; then
  : > "$D/once"
  while [ "$(ls "$D" | grep -c '^pid\.')" -lt 4 ]; do sleep 0.01; done
  { echo "[$(stamp) Server   490] The following client process have a sticky error set:"
    echo "[$(stamp) Server   490] $$"
    for k in 0 1 3; do echo "[$(stamp) Server   490] $(cat "$D/pid.$k")"; done
    echo "[$(stamp) Server   490] Destroy server context on device 0 (NVIDIA H200)"; } >> "$D/log/server.log.new"
  mv "$D/log/server.log.new" "$D/log/server.log"
  sleep 0.3 # its neighbours' exits come first, as they may
  echo "CUDA error: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)" >&2
  exit 1
fi
for n in $(seq 75); do
  if grep -q "] $$\$" "$D/log/server.log" 2>/dev/null; then echo "CUDA error: an illegal memory access was encountered" >&2; exit 1; fi
  sleep 0.02
done
exit 0`

// runFate runs fateApp as 4 instances sharing GPU 0 under MPS.
func runFate(t *testing.T, restarts int, env ...string) (Result, string) {
	t.Helper()
	d := t.TempDir()
	if err := os.Mkdir(filepath.Join(d, "log"), 0o700); err != nil {
		t.Fatal(err)
	}
	var insts []Instance
	for i := range 4 {
		insts = append(insts, Instance{Index: i, Rank: i, Path: "/bin/sh", Args: []string{"sh", "-c", fateApp},
			Env: append(os.Environ(), append([]string{"D=" + d, "I=" + strconv.Itoa(i)}, env...)...)})
	}
	var out, errOut bytes.Buffer
	res, err := Run(Spec{Instances: insts, Stdout: &out, Stderr: &errOut, Policy: Policy{Restarts: restarts, KillWait: 5 * time.Second},
		Fates: []mps.Fate{{GPU: "GPU-0", Index: 0, Slots: []int{0, 1, 2, 3}, LogDir: filepath.Join(d, "log")}}})
	if err != nil {
		t.Fatal(err)
	}
	return res, errOut.String()
}

// 4 instances on one GPU under MPS, instance 2 faulting: the root cause
// names instance 2, its CUDA error and the server's line; the others
// failed with the server, and the exit status is the cause's.
func TestFateNamesTheCause(t *testing.T) {
	res, errOut := runFate(t, 0)
	rc := res.RootCause
	if rc == nil || rc.MPS == nil {
		t.Fatalf("no root cause under MPS; outcomes %+v\n%s", res.Outcomes, errOut)
	}
	if rc.Instance != 2 || rc.Code != 1 || !rc.MPS.Listed || !strings.Contains(rc.MPS.Said, "CUDA_ERROR_ILLEGAL_ADDRESS") ||
		!strings.Contains(rc.MPS.Line, "The following client process have a sticky error set:") || len(rc.MPS.PIDs) != 4 {
		t.Errorf("root cause %+v, MPS %+v", *rc, *rc.MPS)
	}
	with := slices.Clone(rc.MPS.With)
	slices.Sort(with)
	if !slices.Equal(with, []int{0, 1, 3}) {
		t.Errorf("failed with the server: %v, want 0, 1, 3", rc.MPS.With)
	}
	for i, o := range res.Outcomes {
		if o.Code == 0 || (i == 2) == o.WithServer || o.MPSFault == "" {
			t.Errorf("instance %d: %+v", i, o)
		}
	}
	if code := res.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1: %+v", code, res.Outcomes)
	}
}

// With --restarts 1 and the fault once, the 4 instances restart together
// and succeed: each has one restart, the run exits 0.
func TestFateRestartsTheGPUsInstancesTogether(t *testing.T) {
	res, errOut := runFate(t, 1, "ONCE=1")
	for i, o := range res.Outcomes {
		if o.Code != 0 || o.Restarts != 1 || !strings.Contains(o.MPSFault, "restarted with GPU 0's instances") {
			t.Errorf("instance %d: exit %d, %d restart(s), %q; want 0, 1 and the restart with its GPU\n%s", i, o.Code, o.Restarts, o.MPSFault, errOut)
		}
	}
	if res.RootCause != nil || res.ExitCode() != 0 {
		t.Errorf("exit %d, root cause %+v; want 0 and none", res.ExitCode(), res.RootCause)
	}
}
