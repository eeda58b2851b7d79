package scaling

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Metric reads a run's figure of merit from its output (--metric REGEX).
// The rules:
//  1. The regex is matched against each line of each instance's output;
//     the figure is its first group (or the whole match without one),
//     read as a number (a thousands separator "," is dropped).
//  2. Of says which matches make the figure: "last", the last of instance
//     0's (rank 0 prints a data-parallel job's figures, as the examples
//     of every framework do); "mean", the mean of instance 0's (a figure
//     per epoch); "sum", the sum over the instances of each one's last
//     (independent instances, each printing its own throughput).
//  3. No match, or a match that is not a number: no figure — never 0,
//     which would read as "infinitely slow".
//  4. A figure of 0 or less is none either: a rate or a time that small
//     measures nothing, and the speedups of a study divide by it (a 0
//     was "ok" with no speedup, a negative one gave -30% efficiency).
type Metric struct {
	re *regexp.Regexp
	Of string // "last", "mean", "sum"
}

// NewMetric compiles a --metric regex; of is "last", "mean" or "sum".
func NewMetric(expr, of string) (*Metric, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("--metric is empty: give a regex that matches the figure in the output, its number in a group, e.g. 'throughput: ([0-9.]+)'")
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("--metric %q is not a regex (%v): e.g. 'throughput: ([0-9.]+)'", expr, err)
	}
	if re.NumSubexp() > 1 {
		return nil, fmt.Errorf("--metric %q has %d groups: give one, around the number (other groups as (?:…))", expr, re.NumSubexp())
	}
	return &Metric{re: re, Of: of}, nil
}

// Reading is what one run's output gave: per instance, what rule 2
// needs of its matches — a training loop that prints its throughput at
// every step for days must not grow the reading with it.
type Reading struct {
	m       *Metric
	matches map[int]*tally
	bad     string // the first match that was not a number
}

// tally is one instance's matches: the last, their sum and count.
type tally struct {
	last, sum float64
	n         int
}

// NewReading starts reading a run's output.
func (m *Metric) NewReading() *Reading { return &Reading{m: m, matches: map[int]*tally{}} }

// Line takes one line of instance i's output.
func (r *Reading) Line(i int, line string) {
	sub := r.m.re.FindStringSubmatch(line)
	if sub == nil {
		return
	}
	text := sub[len(sub)-1]
	x, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(text), ",", ""), 64)
	if err != nil {
		if r.bad == "" {
			r.bad = text
		}
		return
	}
	t := r.matches[i]
	if t == nil {
		t = &tally{}
		r.matches[i] = t
	}
	t.last, t.sum, t.n = x, t.sum+x, t.n+1
}

// Figure is the run's figure (rule 2), or why there is none (rules 3, 4).
func (r *Reading) Figure() (float64, string) {
	fig, why := r.figure()
	if why == "" && !(fig > 0) {
		return 0, fmt.Sprintf("its figure was %g: a figure of merit is a rate or a time above 0", fig)
	}
	return fig, why
}

// Last is instance i's last figure (a packing study's instance's own,
// rules 1 and 4); false when it printed none above 0.
func (r *Reading) Last(i int) (float64, bool) {
	t := r.matches[i]
	if t == nil || !(t.last > 0) {
		return 0, false
	}
	return t.last, true
}

// figure is Figure by rules 2 and 3.
func (r *Reading) figure() (float64, string) {
	first, byInst0 := r.matches[0]
	switch {
	case r.m.Of == "sum" && len(r.matches) > 0:
		sum := 0.0
		for _, i := range slices.Sorted(maps.Keys(r.matches)) { // one order, one rounding
			sum += r.matches[i].last
		}
		return sum, ""
	case r.m.Of == "mean" && byInst0:
		return first.sum / float64(first.n), ""
	case r.m.Of == "last" && byInst0:
		return first.last, ""
	case r.bad != "":
		return 0, fmt.Sprintf("the regex matched %q, which is not a number", r.bad)
	case r.m.Of != "sum" && len(r.matches) > 0:
		return 0, "only other instances than 0 printed it (--metric-sum adds every instance's)"
	}
	return 0, fmt.Sprintf("the output never matched %q", r.m.re.String())
}
