package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulaunch/gpulaunch/test/procs"
)

// The test binary is also the keeper (started as KeeperName), and the
// "kept-parent": a gpulaunch stand-in that starts a helper under its
// keeper, writes the pids to a file and waits to be killed.
func TestMain(m *testing.M) {
	if IsKeeper() {
		os.Exit(Keep())
	}
	if len(os.Args) == 4 && os.Args[1] == "kept-parent" {
		os.Exit(keptParent(os.Args[2], os.Args[3]))
	}
	os.Exit(m.Run())
}

func keptParent(script, pidFile string) int {
	k, err := StartKept("/bin/sh", []string{"sh", "-c", script}, os.Environ(), "/", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = os.WriteFile(pidFile, []byte(fmt.Sprintf("%d %d\n", k.PID, k.Keeper)), 0o644)
	time.Sleep(time.Minute)
	return 0
}

// markedLiving are the living (not zombie) processes whose environment
// holds KEEPTEST=mark.
func markedLiving(mark string) []int { return procs.Living("environ", []byte("KEEPTEST="+mark+"\x00")) }

// noneLeft waits (a loaded machine is slow, never wrong) until no marked
// process lives.
func noneLeft(t *testing.T, mark string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := markedLiving(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running after 30s: %v", left)
		}
	}
}

// waitFile waits until path exists: the helper's child in a session of
// its own is up.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
	}
}

// The helper under test is the worst a daemon can be: it ignores TERM,
// INT and HUP, and starts a child that leaves its process group for a
// session of its own and ignores them too (as a daemon's server might).
// However its run ends — gpulaunch ends it, gpulaunch is SIGKILLed, the
// keeper is told by a signal, the helper exits leaving its child —, no
// process of it is left (K1–K5).
func TestKeeperEndsEverythingBelowIt(t *testing.T) {
	// the child writes $READY once it has its own session and its trap
	const worst = `trap "" TERM INT HUP; setsid sh -c 'trap "" TERM INT HUP; : > "$READY"; sleep 60' & sleep 60`
	for _, tc := range []struct {
		name   string
		script string
		wait   bool // for $READY
		end    func(t *testing.T, k *Kept)
	}{
		{"K3: gpulaunch ends the lifeline", worst, true, func(t *testing.T, k *Kept) {
			if !k.End(30 * time.Second) {
				t.Error("End: the keeper did not end within 30s")
			}
		}},
		{"K3: TERM to the keeper", worst, true, func(t *testing.T, k *Kept) {
			_ = syscall.Kill(k.Keeper, syscall.SIGTERM)
			goneWithin(t, k)
		}},
		{"K5: the helper exits and leaves its child", `setsid sh -c 'trap "" TERM INT HUP; sleep 60' & sleep 0.5; exit 3`, false, func(t *testing.T, k *Kept) {
			<-k.Exited()
			if st, ok := k.Status(); !ok || st.ExitStatus() != 3 {
				t.Errorf("status %v (known %v), want exit 3", st, ok)
			}
			goneWithin(t, k)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
			ready := filepath.Join(t.TempDir(), "ready")
			k, err := StartKept("/bin/sh", []string{"sh", "-c", tc.script}, append(os.Environ(), "KEEPTEST="+mark, "READY="+ready), "/", os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { k.End(time.Second) })
			if pgid, _ := syscall.Getpgid(k.PID); pgid != k.PID {
				t.Errorf("the helper's group is %d, want its own (%d)", pgid, k.PID)
			}
			if tc.wait {
				waitFile(t, ready)
			}
			tc.end(t, k)
			noneLeft(t, mark)
		})
	}
	t.Run("K3: gpulaunch SIGKILLed", func(t *testing.T) {
		mark := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
		pids, ready := filepath.Join(t.TempDir(), "pids"), filepath.Join(t.TempDir(), "ready")
		parent := exec.Command(os.Args[0], "kept-parent", worst, pids)
		parent.Env = append(os.Environ(), "KEEPTEST="+mark, "READY="+ready)
		if err := parent.Start(); err != nil {
			t.Fatal(err)
		}
		waitFile(t, ready)
		_ = parent.Process.Kill()
		_ = parent.Wait()
		noneLeft(t, mark)
		b, _ := os.ReadFile(pids)
		if f := strings.Fields(string(b)); len(f) != 2 {
			t.Errorf("the parent wrote %q, want the helper's and the keeper's pids", b)
		}
	})
}

// goneWithin fails unless k's keeper exits within 30 s: its helper's
// child sleeps a minute, so only the keeper ends it sooner.
func goneWithin(t *testing.T, k *Kept) {
	t.Helper()
	select {
	case <-k.gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the keeper did not end within 30s")
	}
}

// A program that cannot start is StartKept's error, and leaves no keeper.
func TestKeptThatCannotStart(t *testing.T) {
	mark := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	_, err := StartKept("/nonexistent/daemon", []string{"daemon"}, append(os.Environ(), "KEEPTEST="+mark), "/", os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v, want the exec's", err)
	}
	noneLeft(t, mark)
}
