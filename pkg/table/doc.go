// Package table is the text of gpulaunch's tables: columns of cells that
// fit a terminal's width (Fit), painted after their padding (Write), and
// the cell formats every table and message shares — a size in bytes
// (Bytes, BytesShort), the dash for a value there is none of (OrDash).
// The live status table (pkg/summary), the end-of-run summary, the
// plan, info and a report's picture all write their cells with these,
// so that one figure reads the same wherever it is shown.
//
// It is pure: text in, text out.
package table
