package taskqueue

import (
	"strings"
	"testing"
)

func TestChoicesCheck(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(name string) bool {
			for _, n := range names {
				if n == name {
					return true
				}
			}
			return false
		}
	}
	each := Choices{EachLine: "in.txt", Command: []string{"app", "{}"}, Retries: 1, Given: given()}
	with := func(f func(*Choices)) Choices { c := each; f(&c); return c }
	for _, tc := range []struct {
		rule string
		c    Choices
		err  string
	}{
		{"1 a queue's flag without a queue", Choices{Given: given("joblog")}, "--joblog belongs to a task queue"},
		{"1 no queue, no queue flag", Choices{Given: given()}, ""},
		{"2 both inputs", with(func(c *Choices) { c.Tasks = "t.txt" }), "--tasks and --each-line both give the tasks"},
		{"2 --tasks with a COMMAND", Choices{Tasks: "t.txt", Command: []string{"app"}, Retries: 1, Given: given()}, `no COMMAND follows (got "app")`},
		{"2 --each-line without a COMMAND", with(func(c *Choices) { c.Command = nil }), "--each-line FILE needs a COMMAND"},
		{"2 --shell with --each-line", with(func(c *Choices) { c.Shell = true }), "--shell is for --tasks lines"},
		{"3 --resume without --joblog", with(func(c *Choices) { c.Resume = true }), "read the --joblog FILE of the earlier run"},
		{"3 --resume with --resume-failed", with(func(c *Choices) { c.Resume, c.ResumeFailed, c.Joblog = true, true, "j" }), "exclude each other"},
		{"4 --retries 0", with(func(c *Choices) { c.Retries = 0 }), `GNU parallel reads 0 as "try forever"`},
		{"5 --colsep with --tasks", Choices{Tasks: "t.txt", Retries: 1, Given: given("colsep")}, "--colsep splits --each-line's input lines"},
		{"5 --colsep empty", with(func(c *Choices) { c.Given = given("colsep") }), `--colsep "": give the regular expression`},
		{"6 --ddp", with(func(c *Choices) { c.Given = given("ddp") }), "--ddp makes a run's instances one distributed job"},
		{"6 --restarts", with(func(c *Choices) { c.Given = given("restarts") }), "--restarts is for runs of N instances; a task queue has --retries"},
		{"7 --colsep not a regexp", with(func(c *Choices) { c.Colsep, c.Given = "(", given("colsep") }), `--colsep "(": not a regular expression (missing closing ) in "(")`},
		{"7 --colsep matching nothing", with(func(c *Choices) { c.Colsep, c.Given = " *", given("colsep") }), "matches the empty string"},
		{"7 --colsep compiled", with(func(c *Choices) { c.Colsep, c.Given = ",", given("colsep") }), ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			re, err := tc.c.Check()
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Check() = %v, want %q", err, tc.err)
			}
			if err == nil && (re != nil) != (tc.c.Colsep != "") {
				t.Fatalf("Check() compiled %v for --colsep %q", re, tc.c.Colsep)
			}
		})
	}
}
