// Package sitedefaults is the rule for the defaults a site sets in the
// environment (a modulefile's setenv) for a few of run's flags —
// GPULAUNCH_MONITOR_INTERVAL, GPULAUNCH_METRICS_FILE,
// GPULAUNCH_METRICS_LISTEN, GPULAUNCH_REPORT: which commands they apply
// to, that the flag always wins, how a bad value is refused, and what
// happens when a default's file or port cannot be had at the start
// (rules above For). It checks no value itself: each is checked by its
// flag's own rules, which the program hands in, and it opens nothing.
package sitedefaults
