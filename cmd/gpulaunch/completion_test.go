package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
)

// completionScript is `gpulaunch completion SHELL`'s output.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	out, stderr, code := runCLI(t, nil, "completion", shell)
	if code != 0 || stderr != "" {
		t.Fatalf("gpulaunch completion %s: exit %d: %s", shell, code, stderr)
	}
	return out
}

// everyCommandFlag calls check for every command of `commands` and every
// flag its flag set registers, walking the flag sets themselves: a flag
// added later that a generator misses fails.
func everyCommandFlag(t *testing.T, check func(cmd string, f *pflag.Flag)) {
	sets := commandFlagSets()
	for _, cmd := range commands {
		if fs := sets[cmd]; fs != nil {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden { // a flag the command refuses (scaling.NotForAStudy)
					check(cmd, f)
				}
			})
		} else {
			check(cmd, nil)
		}
	}
}

// TestCompletionScriptsNameEveryFlag: each shell's script offers every
// command, and every flag of every command under that command, in the
// form the script's own code reads (bash's _gpulaunch_flags, zsh's
// _arguments arm, fish's complete lines).
func TestCompletionScriptsNameEveryFlag(t *testing.T) {
	bash, zsh, fish := completionScript(t, "bash"), completionScript(t, "zsh"), completionScript(t, "fish")
	bashCommands := strings.Fields(between(t, bash, "_gpulaunch_commands() {\n    echo '", "'"))
	bashFlags := func(cmd string) []string { return strings.Fields(between(t, bash, "\n    "+cmd+") echo '", "'")) }
	zshArm := func(cmd string) string { return between(t, zsh, "\n    "+cmd+")", ";;") }
	everyCommandFlag(t, func(cmd string, f *pflag.Flag) {
		if !slices.Contains(bashCommands, cmd) {
			t.Errorf("bash: command %s missing from _gpulaunch_commands", cmd)
		}
		if !strings.Contains(zsh, "\n        '"+cmd+":") {
			t.Errorf("zsh: command %s missing from the commands described", cmd)
		}
		if !strings.Contains(fish, "-n __gpulaunch_first -f -a "+cmd+" ") {
			t.Errorf("fish: command %s missing", cmd)
		}
		if f == nil {
			return
		}
		if !slices.Contains(bashFlags(cmd), "--"+f.Name) || f.Shorthand != "" && !slices.Contains(bashFlags(cmd), "-"+f.Shorthand) {
			t.Errorf("bash: %s --%s missing from its flags: %v", cmd, f.Name, bashFlags(cmd))
		}
		arm := zshArm(cmd)
		long := strings.Contains(arm, "'--"+f.Name+"[") || strings.Contains(arm, "'--"+f.Name+"=[") || strings.Contains(arm, ",--"+f.Name+"}") || strings.Contains(arm, ",--"+f.Name+"=}")
		if !long || f.Shorthand != "" && !strings.Contains(arm, "{-"+f.Shorthand+",") && !strings.Contains(arm, "{-"+f.Shorthand+"+,") {
			t.Errorf("zsh: %s --%s missing from its _arguments", cmd, f.Name)
		}
		line := "complete -c gpulaunch -n '__gpulaunch_flags " + cmd + "'"
		if f.Shorthand != "" {
			line += " -s " + f.Shorthand
		}
		if !strings.Contains(fish, line+" -l "+f.Name+" ") {
			t.Errorf("fish: %s --%s missing: no line %q", cmd, f.Name, line+" -l "+f.Name)
		}
	})
}

// TestZshCompletionQuoting: the zsh script's quoting holds. Its every
// construct (single quotes, a quote escaped inside them, brace expansion, [[ ]],
// arrays) is also bash's, so bash -n checks it where zsh is not
// installed; test/integration runs zsh itself.
func TestZshCompletionQuoting(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "_gpulaunch")
	if err := os.WriteFile(script, []byte(completionScript(t, "zsh")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Errorf("bash -n _gpulaunch: %v\n%s", err, out)
	}
}

