package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/membership/membershiptest"
	"github.com/coordelect/coordelect/metrics"
)

// commandsHelp ends the usage of demo -h: the commands besides the default.
const commandsHelp = `
Commands:
  demo [flags]                        the live local cluster and its web page (the flags below)
  demo node -name NAME [flags]        one node, for clusters across processes and hosts
  demo sim [flags]                    one simulated election, or a scenario file, or an exploration
  demo help [COMMAND]                 this text, or a command's (the same as demo COMMAND -h)

Measurements (failover, soak, memory) are the bench module's coordbench:
  (cd bench && go run ./cmd/coordbench -h)`

const clusterSynopsis = `usage: demo [flags]

Runs a live coordelect cluster in this process: N nodes named 1..N with
ratings 1..N, each a real memberlist member on its own 127.0.0.1 port with an
elector on top running the unnamed election and the named ones of -jobs, and
a web page to watch them and break them (crash, restart, partition, heal,
resign, change a rating). Per node, /nodes/NAME/status,
/nodes/NAME/metrics and /nodes/NAME/healthz serve what 'demo node' serves.
` + commandsHelp + `

Flags of the live local cluster:`

// maxClusterSize bounds -n: the page draws every node on one ring.
const maxClusterSize = 16

// clusterOptions is a validated command line of the local cluster.
type clusterOptions struct {
	n      int
	alg    core.Algorithm
	http   string
	key    []byte
	quorum int
	level  hclog.Level
	jobs   []string // the named elections every node runs (-jobs)
}

// parseClusterFlags parses and checks every flag, so that nothing starts
// unless all of them are good.
func parseClusterFlags(args []string, stdout io.Writer) (*clusterOptions, error) {
	var (
		o     = &clusterOptions{}
		alg   algorithmFlag
		key   string
		jobs  string
		level = levelFlag{hclog.Error}
	)
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 5, fmt.Sprintf("number of nodes, 1 to %d", maxClusterSize))
	fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson")
	fs.StringVar(&o.http, "http", "127.0.0.1:8080", "HOST:PORT of the web page; port 0 picks one")
	fs.StringVar(&key, "key", "", "gossip encryption key, base64 of 16, 24 or 32 bytes")
	fs.IntVar(&o.quorum, "quorum", 0, "quorum guard: S = the cluster size -n; 0 turns it off (a partition then elects one coordinator per side)")
	fs.StringVar(&jobs, "jobs", strconv.Itoa(defaultJobs), jobsUsage)
	fs.Var(&level, "log-level", "level of the nodes' own logs (elector, membership, memberlist): trace, debug, info, warn, error or off")
	if err := parseFlags(fs, args, stdout, clusterSynopsis); err != nil {
		return nil, err
	}
	o.alg, o.level = alg.a, level.l
	var err error
	switch {
	case o.n < 1 || o.n > maxClusterSize:
		return nil, usagef("-n %d: want 1 to %d nodes", o.n, maxClusterSize)
	case o.quorum < 0 || o.quorum > o.n:
		return nil, usagef("-quorum %d: want 0 (off) to -n = %d", o.quorum, o.n)
	case o.quorum > 0 && 2*(o.quorum/2+1) <= o.n:
		want := fmt.Sprintf("%d to %d", minQuorum(o.n), o.n)
		if minQuorum(o.n) == o.n {
			want = strconv.Itoa(o.n)
		}
		return nil, usagef("-quorum %d: a majority of %d is %d nodes, which both sides of a partition of %d can hold (two coordinators); want 0 (off) or %s",
			o.quorum, o.quorum, o.quorum/2+1, o.n, want)
	}
	if _, _, err = checkHostPort("http", o.http, false, 0); err != nil {
		return nil, err
	}
	if o.jobs, err = parseJobs(jobs, maxJobs); err != nil {
		return nil, err
	}
	o.key, err = decodeKey(key)
	return o, err
}

// minQuorum is the smallest quorum size whose majority no two disjoint
// sides of n nodes can both hold.
func minQuorum(n int) int {
	s := 1
	for 2*(s/2+1) <= n {
		s++
	}
	return s
}

