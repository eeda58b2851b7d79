package clidoc

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The rules of Closest and ClosestFlag, by name (closestCommand's table in
// cmd/gpulaunch holds them to gpulaunch's own commands).
func TestClosest(t *testing.T) {
	commands := []string{"run", "exec", "info", "plan", "status", "top", "logs"}
	for _, tc := range []struct{ rule, word, want string }{
		{"a swap of two letters counts 1", "stauts", "status"},
		{"within 2 edits", "sttaus", "status"},
		{"a short word far from every command gets none", "ls", ""},
		{"a word that keeps half of a command's letters or less gets none", "cat", ""},
		{"a program's name gets none", "python", ""},
	} {
		if got := Closest(tc.word, commands); got != tc.want {
			t.Errorf("%s: Closest(%q) = %q, want %q", tc.rule, tc.word, got, tc.want)
		}
	}
	flags := []string{"gpus-per-task", "ntasks", "simulate", "json"}
	for _, tc := range []struct{ rule, name, want string }{
		{"the only flag a name begins", "gpus", "gpus-per-task"},
		{"else the nearest within 2 edits", "simulte", "simulate"},
		{"a prefix of several flags is no answer by itself", "xyz", ""},
	} {
		if got := ClosestFlag(tc.name, flags); got != tc.want {
			t.Errorf("%s: ClosestFlag(%q) = %q, want %q", tc.rule, tc.name, got, tc.want)
		}
	}
}

// FlagOf's rules 1-3.
func TestFlagOf(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Bool("json", false, "print JSON")
	fs.String("log-format", "console", "log format: console or json")
	fs.String("report", "", "write the `REPORT` here")
	fs.String("output", "", "stdout to this file")
	fs.Int("ntasks", 0, "instances")
	fs.Float64("scale", 0, "a factor")
	fs.String("label", "", "a word")
	for _, tc := range []struct {
		rule, flag string
		choices    []string
		file       bool
		takes      bool
		def, value string
	}{
		{"1: a boolean takes no value", "json", nil, false, false, "", ""},
		{"2: a default that is something is shown; 3: up to four choices name the value", "log-format", []string{"console", "json"}, false, true, "console", "console|json"},
		{"3: the quoted word names the value", "report", nil, true, true, "", "REPORT"},
		{"3: a file is FILE", "output", nil, true, true, "", "FILE"},
		{"2: 0 is no default; 3: a whole number is N", "ntasks", nil, false, true, "", "N"},
		{"3: a number is X", "scale", nil, false, true, "", "X"},
		{"3: anything else is VALUE", "label", nil, false, true, "", "VALUE"},
	} {
		f := FlagOf(fs.Lookup(tc.flag), tc.choices, tc.file)
		if f.TakesValue != tc.takes || f.Default != tc.def || f.ValueName != tc.value {
			t.Errorf("%s: --%s takes %v, default %q, value %q; want %v, %q, %q", tc.rule, tc.flag, f.TakesValue, f.Default, f.ValueName, tc.takes, tc.def, tc.value)
		}
	}
}

// Summaries reads the main help's Commands section: a line per command
// with its continuations, the pointer to the command's own help cut.
func TestSummaries(t *testing.T) {
	top := "prog — does things\n\nCommands:\n  run     start N copies\n          of a program; 'gpulaunch run --help'\n  plan    show the plan\n\nExamples:\n  prog run\n"
	got := Summaries(top)
	if got["run"] != "start N copies of a program" || got["plan"] != "show the plan" || len(got) != 2 {
		t.Errorf("summaries %q", got)
	}
	if s := FirstSentence("Usage: prog top\n\nShows the runs. Then more."); s != "Shows the runs" {
		t.Errorf("first sentence %q", s)
	}
}

// Each renderer names every command and flag of a description it is
// given, in its shell's form.
func TestRenderersNameEveryFlag(t *testing.T) {
	cmds := []Command{
		{Name: "run", Summary: "run it", Usage: "Usage: gpulaunch run COMMAND\n\nRuns it.", Flags: []Flag{
			{Name: "output", Short: "o", Usage: "stdout to this file", TakesValue: true, ValueName: "FILE", File: true},
			{Name: "json", Usage: "print JSON"}}, Operands: []Operand{{Command: true}}},
		{Name: "help", Summary: "the help", Usage: "Usage: gpulaunch help", Operands: []Operand{{Choices: []string{"run", "help"}}}},
	}
	bash, zsh, fish := Bash(cmds, "v1"), Zsh(cmds, "v1"), Fish(cmds, "v1")
	if !strings.Contains(bash, "_gpulaunch_commands() {\n    echo 'run help'\n}") || !strings.Contains(bash, "    run) echo '--output -o --json' ;;") {
		t.Errorf("bash:\n%s", bash)
	}
	if !strings.Contains(zsh, "'(-o --output)'{-o+,--output=}'[stdout to this file]:file:_files'") {
		t.Errorf("zsh:\n%s", zsh)
	}
	if !strings.Contains(fish, "complete -c gpulaunch -n '__gpulaunch_flags run' -s o -l output -r -F -d 'stdout to this file'") {
		t.Errorf("fish:\n%s", fish)
	}
	page := ManPage(Page{Commands: cmds, Version: "v1", Date: "2026-11-27", TopUsage: "gpulaunch — runs\n\nUsage:\n  gpulaunch run\n\nExamples:\n  gpulaunch run -- true\n",
		Description: "It runs.", ExitStatus: "0.", Environment: "PATH", Files: "none", SeeAlso: "srun(1)"})
	for _, want := range []string{".TH GPULAUNCH 1 \"2026\\-11\\-27\" \"gpulaunch v1\"", ".SS \"gpulaunch run\"", `\fB\-o\fR, \fB\-\-output\fR \fIFILE\fR`, ".SH SEE ALSO"} {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q:\n%s", want, page)
		}
	}
	if got := runners(cmds); !slices.Equal(got, []string{"run"}) {
		t.Errorf("runners %v", got)
	}
}

