package sched

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHosts bounds an expansion; Slurm caps ranges near this too.
const maxHosts = 1 << 16

// ExpandHostlist expands a Slurm hostlist expression into host names, in
// the order Slurm allocates them (slurm src/common/hostlist.h):
//
//   - hosts are separated by commas (or white space) outside brackets;
//   - "prefix[ranges]suffix" with comma-separated "lo-hi" or single numbers;
//   - leading zeros fix the width: "n[009-011]" is n009 n010 n011;
//   - several bracket groups expand left group outermost:
//     "rack[1-2]-node[01-02]" is rack1-node01 rack1-node02 rack2-node01 …
func ExpandHostlist(expr string) ([]string, error) {
	var out []string
	for _, item := range splitTop(expr) {
		hosts, err := expandOne(item)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, hosts...)
		if len(out) > maxHosts {
			return nil, fmt.Errorf("hostlist %q: more than %d hosts", expr, maxHosts)
		}
	}
	return out, nil
}

// splitTop splits at commas and white space that are not inside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	flush := func(end int) {
		if p := s[start:end]; p != "" {
			parts = append(parts, p)
		}
	}
	for i, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return parts
}

func expandOne(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q has ']' without '['", item)
		}
		return []string{item}, nil
	}
	closeAt := strings.IndexByte(item[open:], ']')
	if closeAt < 0 {
		return nil, fmt.Errorf("%q has '[' without ']'", item)
	}
	closeAt += open
	prefix, body, rest := item[:open], item[open+1:closeAt], item[closeAt+1:]
	if strings.ContainsRune(prefix, ']') {
		return nil, fmt.Errorf("%q has ']' without '['", item)
	}
	if strings.ContainsAny(body, "[") {
		return nil, fmt.Errorf("%q nests brackets", item)
	}
	if body == "" {
		return nil, fmt.Errorf("%q has an empty range", item)
	}
	tails, err := expandOne(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, width, err := parseRange(r)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if (hi-lo+1)*len(tails)+len(out) > maxHosts {
			return nil, fmt.Errorf("%q expands to more than %d hosts", item, maxHosts)
		}
		for n := lo; n <= hi; n++ {
			num := fmt.Sprintf("%0*d", width, n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

func parseRange(r string) (lo, hi, width int, err error) {
	loS, hiS, isRange := strings.Cut(strings.TrimSpace(r), "-")
	if lo, err = parseHostNum(loS); err != nil {
		return
	}
	hi, width = lo, len(loS)
	if isRange {
		if hi, err = parseHostNum(hiS); err != nil {
			return
		}
		if hi < lo {
			return 0, 0, 0, fmt.Errorf("range %q runs backwards", r)
		}
	}
	return lo, hi, width, nil
}

func parseHostNum(s string) (int, error) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a host number", s)
	}
	return strconv.Atoi(s)
}

// ParseCounts expands Slurm's compressed per-node counts, as in
// SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE: "2(x3),1" is 2,2,2,1.
func ParseCounts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty count list")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		val, rep := part, "1"
		if open := strings.IndexByte(part, '('); open >= 0 {
			if !strings.HasSuffix(part, ")") || !strings.HasPrefix(part[open:], "(x") {
				return nil, fmt.Errorf("count %q is not N or N(xM)", part)
			}
			val, rep = part[:open], part[open+2:len(part)-1]
		}
		n, err1 := strconv.Atoi(val)
		r, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || n < 0 || r < 1 || strings.HasPrefix(val, "+") || strings.HasPrefix(rep, "+") {
			return nil, fmt.Errorf("count %q is not N or N(xM)", part)
		}
		if len(out)+r > maxHosts {
			return nil, fmt.Errorf("count list %q covers more than %d nodes", s, maxHosts)
		}
		for range r {
			out = append(out, n)
		}
	}
	return out, nil
}

// CountsString compresses per-node counts as Slurm does: 2,2,2,1 is
// "2(x3),1".
func CountsString(counts []int) string {
	var parts []string
	for i := 0; i < len(counts); {
		j := i
		for j < len(counts) && counts[j] == counts[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%d(x%d)", counts[i], j-i))
		} else {
			parts = append(parts, strconv.Itoa(counts[i]))
		}
		i = j
	}
	return strings.Join(parts, ",")
}
