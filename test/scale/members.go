package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpulaunch/gpulaunch/pkg/nodelink"
)

// Over a tree of node groups (nodelink.Groups) the nodes behind the
// relays are simulated in other processes of this command (-child): one
// process cannot hold both ends of 10,000 connections, a relay's and its
// node's, under this machine's hard limit of 20,000 descriptors, which
// root in its container cannot raise. This process keeps the relays and
// node N (the -lose victim), and measures; the children only join and
// answer.

// memberParts is how many child processes share the nodes behind relays.
const memberParts = 2

// members are the child processes, each the nodes of its part.
type members struct {
	cmds   []*exec.Cmd
	stdins []io.WriteCloser
	lines  chan string // each child's first line: "joined" or why not
}

// startMembers starts the children for h's tree, node skip left out (it
// is this process's), and waits until every one of their nodes joined,
// or by.
func startMembers(h *holderRun, skip int, by time.Time) (*members, error) {
	m := &members{lines: make(chan string, memberParts)}
	for part := range memberParts {
		cmd := exec.Command(os.Args[0], "-child", "-run", h.run, "-keys", h.keys, "-part", strconv.Itoa(part), "-skip", strconv.Itoa(skip),
			"-join-by", strconv.FormatInt(by.UnixNano(), 10))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return m, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return m, err
		}
		if err := cmd.Start(); err != nil {
			return m, err
		}
		m.cmds, m.stdins = append(m.cmds, cmd), append(m.stdins, in)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			m.lines <- strings.TrimSpace(line)
			io.Copy(io.Discard, out)
		}()
	}
	for range memberParts {
		if line := <-m.lines; line != "joined" {
			return m, fmt.Errorf("the nodes behind the relays: %s", line)
		}
	}
	return m, nil
}

// open lets the children's nodes answer.
func (m *members) open() {
	for _, in := range m.stdins {
		io.WriteString(in, "go\n")
	}
}

// stop ends the children (after the queue, or when it failed).
func (m *members) stop() {
	if m == nil {
		return
	}
	for _, c := range m.cmds {
		c.Process.Kill()
		c.Wait()
	}
}

// runChild is a child's life: join its part of the nodes behind relays
// (every memberParts-th, skip left out), say "joined", wait for "go" on
// stdin, answer every task until the queue ends.
func runChild(run, keys string, part, skip int, joinBy time.Time) error {
	k, err := nodelink.ReadKey(nodelink.KeyPath(keys, run))
	if err != nil {
		return err
	}
	tree := nodelink.Groups{Nodes: k.Nodes, Size: k.Group}
	var ids []int
	for i := 1; i < tree.Nodes; i++ {
		if !tree.IsRelay(i) && i != skip && i%memberParts == part {
			ids = append(ids, i)
		}
	}
	dialling := make(chan struct{}, 16)
	workers := make([]*nodelink.Worker, len(ids))
	errs := make(chan error, len(ids))
	var wg sync.WaitGroup
	for j, i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dialling <- struct{}{}
			defer func() { <-dialling }()
			w, err := nodelink.Join(nodelink.WorkerConfig{Run: run, Node: i, Host: "sim" + strconv.Itoa(i), Slots: slots, KeyDir: keys, Wait: time.Until(joinBy)})
			if err != nil {
				errs <- fmt.Errorf("node %d: %w", i, err)
				return
			}
			workers[j] = w
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Println("joined")
	s := &sim{gate: make(chan struct{})}
	var answering sync.WaitGroup
	for j, w := range workers {
		answering.Add(1)
		go func() { defer answering.Done(); s.answer(ids[j], w) }()
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	close(s.gate)
	answering.Wait()
	return nil
}