// localCluster is the demo's cluster: every node a real membership.Node
// on 127.0.0.1, all over one membershiptest.FaultNetwork so that the page can
// partition them. Actions (crash, restart, ...) run one at a time.
type localCluster struct {
	opts    *clusterOptions
	log     hclog.Logger // the demo's own lines
	nodeLog hclog.Logger // the nodes' logs
	net     *membershiptest.FaultNetwork
	sink    *metrics.MemberlistSink // nil: no memberlist metrics
	events  *hub
	slots   []*slot
	// wake (capacity 1) tells the watcher that a node published a new
	// leadership; observers tracks the goroutines that do.
	wake      chan struct{}
	observers sync.WaitGroup

	mu     sync.Mutex                 // serialises actions
	groups atomic.Pointer[[][]string] // the partition, nil when healed

	// lostAt is the last disruption since the cluster had an agreed
	// coordinator (nil while it has one): the latest action, or the moment
	// the agreement was lost. The next agreement reports its delay from it.
	lostAt atomic.Pointer[disruption]
}

// disruption is a moment the cluster may have lost its agreed coordinator,
// and what happened then ("the heal", "the crash of 5").
type disruption struct {
	at    time.Time
	cause string
}

// slot is one node of the local cluster across its restarts.
type slot struct {
	name   string
	port   int                    // the memberlist port, kept across restarts
	addr   atomic.Pointer[string] // see address
	tally  *tally
	rating atomic.Int64         // the last rating set, used at restart
	peer   atomic.Pointer[peer] // nil while crashed
	// resigned is set when the node resigns and cleared when its rating
	// changes or it crashes: a resigned node that leads again was taken
	// back by the bully rule, which the page explains.
	resigned atomic.Bool
}

// address is the node's advertised "127.0.0.1:port".
func (s *slot) address() string { return *s.addr.Load() }

// setAddr records the node's address; s.port is only used under
// localCluster.mu or before the cluster starts.
func (s *slot) setAddr(addr string) {
	_, port, _ := net.SplitHostPort(addr)
	s.addr.Store(&addr)
	s.port, _ = strconv.Atoi(port)
}

// demoTimings tunes memberlist's "local" profile for loopback: a crashed
// member is declared dead within about a second (probe every 200 ms, 100 ms
// timeout, then 400 ms of suspicion), and a restarted one is seen at once.
// The electors do not wait for it: their coordinator heartbeat finds a
// crashed coordinator first (K·H = 150 ms with the defaults). Packets go
// uncompressed.
func demoTimings(mc *memberlist.Config) {
	mc.ProbeInterval = 200 * time.Millisecond
	mc.ProbeTimeout = 100 * time.Millisecond
	mc.SuspicionMult = 2
	mc.GossipInterval = 50 * time.Millisecond
	mc.PushPullInterval = 5 * time.Second
	mc.GossipToTheDeadTime = 5 * time.Second
	mc.DeadNodeReclaimTime = time.Second // a restart on a new port
	// Loopback has bandwidth to spare; LZW's tables, allocated for every
	// packet, would cost more CPU than all of the elections.
	mc.EnableCompression = false
}

// newLocalCluster prepares the cluster; start starts its nodes.
func newLocalCluster(o *clusterOptions, logger, nodeLog hclog.Logger, sink *metrics.MemberlistSink) *localCluster {
	c := &localCluster{opts: o, log: logger, nodeLog: nodeLog, sink: sink, events: newHub(), wake: make(chan struct{}, 1)}
	c.net = membershiptest.NewFaultNetwork(1, nodeLog)
	for i := range o.n {
		s := &slot{name: strconv.Itoa(i + 1)}
		s.rating.Store(int64(i + 1))
		s.tally = &tally{onEvent: func(e nodeEvent) { c.nodeEvent(s.name, e) }}
		c.slots = append(c.slots, s)
	}
	return c
}

