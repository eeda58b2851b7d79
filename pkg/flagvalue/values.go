package flagvalue

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpulaunch/gpulaunch/pkg/clidoc"
)

// Range is the values a whole-number flag takes and what they count.
type Range struct {
	Name   string // the flag's
	Lo, Hi int64
	Of     string
}

// String is the range in a message: "instances on one node are 1..8192".
func (r Range) String() string { return fmt.Sprintf("%s %d..%d", r.Of, r.Lo, r.Hi) }

// Ranges are a program's ranges, by flag name. A list, not a map: a map
// is built at init, at every start of the program; a list is laid out by
// the linker.
type Ranges []Range

// Of is the range of the whole-number flag name.
func (rs Ranges) Of(name string) (Range, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Range{}, false
}

// Strict makes every whole-number flag of fs read its value in base 10,
// as srun and GNU parallel read counts: pflag's own reads 010 as octal 8,
// 0x10 as 16, and refuses 08 (`seq -w` pads with zeros); and refuse a
// value above the flag's range as it is parsed. Number flags take finite
// numbers only: NaN passes every range check (each comparison with it is
// false).
func Strict(fs *pflag.FlagSet, ranges Ranges) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int":
			r, _ := ranges.Of(f.Name)
			f.Value = Decimal{f.Value, r.Hi}
		case "float64":
			f.Value = Finite{f.Value}
		}
	})
}

// Finite is a number flag's value that is a number.
type Finite struct{ pflag.Value }

func (v Finite) Set(s string) error {
	n, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
		return strconv.ErrSyntax
	}
	if err != nil {
		return err
	}
	return v.Value.Set(s)
}

// Decimal is an int flag's value read in base 10, at most Hi (0: any).
type Decimal struct {
	pflag.Value
	Hi int64
}

func (d Decimal) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	if d.Hi > 0 && n > d.Hi {
		return &strconv.NumError{Func: "ParseInt", Num: s, Err: strconv.ErrRange}
	}
	return d.Value.Set(strconv.FormatInt(n, 10))
}

// Name is how messages name a flag: -o/--output, --report.
func Name(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// Empty refuses a word flag of fs given an empty value (-o "$OUT" with
// OUT unset): every one of them would otherwise fall back to its default
// without a word (an empty -o writes to the terminal, an empty --simulate
// plans this machine), which is not what the command line says. The flags
// of ownCheck refuse "" themselves, with a fix of their own.
func Empty(fs *pflag.FlagSet, ownCheck map[string]bool) error {
	var bad *pflag.Flag
	fs.Visit(func(f *pflag.Flag) {
		if bad == nil && f.Value.Type() == "string" && f.Value.String() == "" && !ownCheck[f.Name] {
			bad = f
		}
	})
	if bad == nil {
		return nil
	}
	def := ""
	if bad.DefValue != "" {
		def = fmt.Sprintf(" (its default is %s)", bad.DefValue)
	}
	return fmt.Errorf("%s \"\": an empty value (a variable that expanded to nothing?): give it a value, or leave %s out%s",
		Name(bad), Name(bad), def)
}

// Explain says what pflag found wrong in words, without the parser's own
// (`strconv.ParseInt: parsing "abc": invalid syntax`), and for an unknown
// flag the one of fs that was likely meant (clidoc.ClosestFlag).
func Explain(err error, fs *pflag.FlagSet, ranges Ranges) string {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			var names []string
			fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
			if near := clidoc.ClosestFlag(name, names); near != "" {
				return fmt.Sprintf("unknown flag: --%s: did you mean --%s?", name, near)
			}
		}
		return err.Error()
	}
	f := bad.GetFlag()
	name := Name(f)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("%s %s: %s", name, bad.GetValue(), outOfRange(f, bad.GetValue(), ranges))
	}
	want := map[string]string{"int": "a whole number", "bool": "true or false", "string": "a word", "float64": "a number"}[f.Value.Type()]
	if want == "" {
		want = "a " + f.Value.Type()
	}
	return fmt.Sprintf("%s: invalid argument %q: not %s", name, bad.GetValue(), want)
}

// outOfRange says why a number the parser read is still refused: it is
// a number, beyond the flag's range, or what its type holds.
func outOfRange(f *pflag.Flag, value string, ranges Ranges) string {
	neg := strings.HasPrefix(strings.TrimSpace(value), "-")
	typ := f.Value.Type()
	if r, ok := ranges.Of(f.Name); ok && typ == "int" {
		return map[bool]string{false: "too large: ", true: "too small: "}[neg] + r.String()
	}
	switch {
	case typ == "int" && neg:
		return fmt.Sprintf("too small: a whole number here is %d or more", math.MinInt64)
	case typ == "int":
		return fmt.Sprintf("too large: a whole number here is at most %d", math.MaxInt64)
	}
	return fmt.Sprintf("out of range: a number here is between %g and %g", -math.MaxFloat64, math.MaxFloat64)
}
