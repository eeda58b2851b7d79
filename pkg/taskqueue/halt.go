package taskqueue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Halt is GNU parallel's --halt: when a task queue stops early.
//   - "never" (the zero Halt): every task runs whatever happens;
//   - "now,fail=N": at the Nth failed task, end the running tasks (TERM,
//     the kill wait, KILL) and start no more; "soon,fail=N": start no
//     more and let the running ones finish;
//   - "fail=P%": when the failed tasks reach P percent of all the tasks
//     of the run (parallel's reading); "P%" alone is soon,fail=P%;
//   - success= and done= count succeeded and finished tasks the same way;
//   - 0, 1, 2, -1, -2: parallel's old spellings of never, soon,fail=1,
//     now,fail=1, soon,success=1, now,success=1.
type Halt struct {
	When    string // "now" or "soon"; "" never
	Kind    string // "fail", "success" or "done"
	Count   int
	Percent float64 // > 0: a share instead of a count
}

// ParseHalt reads a --halt value.
func ParseHalt(s string) (Halt, error) {
	switch s {
	case "", "never", "0":
		return Halt{}, nil
	case "1":
		return Halt{When: "soon", Kind: "fail", Count: 1}, nil
	case "2":
		return Halt{When: "now", Kind: "fail", Count: 1}, nil
	case "-1":
		return Halt{When: "soon", Kind: "success", Count: 1}, nil
	case "-2":
		return Halt{When: "now", Kind: "success", Count: 1}, nil
	}
	given := s // what messages quote: the user's words, not the shorthand's
	if strings.HasSuffix(s, "%") && !strings.ContainsAny(s, ",=") {
		s = "soon,fail=" + s
	}
	bad := fmt.Errorf("--halt %q: use never, now,fail=N, soon,fail=N, now,fail=P%%, or success=/done= instead of fail= (as GNU parallel)", given)
	when, cond, ok := strings.Cut(s, ",")
	if !ok && strings.Contains(s, "=") { // fail=50%: parallel wants the when too
		return Halt{}, fmt.Errorf("--halt %q: say when too, now,%s or soon,%s (as GNU parallel, which refuses it without)", given, s, s)
	}
	if !ok || (when != "now" && when != "soon") {
		return Halt{}, bad
	}
	kind, val, ok := strings.Cut(cond, "=")
	if !ok || (kind != "fail" && kind != "success" && kind != "done") {
		return Halt{}, bad
	}
	h := Halt{When: when, Kind: kind}
	if p, isPct := strings.CutSuffix(val, "%"); isPct {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f <= 0 || f > 100 {
			return Halt{}, fmt.Errorf("--halt %q: the share must be above 0%% and at most 100%%", given)
		}
		h.Percent = f
		return h, nil
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 {
		return Halt{}, fmt.Errorf("--halt %q: the count must be a whole number from 1", given)
	}
	h.Count = n
	return h, nil
}

// String is the value as --halt takes it.
func (h Halt) String() string {
	if h.When == "" {
		return "never"
	}
	if h.Percent > 0 {
		return fmt.Sprintf("%s,%s=%g%%", h.When, h.Kind, h.Percent)
	}
	return fmt.Sprintf("%s,%s=%d", h.When, h.Kind, h.Count)
}

// haltCounts are what --halt looks at: the recorded tasks so far, and the
// queue's tasks in all.
type haltCounts struct{ failed, succeeded, tasks int }

// reached applies --halt once a task is recorded (c counts it; last is its
// record): whether the halt is reached now, and the exit status it fixes.
// GNU parallel's rules (src/parallel, `sub halt` and the job's halt check):
//  1. fail= counts failed tasks, success= succeeded ones, done= both.
//  2. A count N is reached at N of them; a share P% at P percent of the
//     queue's tasks, fractions kept (10% of 5 tasks is reached at the
//     first).
//  3. The status: success= fixes 0. For fail= and done=, when the limit is
//     one task, that task's own status (its exit code; 128 + its signal);
//     else with a share, the failed share of all the tasks in percent,
//     rounded up; else the failed count, at most 101.
func (h Halt) reached(c haltCounts, last job.Record) (bool, int) {
	n := map[string]int{"fail": c.failed, "success": c.succeeded, "done": c.failed + c.succeeded}[h.Kind]
	limit := float64(h.Count)
	if h.Percent > 0 {
		limit = h.Percent / 100 * float64(c.tasks)
	}
	if h.When == "" || float64(n) < limit {
		return false, 0
	}
	switch {
	case h.Kind == "success":
		return true, 0
	case limit == 1:
		return true, last.Exit
	case h.Percent > 0:
		return true, ceilPercent(c.failed, c.tasks)
	}
	return true, min(c.failed, 101)
}

// unreachedCode is the exit status of a queue whose --halt was not
// reached (or without one), as parallel's: with a share, the failed
// share of the tasks started, in percent, rounded up; else the number of
// failed tasks, at most 101.
func (h Halt) unreachedCode(failed, started int) int {
	if h.When != "" && h.Percent > 0 {
		return ceilPercent(failed, max(started, 1))
	}
	return min(failed, 101)
}

// ceilPercent is 100 × part / whole, rounded up, in whole numbers.
func ceilPercent(part, whole int) int { return (100*part + whole - 1) / whole }
