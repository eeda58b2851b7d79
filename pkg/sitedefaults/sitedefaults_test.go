package sitedefaults

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// check is a stand-in for the flags' own checks: "bad" is refused in the
// flag's words, as the flags' checks begin theirs.
func check(flag, value string) error {
	if value == "bad" {
		return fmt.Errorf("--%s %q: not a value it takes (e.g. good)", flag, value)
	}
	return nil
}

func TestFor(t *testing.T) {
	none := func(string) bool { return false }
	for _, c := range []struct {
		rule    string
		command string
		env     map[string]string
		given   func(string) bool
		want    []string // the flags given a default, in Vars' order
		refused string   // what the error holds; "" for none
	}{
		{"1. the flag wins", "run", map[string]string{MonitorInterval: "500ms", Report: "r.json"},
			func(f string) bool { return f == "monitor-interval" }, []string{"report"}, ""},
		{"1. the flag wins over a bad value, which is not read", "run", map[string]string{MonitorInterval: "bad"},
			func(f string) bool { return f == "monitor-interval" }, nil, ""},
		{"2. empty is unset", "run", map[string]string{Report: "", MetricsFile: "m.prom"}, none, []string{"metrics-file"}, ""},
		{"3. a bad value is refused naming the variable", "run", map[string]string{MetricsListen: "bad"}, none, nil,
			"GPULAUNCH_METRICS_LISTEN=bad: not a value it takes (e.g. good); it is the site's default for --metrics-listen"},
		{"4. run takes all four", "run", map[string]string{MonitorInterval: "1s", MetricsFile: "m.prom", MetricsListen: "127.0.0.1:1", Report: "r.json"}, none,
			[]string{"monitor-interval", "metrics-file", "metrics-listen", "report"}, ""},
		{"4. scale takes the interval alone", "scale", map[string]string{MonitorInterval: "1s", MetricsFile: "m.prom", Report: "r.json"}, none,
			[]string{"monitor-interval"}, ""},
		{"4. exec takes none, and reads no value", "exec", map[string]string{MonitorInterval: "bad", Report: "bad"}, none, nil, ""},
	} {
		t.Run(c.rule, func(t *testing.T) {
			got, err := For(c.command, c.env, c.given, check)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) || !strings.HasSuffix(err.Error(), "nothing was started") {
					t.Fatalf("error %v, want one holding %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var flags []string
			for _, s := range got {
				flags = append(flags, s.Flag)
				if s.Value != c.env[s.Name] {
					t.Errorf("%s: value %q, want %q", s.Name, s.Value, c.env[s.Name])
				}
			}
			if fmt.Sprint(flags) != fmt.Sprint(c.want) {
				t.Fatalf("defaults for %v, want %v", flags, c.want)
			}
			for _, f := range c.want {
				if _, ok := got.Of(f); !ok {
					t.Errorf("Of(%s): none", f)
				}
			}
		})
	}
}

// Rule 5's warning: the variable, the file as expanded, the reason
// without the flag's "nothing was started" (the run goes on), and what
// the run goes without.
func TestUnavailable(t *testing.T) {
	s := Setting{Var: Vars[1], Value: "/run/gpulaunch/%j/%N.prom"}
	why := errors.New("--metrics-file /run/gpulaunch/7/n1.prom: the directory /run/gpulaunch/7 does not exist: nothing was started")
	got := s.Unavailable("/run/gpulaunch/7/n1.prom", "metrics file", why)
	want := "GPULAUNCH_METRICS_FILE=/run/gpulaunch/%j/%N.prom (/run/gpulaunch/7/n1.prom), the site's default for --metrics-file: the directory /run/gpulaunch/7 does not exist; this run goes on without a metrics file (give --metrics-file to choose one)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestShowAndWriteInfo(t *testing.T) {
	var b strings.Builder
	WriteInfo(&b, Show(map[string]string{}, check))
	if !strings.HasPrefix(b.String(), "Site defaults: none (GPULAUNCH_MONITOR_INTERVAL,") {
		t.Fatalf("none set:\n%s", b.String())
	}
	b.Reset()
	shown := Show(map[string]string{Report: "bad", MonitorInterval: "1s"}, check)
	WriteInfo(&b, shown)
	if len(shown) != 2 || shown[0].Name != MonitorInterval || shown[0].Refused != "" || shown[1].Refused != "not a value it takes (e.g. good)" {
		t.Fatalf("shown %+v", shown)
	}
	for _, want := range []string{"GPULAUNCH_MONITOR_INTERVAL=1s", "--monitor-interval (run, scale)", "GPULAUNCH_REPORT=bad", "refused by a run: not a value"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("info lacks %q:\n%s", want, b.String())
		}
	}
}
