package scaling

import "fmt"

// Choices are what a study was asked for, as its command line gave them
// (`gpulaunch scale`), for Check.
type Choices struct {
	// GPUs and Instances are -G's and -n's lists, as given.
	GPUs, Instances string
	DDP             bool
	Repeat          int
	Efficiency      float64
	// Mean and Sum are --metric-mean and --metric-sum.
	Mean, Sum bool
	Command   []string
	// Given says whether the flag of that name was given.
	Given func(name string) bool
}

// NotForAStudy are run's flags that a study refuses: each is about one
// run, and the study's runs are many.
var NotForAStudy = []string{"tmux", "dry-run", "report", "ranks", "kill-on-bad-exit", "wait", "metrics-file", "metrics-listen"}

// Check refuses what a study cannot do, with the fix. The rules, in
// order:
//
//	C1. A command to study.
//	C2. The sizes by -G (one process on G GPUs) or -n (N instances of
//	    one GPU each), one of them.
//	C3. --ddp makes -n's instances one data-parallel job: not -G's.
//	C4. --repeat runs every size at least once.
//	C5. --efficiency is a share in (0, 1].
//	C6. --metric-mean and --metric-sum exclude each other.
//	C7. --metric-mean, --metric-sum, --unit and --lower-is-better are
//	    about --metric's figure: they need --metric.
//	C8. A run flag about one run (NotForAStudy) is refused.
func (c Choices) Check() error {
	switch {
	case len(c.Command) == 0:
		return fmt.Errorf("no command to study: gpulaunch scale -G 1,2,4,8 -- COMMAND [ARGS…]")
	case (c.GPUs == "") == (c.Instances == ""):
		return fmt.Errorf("give the sizes with -G 1,2,4,8 (one process on G GPUs) or -n 1,2,4,8 (N instances of one GPU each), one of them")
	case c.GPUs != "" && c.DDP:
		return fmt.Errorf("--ddp is for -n: N instances that form one data-parallel job; -G runs one process on G GPUs")
	case c.Repeat < 1:
		return fmt.Errorf("--repeat %d: run every size at least once", c.Repeat)
	case !(c.Efficiency > 0 && c.Efficiency <= 1): // NaN too
		return fmt.Errorf("--efficiency %g: give a share between 0 and 1, e.g. 0.6", c.Efficiency)
	case c.Mean && c.Sum:
		return fmt.Errorf("--metric-mean and --metric-sum exclude each other: the mean of instance 0's matches, or the sum of every instance's last")
	}
	for _, name := range []string{"metric-mean", "metric-sum", "unit", "lower-is-better"} {
		if c.Given(name) && !c.Given("metric") {
			return fmt.Errorf("--%s is about the figure --metric REGEX reads: give --metric", name)
		}
	}
	for _, name := range NotForAStudy {
		if c.Given(name) {
			return fmt.Errorf("--%s is not for a study: each size is one run, and gpulaunch scale reports them all; drop it (or run one size with `gpulaunch run --%s …`)", name, name)
		}
	}
	return nil
}

// Axis is the count the sizes are of (C2).
func (c Choices) Axis() Axis {
	if c.Instances != "" {
		return ByInstances
	}
	return ByGPUs
}

// List is the sizes' list, as given.
func (c Choices) List() string {
	if c.Instances != "" {
		return c.Instances
	}
	return c.GPUs
}

// Of is how the figure is made of the matches (Metric's Of): "last",
// "mean" (--metric-mean) or "sum" (--metric-sum).
func (c Choices) Of() string {
	switch {
	case c.Sum:
		return "sum"
	case c.Mean:
		return "mean"
	}
	return "last"
}
