package mps

import (
	"strings"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
)

// K1–K3: the MPS flags' settings.
func TestSettingsCheck(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(n string) bool { return strings.Contains(" "+strings.Join(names, " ")+" ", " "+n+" ") }
	}
	for _, tc := range []struct {
		name  string
		s     Settings
		given func(string) bool
		want  string // "": accepted
	}{
		{"K1: --mps-threads without --mps", Settings{Threads: 50}, given("mps-threads"), "--mps-threads only means something with --mps: add --mps (NVIDIA MPS), or drop --mps-threads"},
		{"K1: --mps-mem-limit without --mps", Settings{MemLimit: "1G"}, given("mps-mem-limit"), "--mps-mem-limit only means something with --mps"},
		{"K2: --mps-threads 0 given", Settings{On: true}, given("mps", "mps-threads"), "--mps-threads 0: the active thread percentage of each instance is 1..100"},
		{"K2: --mps-threads 100", Settings{On: true, Threads: 100}, given("mps", "mps-threads"), ""},
		{"K3: --mps-mem-limit 1.5G", Settings{On: true, MemLimit: "1.5G"}, given("mps", "mps-mem-limit"), "--mps-mem-limit \"1.5G\""},
		{"K3: --mps-mem-limit 512M", Settings{On: true, MemLimit: "512M"}, given("mps", "mps-mem-limit"), ""},
		{"--mps alone", Settings{On: true}, given("mps"), ""},
	} {
		err := tc.s.Check(tc.given)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// R2: GPULAUNCH_MPS_WAIT is a positive duration; unset, DefaultWait.
func TestWaitOf(t *testing.T) {
	for _, tc := range []struct {
		name, v string
		want    time.Duration
		bad     bool
	}{
		{"R2: unset is the default", "", DefaultWait, false},
		{"R2: a duration", "300s", 300 * time.Second, false},
		{"R2: not a duration", "300", 0, true},
		{"R2: zero is no wait", "0s", 0, true},
		{"R2: negative", "-5s", 0, true},
	} {
		got, err := WaitOf(tc.v)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s: WaitOf(%q) = %v, %v", tc.name, tc.v, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "GPULAUNCH_MPS_WAIT="+tc.v+": how long an MPS daemon has to come up is a duration, e.g. 300s") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// T1–T3: a client's share of its GPU.
func TestClientThreads(t *testing.T) {
	for _, tc := range []struct {
		name           string
		given, n, want int
		jobsMPS        bool
	}{
		{"T1: --mps-threads under the run's daemons", 25, 8, 25, false},
		{"T1: --mps-threads under the job's MPS", 25, 8, 25, true},
		{"T2: the job's MPS keeps its own shares", 0, 8, 0, true},
		{"T3: an even share, rounded up", 0, 8, 13, false},
		{"T3: three clients", 0, 3, 34, false},
	} {
		if got := ClientThreads(tc.given, tc.n, tc.jobsMPS); got != tc.want {
			t.Errorf("%s: ClientThreads(%d, %d, %v) = %d, want %d", tc.name, tc.given, tc.n, tc.jobsMPS, got, tc.want)
		}
	}
}

// R6: the longest pipe path of the run must fit a Unix socket.
func TestCheckPipeParent(t *testing.T) {
	long := "/" + strings.Repeat("d", 70)
	for _, tc := range []struct {
		name, parent string
		daemons      int
		want         string // "": accepted
	}{
		{"R6: /tmp's is short", "/tmp/gpulaunch-1000", 8, ""},
		{"R6: 100 bytes fit", "/" + strings.Repeat("d", 69), 8, ""},
		{"R6: 101 bytes do not", "/" + strings.Repeat("d", 70), 8, "whose paths (101 bytes) are too long for MPS's Unix sockets: set TMPDIR (or XDG_RUNTIME_DIR) to a shorter directory"},
		{"R6: more daemons, a longer K", "/" + strings.Repeat("d", 69), 10, "(101 bytes)"},
		{"R6: the directory is named", long, 1, "would go in " + long + ","},
	} {
		err := CheckPipeParent(tc.parent, tc.daemons)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckPipeParent = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// S1–S3: which directories a gpulaunch that is gone left.
func TestStaleRunDir(t *testing.T) {
	gone := func(pid int) bool { return pid == 4242 }
	for _, tc := range []struct {
		name, dir string
		want      bool
	}{
		{"S1: a gone gpulaunch's", "mps-4242-123456", true},
		{"S1: no pid in its name", "mps-abc-123456", false},
		{"S1: not a run's directory", "mps-4242", false},
		{"S1: another prefix", "xps-4242-1", false},
		{"S2: this gpulaunch's own", "mps-77-1", false},
		{"S3: a running gpulaunch's", "mps-99-1", false},
	} {
		if got := staleRunDir(tc.dir, 77, gone); got != tc.want {
			t.Errorf("%s: staleRunDir(%q) = %v, want %v", tc.name, tc.dir, got, tc.want)
		}
	}
	if got := runDirPrefix(4242); !staleRunDir(got+"0123456789", 77, gone) {
		t.Errorf("a directory named by runDirPrefix (%q) is not recognised", got)
	}
}

// The sharing format: a line per shared GPU, its mode and each
// instance's share (T2: none under the job's own MPS without
// --mps-threads); nil when no GPU is shared.
func TestSharingOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plan    binding.Plan
		s       Settings
		jobsMPS bool
		want    []string
	}{
		{"no GPU shared", plan(4, 4, 1), Settings{On: true}, false, nil},
		{"taking turns", plan(5, 4, 1), Settings{}, false, []string{"GPU 0 (GPU-a): instances 0,4 taking turns (time slicing; --mps to share it through MPS)"}},
		{"T3: under the run's MPS, an even share", plan(6, 2, 1), Settings{On: true}, false,
			[]string{"GPU 0 (GPU-a): instances 0,2,4 under MPS, 34% of its SMs each", "GPU 1 (GPU-b): instances 1,3,5 under MPS, 34% of its SMs each"}},
		{"T2: under the job's MPS, its own shares", plan(4, 2, 1), Settings{On: true}, true,
			[]string{"GPU 0 (GPU-a): instances 0,2 under MPS", "GPU 1 (GPU-b): instances 1,3 under MPS"}},
		{"T1: --mps-threads under the job's MPS", plan(4, 2, 1), Settings{On: true, Threads: 30}, true,
			[]string{"GPU 0 (GPU-a): instances 0,2 under MPS, 30% of its SMs each", "GPU 1 (GPU-b): instances 1,3 under MPS, 30% of its SMs each"}},
	} {
		sh := SharingOf(tc.plan, gpu.NVIDIA, tc.s, tc.jobsMPS)
		if got := sh.Lines(); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: lines\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
		var b strings.Builder
		sh.Write(&b)
		if (tc.want == nil) != (b.Len() == 0) || tc.want != nil && !strings.Contains(b.String(), "Sharing:   "+tc.want[0]+"\n") {
			t.Errorf("%s: Write:\n%s", tc.name, b.String())
		}
	}
	if _, err := PlanSharing(plan(4, 4, 2), gpu.NVIDIA, Settings{On: true}, Host{}); err == nil || !strings.Contains(err.Error(), "give -G 1") {
		t.Errorf("PlanSharing under --mps does not refuse what a run refuses (M2): %v", err)
	}
	if sh, err := PlanSharing(plan(4, 4, 1), gpu.NVIDIA, Settings{}, Host{}); err != nil || sh != nil {
		t.Errorf("PlanSharing without --mps: %v, %v", sh, err)
	}
}
