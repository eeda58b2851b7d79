package instance

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// The file patterns of gpulaunch, in one place: srun's letters (%t %j %s
// %N %n, with widths, and %%) as -o, -e, --report and --metrics-file read
// them (ExpandPattern, NodePath), how a name is told to hold one
// (SrunPatternIn), and how text put into a pattern stays literal
// (SrunLiteral). A queue's -o and -e fill GNU parallel's replacement
// strings first (taskqueue.FillFileName), then expand these
// (taskqueue.TaskFiles).

// Names are what output patterns expand to.
type Names struct {
	JobID, StepID, Host string
	NodeIndex           int
}

// ExpandPattern expands an srun-style file pattern for an instance:
// %t instance, %j job id, %s step id, %N host, %n node index, %% a
// percent sign; a width may precede the letter (%3t is 007).
func ExpandPattern(pattern string, instance int, nm Names) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(pattern) && pattern[j] >= '0' && pattern[j] <= '9' {
			j++
		}
		if j >= len(pattern) {
			return "", fmt.Errorf("pattern %q ends in an unfinished %%", pattern)
		}
		width := 0
		if j > i+1 {
			width, _ = strconv.Atoi(pattern[i+1 : j])
			if width > 10 {
				return "", fmt.Errorf("pattern %q: width %d is more than 10", pattern, width)
			}
		}
		num := func(n int) string { return fmt.Sprintf("%0*d", width, n) }
		switch pattern[j] {
		case 't':
			b.WriteString(num(instance))
		case 'n':
			b.WriteString(num(nm.NodeIndex))
		case 'j':
			b.WriteString(orNone(nm.JobID))
		case 's':
			b.WriteString(orNone(nm.StepID))
		case 'N':
			b.WriteString(nm.Host)
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("pattern %q: %%%c is not one of %%t %%j %%s %%N %%n %%%%", pattern, pattern[j])
		}
		i = j
	}
	return b.String(), nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ExpandArgs replaces %t in the app's arguments with the instance index;
// other percent signs are the app's own (printf formats) and stay.
func ExpandArgs(args []string, instance int) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "%t", strconv.Itoa(instance))
	}
	return out
}

// NodePath is where this node writes the file pattern names (flag: the
// flag that gave it, for the message): its %j, %s, %N, %n expanded; over
// several nodes a pattern without %N or %n gets the host before its
// extension, so that each node writes its own. %t, an instance, is
// refused: the file is one per node, with every instance in it (--report
// r-%t.json wrote one r-0.json for two instances).
func NodePath(flag, pattern string, names Names, multiNode bool) (string, error) {
	if strings.Contains(strings.ReplaceAll(pattern, "%%", ""), "%t") {
		return "", fmt.Errorf("%s %s: %%t is an instance, but this file is one per node with every instance in it: use %%N or %%n for the node (and %%j for the job)", flag, pattern)
	}
	p, err := ExpandPattern(pattern, 0, names)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	other := names
	other.Host, other.NodeIndex = names.Host+"-other", names.NodeIndex+1
	if q, _ := ExpandPattern(pattern, 0, other); multiNode && q == p {
		ext := filepath.Ext(p)
		p = strings.TrimSuffix(p, ext) + "." + names.Host + ext
	}
	return p, nil
}

// SrunPatternIn is the first of srun's patterns in name (%t, %3t, %j …;
// a % before a letter, with a width or not); "" when there is none.
func SrunPatternIn(name string) string {
	for i := strings.IndexByte(name, '%'); i >= 0 && i < len(name)-1; {
		j := i + 1
		for j < len(name) && name[j] >= '0' && name[j] <= '9' {
			j++
		}
		if j < len(name) && (name[j] >= 'a' && name[j] <= 'z' || name[j] >= 'A' && name[j] <= 'Z') {
			return name[i : j+1]
		}
		next := strings.IndexByte(name[i+1:], '%')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return ""
}

// SrunLiteral quotes what a replacement string writes into a file name
// for srun's % letters, which are read after: a line holding "50%" is
// the name's "50%".
func SrunLiteral(s string) string { return strings.ReplaceAll(s, "%", "%%") }
