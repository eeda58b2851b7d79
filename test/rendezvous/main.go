// Command rendezvous checks that the instances of a distributed launch
// agree on their environment, the way torch.distributed's env:// would,
// without PyTorch: every instance connects to MASTER_ADDR:MASTER_PORT and
// says its RANK and WORLD_SIZE; rank 0 listens there, and succeeds only
// when it has heard every rank 1..WORLD_SIZE-1 exactly once, all with its
// WORLD_SIZE. It answers each instance with the verdict, so that every one
// of them exits 0 on success and 1 otherwise.
//
//	gpulaunch --ddp -n 4 -- rendezvous [-timeout 60s]
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 60*time.Second, "how long rank 0 waits for all, and the others try to reach it")
	flag.Parse()
	me, err := fromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rendezvous: error:", err)
		os.Exit(2)
	}
	if me.rank == 0 {
		err = serve(me, *timeout, os.Stdout)
	} else {
		err = join(me, *timeout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rendezvous: rank %d: %v\n", me.rank, err)
		os.Exit(1)
	}
	fmt.Printf("rendezvous: rank %d of %d on %s: ok\n", me.rank, me.world, me.host)
}

// member is what one instance says of itself.
type member struct {
	rank, world, local int
	host               string
	addr               string // MASTER_ADDR:MASTER_PORT
}

func fromEnv(getenv func(string) string) (member, error) {
	var m member
	num := func(name string) (int, error) {
		v := getenv(name)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: not set to a number (run under gpulaunch --ddp)", name, v)
		}
		return n, nil
	}
	var err error
	if m.rank, err = num("RANK"); err != nil {
		return m, err
	}
	if m.world, err = num("WORLD_SIZE"); err != nil {
		return m, err
	}
	if m.local, err = num("LOCAL_RANK"); err != nil {
		return m, err
	}
	if m.rank >= m.world {
		return m, fmt.Errorf("RANK %d is not below WORLD_SIZE %d", m.rank, m.world)
	}
	addr, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT")
	if addr == "" || port == "" {
		return m, errors.New("MASTER_ADDR and MASTER_PORT must be set (run under gpulaunch --ddp)")
	}
	m.addr = net.JoinHostPort(addr, port)
	m.host, _ = os.Hostname()
	return m, nil
}

func (m member) line() string {
	return fmt.Sprintf("rank=%d world=%d local=%d host=%s\n", m.rank, m.world, m.local, m.host)
}

func parseLine(s string) (member, error) {
	var m member
	_, err := fmt.Sscanf(strings.TrimSpace(s), "rank=%d world=%d local=%d host=%s", &m.rank, &m.world, &m.local, &m.host)
	return m, err
}

// serve is rank 0: it hears every other rank, then tells each the verdict.
func serve(me member, timeout time.Duration, out *os.File) error {
	_, port, _ := net.SplitHostPort(me.addr)
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return fmt.Errorf("listening on MASTER_PORT %s: %w", port, err)
	}
	defer l.Close()
	deadline := time.Now().Add(timeout)
	l.(*net.TCPListener).SetDeadline(deadline)
	seen := map[int]member{0: me}
	var conns []net.Conn
	var problems []string
	// Each other instance connects once: WORLD_SIZE-1 connections, then
	// whatever rank was not among them is missing.
	for len(conns) < me.world-1 {
		c, err := l.Accept()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%d of %d other ranks connected within %s", len(conns), me.world-1, timeout))
			break
		}
		conns = append(conns, c)
		c.SetDeadline(deadline)
		s, err := bufio.NewReader(c).ReadString('\n')
		m, perr := parseLine(s)
		switch {
		case err != nil || perr != nil:
			problems = append(problems, fmt.Sprintf("%s sent %q", c.RemoteAddr(), s))
		case m.world != me.world:
			problems = append(problems, fmt.Sprintf("rank %d on %s has WORLD_SIZE %d, rank 0 has %d", m.rank, m.host, m.world, me.world))
		case m.rank == 0 || m.rank >= me.world:
			problems = append(problems, fmt.Sprintf("rank %d on %s is not in 1..%d", m.rank, m.host, me.world-1))
		default:
			if prev, dup := seen[m.rank]; dup {
				problems = append(problems, fmt.Sprintf("rank %d twice: on %s and on %s", m.rank, prev.host, m.host))
				continue
			}
			seen[m.rank] = m
		}
	}
	var missing []string
	for r := 1; r < me.world; r++ {
		if _, ok := seen[r]; !ok {
			missing = append(missing, strconv.Itoa(r))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "never heard rank(s) "+strings.Join(missing, ","))
	}
	verdict := "ok\n"
	if len(problems) > 0 {
		verdict = "fail: " + strings.Join(problems, "; ") + "\n"
	}
	for _, c := range conns {
		c.Write([]byte(verdict))
		c.Close()
	}
	if len(problems) > 0 {
		return errors.New(strings.TrimSpace(verdict))
	}
	perHost := map[string]int{}
	for _, m := range seen {
		perHost[m.host]++
	}
	var hosts []string
	for h, n := range perHost {
		hosts = append(hosts, fmt.Sprintf("%s x%d", h, n))
	}
	sort.Strings(hosts)
	fmt.Fprintf(out, "rendezvous: world %d: ranks 0..%d each once (%s)\n", me.world, me.world-1, strings.Join(hosts, ", "))
	return nil
}

// join is every other rank: it reaches rank 0, retrying while rank 0 is
// not listening yet, and waits for the verdict.
func join(me member, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var c net.Conn
	var err error
	for {
		if c, err = net.DialTimeout("tcp", me.addr, time.Until(deadline)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("could not reach rank 0 at %s within %s: %w", me.addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c.Close()
	c.SetDeadline(deadline.Add(5 * time.Second))
	if _, err := c.Write([]byte(me.line())); err != nil {
		return err
	}
	verdict, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no verdict from rank 0 at %s: %w", me.addr, err)
	}
	if v := strings.TrimSpace(verdict); v != "ok" {
		return errors.New("rank 0 says " + v)
	}
	return nil
}