// RoffEscape's rules: a backslash as \e, a hyphen as \-, the help texts'
// glyphs by groff's classic names, any other beyond ASCII by its code.
func TestRoffEscape(t *testing.T) {
	for in, want := range map[string]string{`a\b`: `a\eb`, "--ddp": `\-\-ddp`, "a — b…": `a \(em b.\|.\|.`, "π": `\[u03C0]`} {
		if got := RoffEscape(in); got != want {
			t.Errorf("RoffEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCompletionByShell(t *testing.T) {
	cmds := []Command{{Name: "run", Summary: "run"}}
	for shell, want := range map[string]string{"bash": Bash(cmds, "v1"), "zsh": Zsh(cmds, "v1"), "fish": Fish(cmds, "v1")} {
		if script, ok := Completion(shell, cmds, "v1"); !ok || script != want {
			t.Errorf("Completion(%s) = %.40q…, %v: want its script", shell, script, ok)
		}
	}
	if len(Shells) != 3 {
		t.Errorf("Shells = %v: want bash, zsh and fish", Shells)
	}
	if script, ok := Completion("tcsh", cmds, "v1"); ok || script != "" {
		t.Errorf("Completion(tcsh) = %q, %v: want none", script, ok)
	}
}

// Sources.Commands: the names' order, a summary or the usage's first
// sentence, the flag sets' flags but the hidden.
func TestSourcesCommands(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.String("output", "", "write to `FILE`")
	fs.Bool("ddp", false, "one job")
	_ = fs.MarkHidden("ddp")
	s := Sources{Names: []string{"run", "top"}, FlagSets: map[string]*pflag.FlagSet{"run": fs},
		Usages:    map[string]string{"run": "Usage: x run", "top": "Usage: x top\n\nThe table, refreshed. Printed once otherwise."},
		Summaries: map[string]string{"run": "run a program"}, Operands: map[string][]Operand{"run": {{Command: true}}},
		Choices: func(string) []string { return nil }, Files: map[string]bool{"output": true}}
	got := s.Commands()
	if len(got) != 2 || got[0].Name != "run" || got[1].Name != "top" {
		t.Fatalf("Commands() = %+v: want run, top", got)
	}
	if got[0].Summary != "run a program" || got[1].Summary != "The table, refreshed" {
		t.Errorf("summaries %q, %q", got[0].Summary, got[1].Summary)
	}
	if len(got[0].Flags) != 1 || got[0].Flags[0].Name != "output" || !got[0].Flags[0].File || got[0].Flags[0].ValueName != "FILE" {
		t.Errorf("run's flags = %+v: want --output FILE only", got[0].Flags)
	}
	if len(got[0].Operands) != 1 || got[1].Flags != nil {
		t.Errorf("operands %+v, top's flags %+v", got[0].Operands, got[1].Flags)
	}
}
