package main

import (
	"cmp"
	"net"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/flagvalue"
	"github.com/gpulaunch/gpulaunch/pkg/instance"
	"github.com/gpulaunch/gpulaunch/pkg/launcher"
	"github.com/gpulaunch/gpulaunch/pkg/metrics"
	"github.com/gpulaunch/gpulaunch/pkg/outputs"
	"github.com/gpulaunch/gpulaunch/pkg/report"
	"github.com/gpulaunch/gpulaunch/pkg/sitedefaults"
)

// The site defaults from the environment (pkg/sitedefaults' rules),
// wired to run's and scale's flags.

// checkSiteValue is each site default's flag's own check of a value
// (sitedefaults.Check), in the flag's words: what parseRun and
// ReadPolicy would say of the value given as the flag.
func checkSiteValue(flag, value string) error {
	switch flag {
	case "monitor-interval":
		d, err := flagvalue.Duration("--monitor-interval", value)
		return cmp.Or(err, launcher.CheckMonitor(d, value))
	case "report":
		_, err := report.Path(value, instance.Names{}, false)
		return cmp.Or(outputs.Name("--report", value, false), err)
	case "metrics-file":
		_, err := metrics.FileName(value, instance.Names{}, false)
		return cmp.Or(outputs.Name("--metrics-file", value, false), err, outputs.PromName(value))
	case "metrics-listen":
		return metrics.CheckFlags("", value, func(f string) bool { return f == "metrics-listen" })
	}
	return nil
}

// siteDefaults gives the flags of fs that command takes from the site's
// defaults in env their values (sitedefaults.For). given: marked as given
// on the command line (scale's, so that every size's run is given it);
// else not: rank mode's refusal of run's flags (rankModeConflicts) reads
// what the command line gave.
func (a *app) siteDefaults(command string, fs *pflag.FlagSet, given bool) (sitedefaults.Applied, error) {
	applied, err := sitedefaults.For(command, a.env, fs.Changed, checkSiteValue)
	if err != nil {
		return nil, asUsage(err)
	}
	for _, s := range applied {
		set := fs.Lookup(s.Flag).Value.Set
		if given {
			set = func(v string) error { return fs.Set(s.Flag, v) }
		}
		if err := set(s.Value); err != nil {
			return nil, asUsage(err)
		}
	}
	return applied, nil
}

// siteFile is where this node writes a file flag's pattern: file is the
// flag's own (report.FileFor, metrics.FileName: the name expanded and
// checked). From a site default the name is expanded (expand) and a file
// that cannot be written is a warning and none (sitedefaults' rule 5).
func siteFile(o *runOptions, flag, what string, file, expand func() (string, error), log *zap.Logger) (string, error) {
	s, site := o.site.Of(flag)
	if !site {
		return file()
	}
	path, err := expand()
	if err == nil {
		err = outputs.NewWritableCheck().Replaced(path)
	}
	if err != nil {
		log.Warn(s.Unavailable(path, what, err))
		return "", nil
	}
	return path, nil
}

// lockRunMetrics takes --metrics-file's lock (lockMetricsFile); a site
// default's file another run holds is a warning, and the run writes none
// (rule 5).
func (r *runner) lockRunMetrics() (func(), error) {
	unlock, err := lockMetricsFile(r.l.metricsFile, r.log)
	if s, site := r.o.site.Of("metrics-file"); site && err != nil {
		r.log.Warn(s.Unavailable(r.l.metricsFile, "metrics file", err))
		r.l.metricsFile = ""
		return func() {}, nil
	}
	return unlock, err
}

// listenRunMetrics opens --metrics-listen's port (listenMetrics); a site
// default's port that cannot be opened is a warning, and the run serves
// none (rule 5).
func (r *runner) listenRunMetrics() (net.Listener, error) {
	ln, err := listenMetrics(r.o.flags.metricsListen)
	if s, site := r.o.site.Of("metrics-listen"); site && err != nil {
		r.log.Warn(s.Unavailable(s.Value, "metrics listener", err))
		return nil, nil
	}
	return ln, err
}