// between is the text of s after the first start, up to end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, start)
	if !ok {
		t.Fatalf("no %q in the script", start)
	}
	in, _, _ := strings.Cut(after, end)
	return in
}

// bashCase is a command line to complete in a real bash: words as bash
// splits them (the last, maybe empty, is under the cursor).
type bashCase struct {
	name    string
	words   []string
	want    []string // in COMPREPLY
	notWant []string // not in COMPREPLY
	only    bool     // COMPREPLY is exactly want
}

// TestBashCompletion sources the script in a real bash, sets COMP_WORDS
// and COMP_CWORD as bash does for TAB, calls the function the script
// registers for gpulaunch, and reads COMPREPLY.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "gpulaunch.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "params.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var status []string
	statusFlagSet(new(clientFlags), new(bool)).VisitAll(func(f *pflag.Flag) { status = append(status, "--"+f.Name) })
	status = append(status, "--help")
	for _, c := range []bashCase{
		{name: "run's flags without a command", words: []string{"gpulaunch", "--mo"}, want: []string{"--monitor-interval"}, only: true},
		{name: "run's flags after another", words: []string{"gpulaunch", "-n", "4", "--mo"}, want: []string{"--monitor-interval"}, only: true},
		{name: "a command's flags", words: []string{"gpulaunch", "status", "--"}, want: status, only: true},
		{name: "not another command's flags", words: []string{"gpulaunch", "status", "--mo"}, only: true},
		{name: "the commands", words: []string{"gpulaunch", ""}, want: commands, only: true},
		{name: "a command begun", words: []string{"gpulaunch", "st"}, want: []string{"status"}, only: true},
		{name: "a flag's choices", words: []string{"gpulaunch", "--mem-bind", ""}, want: []string{"preferred", "bind", "none"}, only: true},
		{name: "a choice after = as bash splits it", words: []string{"gpulaunch", "plan", "--mem-bind", "=", "pr"}, want: []string{"preferred"}, only: true},
		{name: "the choices after =", words: []string{"gpulaunch", "--gpu-ids", "="}, want: []string{"uuid", "index"}, only: true},
		{name: "a choice glued with =", words: []string{"gpulaunch", "--ranks=l"}, want: []string{"--ranks=local"}, only: true},
		{name: "a simulated node", words: []string{"gpulaunch", "plan", "--simulate", "dgx-h1"}, want: []string{"dgx-h100"}},
		{name: "a file flag", words: []string{"gpulaunch", "--each-line", filepath.Join(dir, "par")}, want: []string{filepath.Join(dir, "params.txt")}, only: true},
		{name: "a value is not a flag", words: []string{"gpulaunch", "-o", "--mo"}, notWant: []string{"--monitor-interval"}},
		{name: "the shells", words: []string{"gpulaunch", "completion", ""}, want: clidoc.Shells, only: true},
		{name: "help's commands", words: []string{"gpulaunch", "help", "sc"}, want: []string{"scale"}, only: true},
		{name: "the program after --", words: []string{"gpulaunch", "-n", "2", "--", "bas"}, want: []string{"bash"}},
		{name: "the program's own flags are its own", words: []string{"gpulaunch", "-n", "2", "./app", "--mo"}, only: true},
		{name: "scale's flags end at COMMAND too", words: []string{"gpulaunch", "scale", "-G", "1,2", "./app", "--re"}, only: true},
		{name: "signal's instance", words: []string{"gpulaunch", "signal", "a"}, want: []string{"all"}, only: true},
		{name: "signal's signal", words: []string{"gpulaunch", "signal", "--pid", "7", "all", "USR"}, want: []string{"USR1", "USR2"}, only: true},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, bash, script) })
	}
}

