package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A shard is one process of a cluster spread over -procs processes
// (coordbench idle -procs K): it runs the members the parent assigns to
// it, as benchCluster runs them in one process, and takes the parent's
// commands on stdin, one JSON object a line (shardCmd), answering each on
// stdout (shardLine with Re set). Between commands it reads its members'
// leadership every failover.Poll and writes a line (shardLine with Look
// set) whenever its summary changes: the parent learns of every change
// without polling the processes, and the time in the line is the shard's
// clock (one machine, one clock), so a failover is timed to the
// millisecond whichever process saw it last.
//
// The subcommand is internal: the parent starts it with the cluster's
// options (the flags of benchFlags, -quorum and -bind), not a user.

const shardSynopsis = `usage: coordbench shard [flags]

Internal: one process of 'coordbench idle -procs K'. Reads commands on
stdin and answers on stdout, one JSON object a line.`

// shardCmd is a command of the parent.
type shardCmd struct {
	// Op is start (a member, with Name, Seeds, Elector), crash (Name),
	// watch (On: write a look whenever the summary changes; off: stop),
	// look (answer with the summary), counts, heap or stop.
	Op      string   `json:"op"`
	On      bool     `json:"on,omitempty"`
	Name    string   `json:"name,omitempty"`
	Seeds   []string `json:"seeds,omitempty"`
	Elector bool     `json:"elector,omitempty"`
}

// shardLook is a shard's summary of its running members' leadership.
type shardLook struct {
	// Running counts the members whose elector runs.
	Running int `json:"running"`
	// Agreed: every running member reports the same coordinator and term
	// (Coord, Term).
	Agreed bool   `json:"agreed"`
	Coord  string `json:"coord,omitempty"`
	Term   uint64 `json:"term,omitempty"`
	// At is when the shard saw this summary first (Unix nanoseconds).
	At int64 `json:"at"`
	// Won names the last member of this shard seen reporting itself
	// coordinator in a term of its own (WonTerm), and WonAt when the
	// shard first saw it: with the agreement's time, it splits a
	// failover into the election and the announcement's spread.
	Won     string `json:"won,omitempty"`
	WonTerm uint64 `json:"won_term,omitempty"`
	WonAt   int64  `json:"won_at,omitempty"`
}

// shardLine is one line a shard writes: an answer (Re) or a look.
type shardLine struct {
	Re   bool       `json:"re,omitempty"`
	Err  string     `json:"err,omitempty"`
	Look *shardLook `json:"look,omitempty"`
	// start: the member's address.
	Addr string `json:"addr,omitempty"`
	// counts: per member (by name) messages sent by type; elections
	// started and heartbeats missed, summed over the shard's members.
	Sent    map[string][]uint64 `json:"sent,omitempty"`
	Started uint64              `json:"started,omitempty"`
	Misses  uint64              `json:"misses,omitempty"`
	// heap: the live heap after two collections, the goroutine stacks and
	// the goroutines.
	Heap       uint64 `json:"heap,omitempty"`
	Stacks     uint64 `json:"stacks,omitempty"`
	Goroutines int    `json:"goroutines,omitempty"`
}

func runShard(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var alg algorithmFlag
	index := 0
	o, err := parseBench("shard", 100, shardSynopsis, args, stdout, func(fs *flag.FlagSet, o *benchOptions) {
		fs.IntVar(&index, "index", 0, "this shard's number among the parent's (its health log's name)")
		fs.IntVar(&o.quorum, "quorum", 0, "the electors' QuorumSize")
		fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound of a wait")
		fs.StringVar(&o.bind, "bind", "127.0.0.1", "the address the members bind to")
		fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson")
	}, func(o *benchOptions) error {
		o.alg = alg.a
		return checkQuorum(o)
	})
	if err != nil {
		return err
	}
	s := &shard{c: newBenchCluster(o, hclog.New(&hclog.LoggerOptions{Name: "shard", Output: stderr, Level: hclog.Warn})),
		out: json.NewEncoder(stdout)}
	s.c.bindAddr = o.bind
	s.c.started.Store(true) // no progress log: the parent logs the start
	defer s.c.stop()
	if o.health > 0 { // each process logs its own runtime and memberlist health
		sink, err := installHealthSink()
		if err != nil {
			return err
		}
		log := hclog.New(&hclog.LoggerOptions{Name: fmt.Sprintf("shard%d", index), Output: stderr, Level: hclog.Info})
		s.c.health, s.c.stopHealth = sink, logHealth(log, sink, o.health)
	}
	cmds := make(chan shardCmd)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			var c shardCmd
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				readErr <- fmt.Errorf("shard: command %q: %w", sc.Text(), err)
				return
			}
			select {
			case cmds <- c:
			case <-ctx.Done():
				return
			}
		}
		readErr <- errors.Join(sc.Err(), io.EOF) // the parent went away
	}()
	tick := time.NewTicker(lookEvery)
	tick.Stop() // until the parent asks to watch
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case c := <-cmds:
			if c.Op == "stop" {
				return s.write(shardLine{Re: true})
			}
			if c.Op == "watch" {
				if s.watching = c.On; c.On {
					tick.Reset(lookEvery)
				} else {
					tick.Stop()
				}
			}
			if err := s.write(s.do(c)); err != nil {
				return err
			}
			if s.watching {
				s.look() // a start or crash changes the summary
			}
		case <-tick.C:
			s.look()
		}
	}
}

