package table

import "fmt"

// Dash is the cell of a value there is none of: not measured, not
// given, not applicable.
const Dash = "-"

// OrDash is s, or Dash when s is "".
func OrDash(s string) string {
	if s == "" {
		return Dash
	}
	return s
}

// Bytes is a size as the summary, the report's picture, info, plan,
// scale and the log write it:
//  1. 0 is Dash: never sampled (an instance that ran shorter than a
//     sample interval), or unknown;
//  2. from 1 GiB on, GiB with one decimal ("1.5 GiB");
//  3. from 1 MiB on, MiB with one decimal ("640.0 MiB");
//  4. below, whole KiB ("12 KiB").
func Bytes(b uint64) string {
	switch {
	case b == 0:
		return Dash
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

// BytesOf is Bytes of a measured size (a study's mean, say): Dash when
// none was measured (nil).
func BytesOf(x *float64) string {
	if x == nil || *x < 0 {
		return Dash
	}
	return Bytes(uint64(*x))
}

// BytesShort is a size in the live table (`gpulaunch status`, `top`),
// whose columns a terminal's width bounds, as top and ps write it:
//  1. from 1 GiB on, G with one decimal ("1.5G");
//  2. from 1 MiB on, whole M ("640M");
//  3. above 0, whole K ("12K");
//  4. 0 is "0": measured, and none (a live row that was not measured
//     shows Dash, not a size).
func BytesShort(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0fM", float64(b)/(1<<20))
	case b > 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return "0"
}

// ShortUUID is a GPU's UUID in a table: its first 12 characters and
// "…" ("GPU-1a2b3c4d…"), enough to tell a node's GPUs apart.
func ShortUUID(u string) string {
	if len(u) > 12 {
		return u[:12] + "…"
	}
	return u
}