// start starts every node at once: each joins all the others, so they
// must all be up for the joins to finish.
func (c *localCluster) start() error {
	trs := make([]*membershiptest.FaultTransport, len(c.slots))
	for i, s := range c.slots {
		tr, err := c.net.Listen(s.name, "127.0.0.1", 0)
		if err != nil {
			closeAll(trs)
			return fmt.Errorf("node %s: %w", s.name, err)
		}
		trs[i] = tr
		s.setAddr(tr.Addr())
	}
	errs := make([]error, len(c.slots))
	var wg sync.WaitGroup
	for i, s := range c.slots {
		wg.Go(func() { errs[i] = c.startSlot(s, trs[i], true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.stop()
		return err
	}
	return nil
}

func closeAll(trs []*membershiptest.FaultTransport) {
	for _, tr := range trs {
		if tr != nil {
			_ = tr.Shutdown()
		}
	}
}

// startSlot starts s's node on tr; initial: at the cluster's start.
func (c *localCluster) startSlot(s *slot, tr *membershiptest.FaultTransport, initial bool) error {
	p, err := startPeer(peerConfig{
		mem: c.memberConfig(s, tr), el: c.electorConfig(s, initial),
		sink: c.sink, labelNode: true, extra: s.tally, jobs: c.opts.jobs,
	})
	if err != nil {
		_ = tr.Shutdown()
		return fmt.Errorf("node %s: %w", s.name, err)
	}
	s.peer.Store(p)
	c.observe(p.el.Observe()) // closed when the elector stops
	for _, j := range p.jobs {
		c.observe(j.Observe()) // closed when the elector stops, as well
	}
	return nil
}

// observe wakes the watcher at every leadership published on leadership,
// until it is closed.
func (c *localCluster) observe(leadership <-chan election.Leadership) {
	c.observers.Go(func() {
		for range leadership {
			select {
			case c.wake <- struct{}{}:
			default: // the watcher is due to look already
			}
		}
	})
}

func (c *localCluster) memberConfig(s *slot, tr *membershiptest.FaultTransport) membership.Config {
	m := membership.DefaultConfig()
	m.Name = s.name
	m.Transport = tr
	for _, o := range c.slots {
		if o != s {
			m.Seeds = append(m.Seeds, o.address())
		}
	}
	m.Rating = s.rating.Load()
	m.Algorithm = c.opts.alg
	m.Profile = membership.ProfileLocal
	m.Memberlist = demoTimings
	m.RejoinInterval = time.Second // a healed partition merges within about a second
	m.SecretKey = c.opts.key
	m.Logger = c.nodeLog.With("node", s.name)
	return m
}

// electorConfig is s's elector configuration. At the cluster's start every
// node expects all -n voters, so that the first election is the only one;
// a node restarted later expects the default (another voter: it has
// seeds), and hears the running coordinator anyway.
func (c *localCluster) electorConfig(s *slot, initial bool) election.Config {
	cfg := election.Config{
		QuorumSize: c.opts.quorum,
		Logger:     c.nodeLog,
	}
	if initial {
		cfg.ExpectVoters = c.opts.n
	}
	return cfg
}

// stop stops every running node gracefully, at the same time.
func (c *localCluster) stop() {
	var wg sync.WaitGroup
	for _, s := range c.slots {
		if p := s.peer.Swap(nil); p != nil {
			wg.Go(func() {
				if err := p.stop(time.Second); err != nil {
					c.log.Warn("node did not stop cleanly", "node", s.name, "error", err)
				}
			})
		}
	}
	wg.Wait()
	c.observers.Wait()
}

// errNoNode is a node name the cluster does not have.
var errNoNode = errors.New("no node")

// slot returns the node called name.
func (c *localCluster) slot(name string) (*slot, error) {
	for _, s := range c.slots {
		if s.name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w %q", errNoNode, name)
}

// running returns the node's peer, or errNodeDown.
func (c *localCluster) running(name string) (*peer, error) {
	s, err := c.slot(name)
	if err != nil {
		return nil, err
	}
	if p := s.peer.Load(); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("node %s: %w", name, errNodeDown)
}

// names lists the node names in ring order.
func (c *localCluster) names() []string {
	out := make([]string, len(c.slots))
	for i, s := range c.slots {
		out[i] = s.name
	}
	slices.SortFunc(out, core.CompareID)
	return out
}

// waitCtx bounds an action that waits on a node.
func waitCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}
