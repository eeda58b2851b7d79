// Package tmux is the window --tmux opens in the user's tmux session: one
// pane per instance following its output (`gpulaunch logs -f`), in
// instance order row by row, and below them `gpulaunch top` (window.go,
// which runs the tmux program; Check says why it cannot open before
// anything starts); and the rules of its layout (layout.go, pure: Grid,
// TopPaneHeight).
package tmux
