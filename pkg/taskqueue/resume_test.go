package taskqueue

import (
	"slices"
	"testing"

	"github.com/gpulaunch/gpulaunch/pkg/job"
)

// Resume's rules, by number, on the joblog of par_resume_k's first run
// (`exit {}` over 0 1 2 3 0 5: tasks 2, 3, 4 and 6 failed).
func TestResume(t *testing.T) {
	cmd := func(exit string) func(seq int, in string) string {
		return func(seq int, in string) string {
			return "sh -c 'echo job" + in + "id;exit " + map[bool]string{true: in, false: "0"}[exit == "{}"] + "'"
		}
	}
	inputs := []string{"0", "1", "2", "3", "0", "5", "6", "7"}
	tasks := func(n int, command func(int, string) string) []job.Task {
		var ts []job.Task
		for i := range n {
			ts = append(ts, job.Task{Seq: i + 1, Command: command(i+1, inputs[i])})
		}
		return ts
	}
	first := tasks(6, cmd("{}"))
	records := map[int]JoblogEntry{}
	for _, tk := range first {
		records[tk.Seq] = JoblogEntry{Succeeded: inputs[tk.Seq-1] == "0", Command: tk.Command}
	}
	seqs := func(ts []job.Task) []int {
		var out []int
		for _, t := range ts {
			out = append(out, t.Seq)
		}
		return out
	}
	for _, tc := range []struct {
		rule       string
		tasks      []job.Task
		records    map[int]JoblogEntry
		failedOnly bool
		todo       []int
		changed    int
		first      int // the first changed task; 0 for none
		beyond     int
	}{
		{rule: "1, 2: the same sweep again: nothing to run", tasks: first, records: records, todo: nil},
		{rule: "1, 3: par_resume_k: exit 0 over 8: tasks 7 and 8 run, 4 records differ", tasks: tasks(8, cmd("0")), records: records, todo: []int{7, 8}, changed: 4, first: 2},
		{rule: "2: --resume-failed reruns the failed ones", tasks: first, records: records, failedOnly: true, todo: []int{2, 3, 4, 6}},
		{rule: "2, 3: --resume-failed with a changed command reruns them all the same", tasks: tasks(6, cmd("0")), records: records, failedOnly: true, todo: []int{2, 3, 4, 6}, changed: 4, first: 2},
		{rule: "3: records of tasks the input lacks", tasks: tasks(4, cmd("{}")), records: records, todo: nil, beyond: 2},
		{rule: "3: the slot's number in {%} is the same command", tasks: []job.Task{{Seq: 1, Command: "echo {%} x"}}, records: map[int]JoblogEntry{1: {Succeeded: true, Command: "echo 3 x"}}, todo: nil},
		{rule: "no joblog: everything runs", tasks: first, records: map[int]JoblogEntry{}, todo: []int{1, 2, 3, 4, 5, 6}},
	} {
		r := Resume(tc.tasks, tc.records, tc.failedOnly)
		if got := seqs(r.Todo); !slices.Equal(got, tc.todo) || r.Skipped != len(tc.tasks)-len(tc.todo) {
			t.Errorf("rule %s: runs %v (skips %d), want %v", tc.rule, got, r.Skipped, tc.todo)
		}
		if r.Changed != tc.changed || r.First.Seq != tc.first || r.Beyond != tc.beyond || r.Records != len(tc.records) {
			t.Errorf("rule %s: %d changed (first %d), %d beyond, %d records; want %d (first %d), %d beyond", tc.rule, r.Changed, r.First.Seq, r.Beyond, r.Records, tc.changed, tc.first, tc.beyond)
		}
		if tc.first != 0 && (r.First.Recorded != tc.records[tc.first].Command || r.First.Now != tc.tasks[tc.first-1].Command) {
			t.Errorf("rule %s: the first change %+v", tc.rule, r.First)
		}
	}
}