// lookEvery is how often a shard reads its members' leadership: the
// failover driver's poll, so that the times match one process's.
const lookEvery = time.Millisecond

// shard is the state of one shard process; its methods run on its main
// goroutine.
type shard struct {
	c    *benchCluster
	out  *json.Encoder
	mu   sync.Mutex // out
	last shardLook
	// watching: the parent waits for an agreement; look every lookEvery.
	watching bool
}

func (s *shard) write(l shardLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Encode(l)
}

// do runs one command and returns its answer.
func (s *shard) do(c shardCmd) shardLine {
	fail := func(err error) shardLine { return shardLine{Re: true, Err: err.Error()} }
	switch c.Op {
	case "start":
		b, err := s.node(c.Name)
		if err != nil {
			return fail(err)
		}
		if b.member != nil {
			return fail(fmt.Errorf("member %s runs already", c.Name))
		}
		b.seeds = append([]string{}, c.Seeds...) // never nil: the parent chose them
		if err := s.c.startNode(b, c.Elector); err != nil {
			return fail(err)
		}
		return shardLine{Re: true, Addr: b.mem.Addr()}
	case "crash":
		b, err := s.node(c.Name)
		if err != nil {
			return fail(err)
		}
		if err := s.c.crash(b); err != nil {
			return fail(err)
		}
		return shardLine{Re: true}
	case "counts":
		l := shardLine{Re: true, Sent: map[string][]uint64{}}
		for _, b := range s.c.nodes {
			if b.port == 0 {
				continue // never started here
			}
			sent := b.count.load()
			l.Sent[b.name] = sent[:]
		}
		l.Started, l.Misses = s.c.electionsStarted(), s.c.heartbeatMisses()
		return l
	case "watch", "look":
		s.look()
		l := s.last
		return shardLine{Re: true, Look: &l}
	case "heap":
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return shardLine{Re: true, Heap: ms.HeapAlloc, Stacks: ms.StackInuse, Goroutines: runtime.NumGoroutine()}
	}
	return fail(fmt.Errorf("unknown op %q", c.Op))
}

// node returns the member named name, of the cluster's -n.
func (s *shard) node(name string) (*benchNode, error) {
	i, err := memberIndex(name, len(s.c.nodes))
	if err != nil {
		return nil, err
	}
	return s.c.nodes[i-1], nil
}

// memberIndex reads a member's name, its index 1 to n in the cluster.
func memberIndex(name string, n int) (int, error) {
	i, err := strconv.Atoi(name)
	if err != nil || i < 1 || i > n {
		return 0, fmt.Errorf("no member %q (want 1 to %d)", name, n)
	}
	return i, nil
}

// look reads the running members' leadership and, if it changed, keeps
// the summary in s.last and, while watching, writes it. It allocates
// nothing unless it writes.
func (s *shard) look() {
	var l shardLook
	first := true
	l.Agreed = true
	won, wonTerm := "", uint64(0) // the highest-rated member that reports itself
	for _, b := range s.c.nodes {
		if b.el == nil {
			continue
		}
		l.Running++
		id, tm, has := b.el.Leader()
		if has && id == b.name {
			won, wonTerm = id, tm // s.c.nodes is in rating order
		}
		if !has || !first && (id != l.Coord || tm != l.Term) {
			l.Agreed = false
		}
		if first {
			l.Coord, l.Term, first = id, tm, false
		}
	}
	if first || !l.Agreed {
		l.Agreed, l.Coord, l.Term = false, "", 0
	}
	l.Won, l.WonTerm, l.WonAt = s.last.Won, s.last.WonTerm, s.last.WonAt
	if won != "" && (won != l.Won || wonTerm != l.WonTerm) {
		l.Won, l.WonTerm, l.WonAt = won, wonTerm, 0
	}
	same := l.Running == s.last.Running && l.Agreed == s.last.Agreed && l.Coord == s.last.Coord && l.Term == s.last.Term && s.last.At != 0
	newWin := l.Won != "" && l.WonAt == 0
	if same && !newWin {
		return
	}
	now := time.Now().UnixNano()
	l.At = now
	if same {
		l.At = s.last.At // the summary did not change, only who won
	}
	if newWin {
		l.WonAt = now
	}
	s.last = l
	if s.watching {
		_ = s.write(shardLine{Look: &l}) // a broken pipe ends the shard at its next command
	}
}
