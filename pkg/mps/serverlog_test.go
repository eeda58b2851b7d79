package mps

import (
	"slices"
	"strings"
	"testing"
)

// The H200's server.log after one client of three faulted (gpu-h200.md),
// as NVIDIA's server wrote it, spelling included.
const h200ServerLog = `[2026-11-27 01:38:20.101 Server   490] Creating server context on device 0 (NVIDIA H200)
[2026-11-27 01:38:32.637 Server   490] The following client process have a sticky error set:
[2026-11-27 01:38:32.637 Server   490] 468
[2026-11-27 01:38:32.637 Server   490] 467
[2026-11-27 01:38:32.637 Server   490] 466
[2026-11-27 01:38:32.844 Server   490] Server failed to recevie command with status 806, assuming client {PID: 468, Context ID: 1} exit
[2026-11-27 01:38:32.844 Server   490] Client {PID: 468, Context ID: 1} exiting. Number of active client contexts is 2.
[2026-11-27 01:38:33.278 Server   490] Client {PID: 467, Context ID: 1} exiting. Number of active client contexts is 0.
[2026-11-27 01:38:33.278 Server   490] Destroy server context on device 0 (NVIDIA H200)
`

// ParseStickies' rules, each by its number.
func TestParseStickiesRules(t *testing.T) {
	for _, tc := range []struct {
		rule      string
		log       string
		pids      [][]int
		recovered []bool
	}{
		{"2, 3, 4: the H200's log", h200ServerLog, [][]int{{468, 467, 466}}, []bool{true}},
		{"1: other lines are skipped, a cut line ends nothing", "garbage\n" + strings.Replace(h200ServerLog, "[2026-11-27 01:38:32.637 Server   490] 467\n", "[2026-11-27 01:38:32.637 Serv\n[2026-11-27 01:38:32.637 Server   490] 467\n", 1),
			[][]int{{468, 467, 466}}, []bool{true}},
		{"3: another line ends the list", "[2026-11-27 01:00:00.000 Server 7] " + stickyHeader + "\n[2026-11-27 01:00:00.000 Server 7] 11\n[2026-11-27 01:00:00.001 Server 7] Client {PID: 11, Context ID: 1} exiting.\n[2026-11-27 01:00:00.002 Server 7] 12\n",
			[][]int{{11}}, []bool{false}},
		{"4: not recovered while a client holds the context", strings.Split(h200ServerLog, "[2026-11-27 01:38:33.278 Server   490] Destroy")[0], [][]int{{468, 467, 466}}, []bool{false}},
		{"4: two faults, the server recovered after each", h200ServerLog + strings.ReplaceAll(h200ServerLog, "46", "56"), [][]int{{468, 467, 466}, {568, 567, 566}}, []bool{true, true}},
		{"no fault", "[2026-11-27 01:38:20.101 Server   490] Creating server context on device 0 (NVIDIA H200)\n", nil, nil},
	} {
		got, err := ParseStickies(strings.NewReader(tc.log))
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		if len(got) != len(tc.pids) {
			t.Fatalf("%s: %d stickies %+v, want %d", tc.rule, len(got), got, len(tc.pids))
		}
		for i, s := range got {
			if !slices.Equal(s.PIDs, tc.pids[i]) || s.Recovered != tc.recovered[i] || s.Server == 0 || s.At.IsZero() {
				t.Errorf("%s: sticky %d: %+v, want pids %v recovered %v", tc.rule, i, s, tc.pids[i], tc.recovered[i])
			}
		}
	}
}

func TestReadStickiesWithoutALog(t *testing.T) {
	if got, err := ReadStickies(t.TempDir()); got != nil || err != nil {
		t.Errorf("no server.log: %v %v, want none", got, err)
	}
}
