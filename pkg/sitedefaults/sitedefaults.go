package sitedefaults

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The variables, each the site's default for the run flag of its name.
const (
	MonitorInterval = "GPULAUNCH_MONITOR_INTERVAL"
	MetricsFile     = "GPULAUNCH_METRICS_FILE"
	MetricsListen   = "GPULAUNCH_METRICS_LISTEN"
	Report          = "GPULAUNCH_REPORT"
)

// Var is one site default: its environment variable, the flag it stands
// for (its name, without dashes) and the commands it applies to (For's
// rule 4).
type Var struct {
	Name     string   `json:"variable"`
	Flag     string   `json:"flag"`
	Commands []string `json:"commands"`
}

// Vars are every site default, in the order info lists them. A list, not
// a map: a map is built at init, at every start of gpulaunch.
var Vars = []Var{
	{Name: MonitorInterval, Flag: "monitor-interval", Commands: []string{"run", "scale"}},
	{Name: MetricsFile, Flag: "metrics-file", Commands: []string{"run"}},
	{Name: MetricsListen, Flag: "metrics-listen", Commands: []string{"run"}},
	{Name: Report, Flag: "report", Commands: []string{"run"}},
}

// Setting is a site default as the environment holds it.
type Setting struct {
	Var
	Value string `json:"value"`
}

// Assignment is the setting as a shell writes it: NAME=VALUE.
func (s Setting) Assignment() string { return s.Name + "=" + s.Value }

// Settings are the site defaults set in env, in Vars' order: an empty
// variable is none (rule 2).
func Settings(env map[string]string) []Setting {
	var out []Setting
	for _, v := range Vars {
		if value := env[v.Name]; value != "" {
			out = append(out, Setting{Var: v, Value: value})
		}
	}
	return out
}

// Check is a flag's own check of a value, its message naming the flag
// as the command line would (--monitor-interval "abc": …); flag is the
// flag's name, without dashes.
type Check func(flag, value string) error

// Applied are the site defaults a command took: each flag's value from
// its variable, by flag name.
type Applied []Setting

// Of is the setting that gave flag its value; false when the command
// line gave it, or no site default did.
func (a Applied) Of(flag string) (Setting, bool) {
	for _, s := range a {
		if s.Flag == flag {
			return s, true
		}
	}
	return Setting{}, false
}

// For is the site defaults command takes from env; given says which
// flags its command line gave, check is each flag's own check of a value.
// The rules:
//  1. The flag always wins: a flag given on the command line takes no
//     default, and its variable is not read (a user who gives the flag
//     is not stopped by a site's broken default).
//  2. An empty variable is no default, as an unset one: a user turns a
//     site default off for a run with `GPULAUNCH_REPORT= gpulaunch …`
//     (--monitor-interval 0 turns telemetry off as a flag).
//  3. A value is read by its flag's own rules, and one the flag would
//     refuse is refused, naming the variable, the reason, and the fixes
//     (the flag, which wins; unsetting the variable): a default ignored
//     without a word would be the site's mistake hidden from everyone.
//  4. They apply to what a site wants measured and kept: a run of
//     instances, a task queue, a --ddp group (`run`, on every node of
//     one over several; a --dry-run checks them as the run would). Not
//     to rank mode (`exec`, or a run that is one rank of several a
//     launcher started on the node: it execs the app and supervises
//     nothing, so there is nothing to sample, report or export; their
//     values are still checked, read before the node is). `scale` takes
//     GPULAUNCH_MONITOR_INTERVAL alone, for every size's run: the report
//     and the metrics are one run's flags, which a study refuses.
//  5. A default's file or port that cannot be had when the run starts —
//     the file's directory missing (the job's prolog did not make it) or
//     not writable, the file another run's, the port in use — is one
//     warning (Unavailable), and the run goes on without it: the site's
//     setting must not fail a user's job. Given as a flag, the same is
//     refused, as before: the user asked for that file.
func For(command string, env map[string]string, given func(flag string) bool, check Check) (Applied, error) {
	var out Applied
	for _, s := range Settings(env) {
		if !slices.Contains(s.Commands, command) || given(s.Flag) {
			continue
		}
		if err := check(s.Flag, s.Value); err != nil {
			return nil, s.refused(err)
		}
		out = append(out, s)
	}
	return out, nil
}

// refused is rule 3's message: the flag's own reason, said of the
// variable.
func (s Setting) refused(err error) error {
	return fmt.Errorf("%s: %s; it is the site's default for --%s, set in the environment (a module's setenv?): fix or unset %s, or give --%s, which wins; nothing was started",
		s.Assignment(), s.reason(err, s.Value), s.Flag, s.Name, s.Flag)
}

// reason is the flag's message without the flag and value it begins
// with (--monitor-interval "abc": not a duration → not a duration) —
// the value as given or as expanded (path) —, and without the "nothing
// was started" it may end with: said in a warning, the run goes on.
func (s Setting) reason(err error, path string) string {
	msg, flag := err.Error(), "--"+s.Flag
	for _, v := range []string{s.Value, path} {
		for _, prefix := range []string{flag + " " + strconv.Quote(v) + ": ", flag + " " + v + ": "} {
			msg = strings.TrimPrefix(msg, prefix)
		}
	}
	msg = strings.TrimPrefix(msg, flag+": ")
	for _, end := range []string{"; nothing was started", ": nothing was started"} {
		msg = strings.TrimSuffix(msg, end)
	}
	return msg
}

// Unavailable is rule 5's warning: the default names path (its file, or
// its address), which cannot be had for why; what is what the run goes
// without ("metrics file").
func (s Setting) Unavailable(path, what string, why error) string {
	named := ""
	if path != s.Value {
		named = " (" + path + ")"
	}
	return fmt.Sprintf("%s%s, the site's default for --%s: %s; this run goes on without a %s (give --%s to choose one)",
		s.Assignment(), named, s.Flag, s.reason(why, path), what, s.Flag)
}

// Shown is a site default as info shows it: its setting, and why a run
// would refuse its value ("" when it would not).
type Shown struct {
	Setting
	Refused string `json:"refused,omitempty"`
}

// Show is every site default set in env, each checked by its flag's own
// check, for info: a bad value is shown with its reason, not refused
// (info is where an admin looks at them).
func Show(env map[string]string, check Check) []Shown {
	out := []Shown{}
	for _, s := range Settings(env) {
		sh := Shown{Setting: s}
		if err := check(s.Flag, s.Value); err != nil {
			sh.Refused = s.reason(err, s.Value)
		}
		out = append(out, sh)
	}
	return out
}

// WriteInfo writes info's lines of the site defaults: a line for each
// set, with the flag it stands for and the commands it applies to, or
// one line saying none is.
func WriteInfo(w io.Writer, shown []Shown) {
	if len(shown) == 0 {
		names := make([]string, len(Vars))
		for i, v := range Vars {
			names[i] = v.Name
		}
		fmt.Fprintf(w, "Site defaults: none (%s unset)\n", strings.Join(names, ", "))
		return
	}
	fmt.Fprintln(w, "Site defaults (from the environment; a flag given wins):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range shown {
		note := ""
		if s.Refused != "" {
			note = "\trefused by a run: " + s.Refused
		}
		fmt.Fprintf(tw, "  %s\t--%s (%s)%s\n", s.Assignment(), s.Flag, strings.Join(s.Commands, ", "), note)
	}
	tw.Flush()
}
