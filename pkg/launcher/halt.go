package launcher

import (
	"fmt"
	"strconv"
	"strings"
)

// Halt is GNU parallel's --halt: when a task queue stops early.
//   - "never" (the zero Halt): every task runs whatever happens;
//   - "now,fail=N": at the Nth failed task, end the running tasks (TERM,
//     the kill wait, KILL) and start no more; "soon,fail=N": start no
//     more and let the running ones finish;
//   - "fail=P%": when the failed tasks reach P percent of all the tasks
//     of the run (parallel's reading);
//   - success= and done= count succeeded and finished tasks the same way;
//   - 0, 1, 2: parallel's old spellings of never, soon,fail=1, now,fail=1.
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
	}
	bad := fmt.Errorf("--halt %q: use never, now,fail=N, soon,fail=N, now,fail=P%%, or success=/done= instead of fail= (as GNU parallel)", s)
	when, cond, ok := strings.Cut(s, ",")
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
			return Halt{}, fmt.Errorf("--halt %q: the share must be above 0%% and at most 100%%", s)
		}
		h.Percent = f
		return h, nil
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 {
		return Halt{}, fmt.Errorf("--halt %q: the count must be a whole number from 1", s)
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
