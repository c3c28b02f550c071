package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// mono returns CLOCK_MONOTONIC in nanoseconds, the clock the replicas
// stamp their events with (shared by every process on the host).
func mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// event is one line of a replica's event log; see Event in
// examples/fencedledger/events.go for the meaning of each kind.
type event struct {
	T        int64  `json:"t"`
	Ev       string `json:"ev"`
	Name     string `json:"name"`
	Term     uint64 `json:"term"`
	Seq      int64  `json:"seq"`
	T0       int64  `json:"t0"`
	OK       bool   `json:"ok"`
	Err      string `json:"err"`
	LeaseEnd int64  `json:"lease_end"`
	Rating   int64  `json:"rating"`

	who int // the incarnation that logged it (index into cluster.incs)
}

// incarnation is one run of one replica's process.
type incarnation struct {
	member int
	cmd    *exec.Cmd
	log    string // its event log
	off    int64  // bytes of log read so far
	part   []byte // an unfinished last line
	exited chan struct{}
	exitT  int64 // mono time its exit was seen
}

// member is one replica: its name, gossip address and rating.
type member struct {
	name   string
	addr   string
	rating int64
	inc    int  // its current incarnation
	alive  bool // its process runs (it may be stopped)
	paused bool
}

// cluster runs the replicas' processes and reads their event logs.
type cluster struct {
	bin, dir, db string
	quorum       int
	members      []*member
	incs         []*incarnation
	events       []event // every event read so far, per incarnation in order
}

// freePort returns a port free for both TCP and UDP on 127.0.0.1.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free for TCP and UDP")
}

// newCluster starts n replicas rated 1..n sharing one database in dir.
func newCluster(bin, dir string, n, quorum int) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir, db: filepath.Join(dir, "ledger.db"), quorum: quorum}
	for i := range n {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, &member{name: fmt.Sprintf("m%d", i+1),
			addr: fmt.Sprintf("127.0.0.1:%d", port), rating: int64(i + 1)})
	}
	for i := range c.members {
		if err := c.start(i); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	return c, nil
}

// start starts member i's process (a new incarnation).
func (c *cluster) start(i int) error {
	m := c.members[i]
	var seeds []string
	for _, o := range c.members {
		if o != m {
			seeds = append(seeds, o.addr)
		}
	}
	inc := &incarnation{member: i, exited: make(chan struct{}),
		log: filepath.Join(c.dir, fmt.Sprintf("%s.%d.jsonl", m.name, len(c.incs)))}
	stderr, err := os.Create(strings.TrimSuffix(inc.log, ".jsonl") + ".stderr")
	if err != nil {
		return err
	}
	inc.cmd = exec.Command(c.bin, "-name", m.name, "-bind", m.addr, "-join", strings.Join(seeds, ","),
		"-db", c.db, "-quorum", strconv.Itoa(c.quorum), "-rating", strconv.FormatInt(m.rating, 10),
		"-events", inc.log)
	inc.cmd.Stdout, inc.cmd.Stderr = stderr, stderr
	if err := inc.cmd.Start(); err != nil {
		_ = stderr.Close()
		return err
	}
	go func() {
		_ = inc.cmd.Wait()
		_ = stderr.Close()
		inc.exitT = mono()
		close(inc.exited)
	}()
	m.inc, m.alive, m.paused = len(c.incs), true, false
	c.incs = append(c.incs, inc)
	return nil
}

// signal sends sig to member i's current process.
func (c *cluster) signal(i int, sig syscall.Signal) error {
	return c.incs[c.members[i].inc].cmd.Process.Signal(sig)
}

// kill sends sig (SIGKILL or SIGTERM) to member i and waits for its exit.
func (c *cluster) kill(i int, sig syscall.Signal, timeout time.Duration) error {
	inc := c.incs[c.members[i].inc]
	if c.members[i].paused {
		_ = inc.cmd.Process.Signal(syscall.SIGCONT)
	}
	if err := inc.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-inc.exited:
	case <-time.After(timeout):
		_ = inc.cmd.Process.Kill()
		<-inc.exited
	}
	c.members[i].alive = false
	return nil
}

// stopAll ends every process still running (SIGKILL) and waits for them.
func (c *cluster) stopAll() {
	for _, inc := range c.incs {
		select {
		case <-inc.exited:
		default:
			_ = inc.cmd.Process.Signal(syscall.SIGCONT)
			_ = inc.cmd.Process.Kill()
			<-inc.exited
		}
	}
}

// poll reads the new lines of every incarnation's log and returns the new
// events; ratings follow the rating events.
func (c *cluster) poll() []event {
	var out []event
	for who, inc := range c.incs {
		f, err := os.Open(inc.log)
		if err != nil {
			continue // not created yet
		}
		st, err := f.Stat()
		if err != nil || st.Size() <= inc.off {
			_ = f.Close()
			continue
		}
		buf := make([]byte, st.Size()-inc.off)
		n, _ := f.ReadAt(buf, inc.off)
		_ = f.Close()
		inc.off += int64(n)
		data := append(inc.part, buf[:n]...)
		last := bytes.LastIndexByte(data, '\n')
		inc.part = append([]byte(nil), data[last+1:]...)
		for _, line := range bytes.Split(data[:last+1], []byte{'\n'}) {
			var ev event
			if len(line) == 0 || json.Unmarshal(line, &ev) != nil {
				continue
			}
			ev.who = who
			if ev.Ev == "rating" {
				c.members[inc.member].rating = ev.Rating
			}
			out = append(out, ev)
		}
	}
	c.events = append(c.events, out...)
	return out
}

// top returns the live member with the highest rating: the one that
// should lead once the cluster has settled.
func (c *cluster) top() int {
	best := -1
	for i, m := range c.members {
		if m.alive && (best < 0 || m.rating > c.members[best].rating ||
			m.rating == c.members[best].rating && m.name > c.members[best].name) {
			best = i
		}
	}
	return best
}
