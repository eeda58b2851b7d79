// Package study runs a scaling study (`gpulaunch scale`): every size's
// run, --repeat rounds of them, each as `gpulaunch run` would start it,
// and what each run gave — its figure of merit, read from its output as
// it goes, its exit status, its GPU use (in a packing study each
// instance's too). A size under MPS has its daemons started before each
// of its runs and stopped after (pkg/mps, as `gpulaunch run --mps`). The
// CLI decides each size's run before any starts (a Point: the
// launcher.Spec of that run, a value, with its mps.Run) and
// hands the points here; pkg/scaling's rules analyse and show what they
// gave. Ctrl-C between two runs stops the study and keeps what it has.
package study
