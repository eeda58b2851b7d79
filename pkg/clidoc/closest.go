package clidoc

import "strings"

// Closest is the word of candidates (a program's commands) a mistyped
// word most likely meant, or "" for none: the nearest within an edit
// distance of 2 (a swap of two letters counts 1, as in `stauts`) that
// keeps more than half of the candidate's letters, so that short words
// far from every command (ls, cat, python) get no suggestion.
func Closest(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := EditDistance(word, c)
		if d < bestD && 2*d < len(c) {
			best, bestD = c, d
		}
	}
	return best
}

// ClosestFlag is the flag of names a mistyped --name most likely meant:
// the only one it begins (--gpus for --gpus-per-task), else the nearest
// within the edit distance Closest allows; "" for none.
func ClosestFlag(name string, names []string) string {
	var prefixed []string
	best, bestD := "", 3
	for _, f := range names {
		if strings.HasPrefix(f, name) {
			prefixed = append(prefixed, f)
		}
		if d := EditDistance(name, f); d < bestD && 2*d < len(f) {
			best, bestD = f, d
		}
	}
	if len(prefixed) == 1 && bestD > 1 {
		return prefixed[0]
	}
	return best
}

// EditDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of two neighbours each cost 1.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