// check sources setup in a fresh bash, sets COMP_WORDS and COMP_CWORD as
// bash does for TAB, calls _gpulaunch and compares COMPREPLY with c.
func (c bashCase) check(t *testing.T, bash, setup string) {
	t.Helper()
	prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _gpulaunch; printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command(bash, append([]string{"--norc", "--noprofile", "-c", prog, "bash", setup}, c.words...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	for _, w := range c.want {
		if !slices.Contains(got, w) {
			t.Errorf("%q: COMPREPLY %v lacks %q", strings.Join(c.words, " "), got, w)
		}
	}
	for _, w := range c.notWant {
		if slices.Contains(got, w) {
			t.Errorf("%q: COMPREPLY %v has %q", strings.Join(c.words, " "), got, w)
		}
	}
	if c.only && len(got) != len(c.want) {
		t.Errorf("%q: COMPREPLY %v, want only %v", strings.Join(c.words, " "), got, c.want)
	}
}

// TestBashCompletionStateInFunctions: the bash script keeps its state in
// functions, none in shell variables, so that what carries a script's
// functions and compspecs but not its unexported variables (Lmod's
// source_sh, `declare -f` into another shell) carries a working
// completion: a bash given only `declare -f` and `complete -p` of the
// sourced script completes a command, a command's flags, the shells of
// completion and the signals of signal.
func TestBashCompletionStateInFunctions(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	script, carried := filepath.Join(dir, "gpulaunch.bash"), filepath.Join(dir, "carried.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1" && declare -f && complete -p`, "bash", script).Output()
	if err != nil {
		t.Fatalf("bash: source the script, declare -f: %v", err)
	}
	if err := os.WriteFile(carried, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var status []string
	statusFlagSet(new(clientFlags), new(bool)).VisitAll(func(f *pflag.Flag) { status = append(status, "--"+f.Name) })
	status = append(status, "--help")
	for _, c := range []bashCase{
		{name: "a command begun", words: []string{"gpulaunch", "st"}, want: []string{"status"}, only: true},
		{name: "a command's flags", words: []string{"gpulaunch", "status", "--"}, want: status, only: true},
		{name: "the shells", words: []string{"gpulaunch", "completion", ""}, want: clidoc.Shells, only: true},
		{name: "signal's signals", words: []string{"gpulaunch", "signal", "2", ""}, want: []string{"INT", "TERM", "HUP", "QUIT", "USR1", "USR2", "KILL"}, only: true},
		{name: "run's flags", words: []string{"gpulaunch", "--mo"}, want: []string{"--monitor-interval"}, only: true},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, bash, carried) })
	}
}

// TestFlagChoicesInUsage: every choice the completions offer for a flag
// is named in that flag's own usage text, in every command that has it,
// so that a choice renamed in the code and its help is caught here.
func TestFlagChoicesInUsage(t *testing.T) {
	everyCommandFlag(t, func(cmd string, f *pflag.Flag) {
		if f == nil {
			return
		}
		for _, c := range flagChoices(f.Name) {
			if !strings.Contains(f.Usage, c) {
				t.Errorf("%s --%s: the completions offer %q, which its usage %q does not name", cmd, f.Name, c, f.Usage)
			}
		}
	})
}

// TestCompletionBadArguments: no shell, an unknown one, two.
func TestCompletionBadArguments(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}, {"man", "page"}} {
		out, stderr, code := runCLI(t, nil, args...)
		if code != exitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gpulaunch: error: ") {
			t.Errorf("gpulaunch %s: exit %d, stdout %q, stderr %q; want exit 2 and one error line", strings.Join(args, " "), code, out, stderr)
		}
	}
}

// Every flag that writes a file (the contract table's outputFlags)
// completes file names: a new output flag left out of fileFlags fails.
func TestOutputFlagsCompleteFiles(t *testing.T) {
	for name := range outputFlags {
		if !fileFlags[name] {
			t.Errorf("--%s writes a file but its completion offers no file names: add it to fileFlags (clidoc.go)", name)
		}
	}
}
