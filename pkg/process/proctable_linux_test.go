package process

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want procEntry
		ok   bool
	}{
		{"plain", "123 (sleep) S 45 123 45 0 -1 4194304 96 0 0 0 7 3 2 1 20 0 1 0 100 5000000 212 18446744073709551615\n",
			procEntry{ppid: 45, ticks: 10, childTicks: 3, rssPages: 212}, true},
		{"comm with spaces and parentheses", "9 (a) b (c) R 8 9 8 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 1 7 0\n",
			procEntry{ppid: 8, ticks: 2, rssPages: 7}, true},
		{"zombie", "77 (x) Z 1 77 77 0 -1 0 0 0 0 0 4 0 0 0 20 0 1 0 9 0 0 0\n",
			procEntry{ppid: 1, ticks: 4, zombie: true}, true},
		{"cut short", "77 (x) S 1 77 77 0", procEntry{}, false},
		{"no comm", "garbage", procEntry{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tc.stat))
			if ok != tc.ok || got != tc.want {
				t.Errorf("parseStat = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A tree: gpulaunch → 100 (instance) → 101, 102 (zombie) ; 101 → 103.
// 200 is another instance; 300 someone else's process.
func TestProcTree(t *testing.T) {
	me := os.Getpid()
	tab := ProcTable{children: map[int][]int32{}}
	for _, e := range []procEntry{
		{pid: 100, ppid: me, ticks: 10, childTicks: 5, rssPages: 1},
		{pid: 101, ppid: 100, ticks: 20, rssPages: 2},
		{pid: 102, ppid: 100, ticks: 3, zombie: true},
		{pid: 103, ppid: 101, ticks: 1, rssPages: 4},
		{pid: 200, ppid: me, ticks: 1000, rssPages: 1000},
		{pid: 300, ppid: 1, ticks: 1000, rssPages: 1000},
	} {
		tab.children[e.ppid] = append(tab.children[e.ppid], int32(len(tab.procs)))
		tab.procs = append(tab.procs, e)
	}
	tr := tab.Tree(100)
	if got := tr.CPU(&tab); got != 0.39 {
		t.Errorf("cpu %v s, want 0.39 (own 10 + Reaped children 5 + 20 + zombie's final 3 + 1 ticks)", got)
	}
	if got := tr.RSS(&tab); got != uint64(7*os.Getpagesize()) {
		t.Errorf("rss %d, want 7 pages", got)
	}
	d := tr.Descendants(&tab)
	slices.Sort(d)
	if !slices.Equal(d, []int{101, 103}) || !tr.PIDs[100] || tr.PIDs[102] || tr.PIDs[200] {
		t.Errorf("descendants %v, pids %v", d, tr.PIDs)
	}
	if gone := tab.Tree(999); gone.CPU(&tab) != 0 || len(gone.members) != 0 {
		t.Errorf("a pid the scan did not see: %+v", gone)
	}
}

// On the real /proc: a child shell with two sleeping children.
func TestScanProcsSeesARealTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var d []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(d) < 2; time.Sleep(20 * time.Millisecond) {
		tab := ScanProcs()
		tr := tab.Tree(cmd.Process.Pid)
		d = tr.Descendants(&tab)
		if len(d) == 2 && tr.RSS(&tab) == 0 {
			t.Errorf("the tree has no resident memory")
		}
	}
	if len(d) != 2 {
		t.Fatalf("descendants %v, want the two sleeps", d)
	}
	for _, pid := range d {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// One sample's process accounting for 64 instances: the scan of /proc and
// a walk of each instance's tree (make bench reports the whole sampler's
// cost as a share of a core).
func BenchmarkSampleProcessTrees(b *testing.B) {
	var kids []*exec.Cmd
	for range 64 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		kids = append(kids, c)
	}
	defer func() {
		for _, c := range kids {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		tab := ScanProcs()
		for _, c := range kids {
			tr := tab.Tree(c.Process.Pid)
			_ = tr.CPU(&tab) + float64(tr.RSS(&tab))
		}
	}
}

// noChildren is what lets the end of a run skip its scan for leftovers:
// it must say false while any child lives, or has exited unreaped.
func TestNoChildren(t *testing.T) {
	if !noChildren() {
		t.Skip("the test binary has children of its own")
	}
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if noChildren() {
		t.Error("a living child: noChildren says none")
	}
	var info unix.Siginfo // wait for its exit without reaping it
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if noChildren() {
		t.Error("an exited child not yet reaped: noChildren says none")
	}
	cmd.Wait()
	if !noChildren() {
		t.Error("every child reaped: noChildren says there is one")
	}
}
