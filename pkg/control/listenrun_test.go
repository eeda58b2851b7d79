//go:build linux

package control

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/launcher"
)

// TestListenRun: the socket opened is the board's; a refusal removes only
// a directory made just now, never one that was there (a planted one).
func TestListenRun(t *testing.T) {
	t.Run("opened: the board names the socket", func(t *testing.T) {
		dir := filepath.Join(socketParent(t), "gpulaunch-x")
		board := launcher.NewBoard(launcher.RunInfo{}, nil)
		srv, err := ListenRun([]string{dir}, "node1", 4242, os.Getuid(), board, zap.NewNop(), true)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close(0)
		if got := board.Snapshot().Run.Socket; got != srv.Path() || got != filepath.Join(dir, SocketName("node1", 4242)) {
			t.Fatalf("board's socket %q, server's %q", got, srv.Path())
		}
	})
	t.Run("refused: a directory that was there stays", func(t *testing.T) {
		dir := filepath.Join(socketParent(t), "gpulaunch-x")
		if err := os.Mkdir(dir, 0o777); err != nil { // not private: refused
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		srv, err := ListenRun([]string{dir}, "node1", 4242, os.Getuid(), launcher.NewBoard(launcher.RunInfo{}, nil), zap.NewNop(), true)
		if err == nil {
			srv.Close(0)
			t.Fatal("ListenRun opened a socket in a directory others may write")
		}
		if _, err := os.Lstat(dir); err != nil {
			t.Fatalf("the directory that was there is gone: %v", err)
		}
	})
}
