package main

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The test binary is the probe when RENDEZVOUS_PROBE is set, so that each
// rank is a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("RENDEZVOUS_PROBE") == "1" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("RENDEZVOUS_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// launch runs one probe process per entry of ranks (RANK values; WORLD_SIZE
// is world) and returns each one's exit code and output.
func launch(t *testing.T, world int, ranks []int) ([]int, []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	codes, outs := make([]int, len(ranks)), make([]string, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "RENDEZVOUS_PROBE=1", "RENDEZVOUS_ARGS=-timeout 5s",
				"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(world), "LOCAL_RANK=0",
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
			out, _ := cmd.CombinedOutput()
			codes[i], outs[i] = cmd.ProcessState.ExitCode(), string(out)
		}()
	}
	wg.Wait()
	return codes, outs
}

func TestEveryRankOnce(t *testing.T) {
	codes, outs := launch(t, 4, []int{0, 1, 2, 3})
	for i, c := range codes {
		if c != 0 {
			t.Errorf("rank %d exited %d: %s", i, c, outs[i])
		}
	}
	if !strings.Contains(outs[0], "world 4: ranks 0..3 each once") {
		t.Errorf("rank 0 said %q", outs[0])
	}
}

func TestDuplicateRankFailsEveryone(t *testing.T) {
	codes, outs := launch(t, 3, []int{0, 1, 1})
	for i, c := range codes {
		if c != 1 {
			t.Errorf("process %d exited %d, want 1: %s", i, c, outs[i])
		}
	}
	if !strings.Contains(outs[0], "rank 1 twice") || !strings.Contains(outs[0], "never heard rank(s) 2") {
		t.Errorf("rank 0 said %q", outs[0])
	}
}

func TestMissingEnvironment(t *testing.T) {
	_, err := fromEnv(func(k string) string { return map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}[k] })
	if err == nil || !strings.Contains(err.Error(), "MASTER_ADDR") {
		t.Errorf("%v", err)
	}
	_, err = fromEnv(func(k string) string {
		return map[string]string{"RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "not below") {
		t.Errorf("%v", err)
	}
}
