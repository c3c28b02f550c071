package membership

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// Node is one member of a memberlist cluster, and the election.Transport
// of its elector: it reports who is alive (with their ratings) as Events,
// and carries core.Messages between members.
//
// Lifecycle: New creates the memberlist (listening at once), joins the
// Seeds, and starts the Node's goroutine, the dispatcher (memberlist
// callbacks to Events), and its timers. Other goroutines run only while
// they have work (background.go): a link's sender while frames wait for
// its peer, the rating publisher after SetRating, the joiner when a join
// is due, the shutdown after a fatal error. Leave announces a graceful
// exit; Close stops everything (without Leave, other members see a crash). All
// methods are safe for concurrent use; Send and SetRating never wait on
// the network.
type Node struct {
	cfg   Config
	log   hclog.Logger
	boot  uint64
	addr  string
	ml    *memberlist.Memberlist
	del   *delegate
	inbox *inbox
	table *table
	out   *sender
	disp  *dispatcher
	stats counters

	metaMu     sync.Mutex
	meta       meta
	publisher  onDemand // re-advertises the metadata (publish)
	updateWait time.Duration

	bg         spawner  // the on-demand goroutines and the timers
	joiner     onDemand // makes the joins due (runJoins)
	jobs       joinJobs
	rejoinWait time.Duration          // until the seeds' next turn; owned by the joiner
	rejoinT    *time.Timer            // the seeds' turn; under bg's lock
	departedT  *time.Timer            // the departed members' turn (every fastRejoinWait); under bg's lock
	joined     atomic.Bool            // a join has reached a member (seed or other)
	joinErr    atomic.Pointer[string] // the last join's error, "" after a success

	failOnce sync.Once
	failErr  atomic.Pointer[error]
	failed   chan struct{} // closed by fail
	created  chan struct{} // closed once ml is set

	stop   chan struct{}
	wg     sync.WaitGroup
	lifeMu sync.Mutex // serialises Leave and Close
	closed atomic.Bool
}

var (
	_ election.StartupTransport = (*Node)(nil)
	_ election.BatchTransport   = (*Node)(nil)
)

// New fills in the defaults of cfg's zero Options (Options.WithDefaults),
// validates cfg, creates the memberlist, joins cfg.Seeds once and
// starts the Node. Failing to reach any seed is logged, not returned: the
// first members of a cluster start before their seeds, and the re-joiner
// tries again every RejoinInterval (call Join to see the error instead).
// A seed that answers but refuses this node is returned: a *NameTakenError
// when a live member already holds cfg.Name. The events for the
// members already present are queued for Events when New returns.
func New(cfg Config) (*Node, error) {
	cfg.Options = cfg.Options.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, mc, err := newNode(cfg)
	if err != nil {
		return nil, err
	}
	if mc.Transport == nil {
		// Ours rather than memberlist's NetTransport: the same sockets,
		// without a 64 KiB allocation per datagram (transport.go).
		t, err := newNetTransport(mc.BindAddr, mc.BindPort, mc.Logger)
		if err != nil {
			return nil, err
		}
		mc.Transport, mc.BindPort = t, t.port
		if mc.AdvertiseAddr != "" && mc.AdvertisePort == 0 {
			mc.AdvertisePort = t.port
		}
	}
	n.goFunc(func() { n.disp.run(n.stop, n.failed) })
	if n.ml, err = memberlist.Create(mc); err != nil {
		close(n.stop)
		n.wg.Wait()
		_ = mc.Transport.Shutdown() // memberlist does on some paths only
		return nil, fmt.Errorf("membership: starting memberlist: %w", err)
	}
	n.out.ml = n.ml
	n.addr = n.ml.LocalNode().FullAddress().Addr
	close(n.created)
	if len(cfg.Seeds) > 0 {
		if _, err := n.Join(cfg.Seeds...); err != nil && !errors.Is(err, errOnlySelf) && n.Err() == nil {
			if kerr := keyRefused(err); kerr != nil {
				n.fail(kerr)
			} else {
				n.warnJoin(cfg.Seeds, err)
			}
		} else if top := n.del.guard.topVoter(); err == nil && top != "" && !slices.Contains(cfg.Seeds, top) {
			n.introduce(top)
		}
	}
	// A join that found this node's name at another address checks it
	// (restart.go): a live process there fails New, an earlier life does not.
	n.del.guard.awaitChecks(n.failed)
	n.del.guard.started()
	if err := n.Err(); err != nil {
		_ = n.Close()
		return nil, err
	}
	n.startJoiner()
	n.log.Info("member started", "name", cfg.Name, "addr", n.addr, "boot", n.boot)
	return n, nil
}

// warnJoin logs why the first join reached no seed: none answered, or one
// answered and then closed the exchange, which is what a member does with
// a stream it cannot decrypt or whose label differs.
func (n *Node) warnJoin(seeds []string, err error) {
	if unreachable(err) {
		// A cold start meets this whenever the seed is not up yet: one
		// line at INFO, the error on one line.
		n.log.Info("no seed reachable yet; running alone and retrying", "seeds", seeds,
			"error", strings.Join(strings.Fields(err.Error()), " "))
		return
	}
	n.log.Error("a seed answered but the join failed: a key or label mismatch? (the seed logs \"key mismatch\")",
		"seeds", seeds, "error", err)
}

// KeyMismatchError is a join that reached a member of the cluster whose
// gossip this node cannot read, or that cannot read this node's: the two
// run with different Config.SecretKey (or Keyring), or one with none. It
// is a configuration error: New returns it for the seeds' first join, and
// a node that has never joined fails with it (Err) when a later join
// meets it.
type KeyMismatchError struct {
	// Seed is the address that answered; Reason is memberlist's words.
	Seed, Reason string
}

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("membership: Config.SecretKey: the member at %s uses another key (or none): %s; it cannot join", e.Seed, e.Reason)
}

// keyReasons are memberlist's (v0.7.0) errors for state it could not
// decrypt, or that was not encrypted as this node's is.
var keyReasons = []string{
	"no installed keys could decrypt the message",
	"remote state is encrypted and encryption is not configured",
	"encryption is configured but remote state is not encrypted",
}

// keyRefused returns a *KeyMismatchError when a join error says that a seed
// answered with state under another key, else nil.
func keyRefused(err error) error {
	for _, line := range strings.Split(err.Error(), "\n") {
		for _, r := range keyReasons {
			if !strings.Contains(line, r) {
				continue
			}
			seed := ""
			if _, rest, ok := strings.Cut(line, "failed to join "); ok {
				seed, _, _ = strings.Cut(rest, ": ")
			}
			return &KeyMismatchError{Seed: seed, Reason: r}
		}
	}
	return nil
}

// unreachable reports whether a join error says only that no seed could
// be connected to (as opposed to one that answered and then failed).
func unreachable(err error) bool {
	s := err.Error()
	for _, sub := range []string{"connection refused", "i/o timeout", "no route to host", "network is unreachable", "failed to resolve", "no such host"} {
		if !strings.Contains(s, sub) {
			continue
		}
		if strings.Count(s, "failed to join") <= strings.Count(s, sub) {
			return true
		}
	}
	return false
}

// keyMismatch reports a packet or stream that no installed key decrypts:
// a member (or a would-be member) runs with another key or none.
func (n *Node) keyMismatch(line string) {
	if n.stats.keyMismatch.Add(1) == 1 {
		n.log.Error("key mismatch: a member or would-be member uses another SecretKey (or none); it cannot join",
			"memberlist", line)
	}
}

// fail records a fatal error: this node must not take part any more (it
// holds a name another member has, or it never joined and its key is not
// the cluster's). It never blocks, so memberlist's
// callbacks may call it: the dispatcher closes Events, which stops the
// elector, and a goroutine of its own runs shutdownOnFailure. The first
// error wins.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		n.failErr.Store(&err)
		close(n.failed)
		n.bg.goFunc(n.shutdownOnFailure)
	})
}

// Err returns the fatal error that stopped this node (see fail), or nil.
// Events is closed after a fatal error; an elector reading it then returns
// an error that wraps this one.
func (n *Node) Err() error {
	if p := n.failErr.Load(); p != nil {
		return *p
	}
	return nil
}

// shutdownOnFailure shuts memberlist down after a fatal error, without a
// leave message: a leave under a name another member holds would be taken
// as that member's. Close is still to be called (and shuts memberlist down
// itself if it comes first).
func (n *Node) shutdownOnFailure() {
	select {
	case <-n.stop:
	case <-n.created: // a failure during memberlist.Create is handled once it returns
		n.log.Error("leaving the cluster: fatal membership error", "error", n.Err())
		n.inbox.close()
		if err := n.ml.Shutdown(); err != nil {
			n.log.Warn("memberlist shutdown", "error", err)
		}
	}
}

// newNode builds the Node's parts and memberlist's configuration.
func newNode(cfg Config) (*Node, *memberlist.Config, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	logger = logger.Named("membership").With("node", cfg.Name)
	boot, err := newBootID()
	if err != nil {
		return nil, nil, err
	}
	n := &Node{cfg: cfg, log: logger, boot: boot,
		stop: make(chan struct{}), failed: make(chan struct{}), created: make(chan struct{})}
	n.bg.wg = &n.wg
	n.meta = meta{Rating: cfg.Rating, NonVoter: cfg.NonVoter, Boot: boot, Algorithm: cfg.Algorithm.String(), Payload: cfg.Payload,
		Quorum: uint64(cfg.QuorumSize), Heartbeat: uint64(cfg.HeartbeatInterval),
		Misses: uint64(cfg.HeartbeatMisses), Lease: uint64(cfg.QuorumLease)}
	n.inbox = newInbox(cfg.QueueSize, &n.stats)
	n.table = newTable(cfg.Name, n.meta, 0, logger, &n.stats) // forget: below, from memberlist's config
	n.del = &delegate{inbox: n.inbox, guard: newGuard(cfg.Name, n.meta, n.table, logger, &n.stats, n.fail),
		ack: binary.BigEndian.AppendUint64(nil, boot), rejoin: n.askJoin, keyMismatch: n.keyMismatch}
	n.del.guard.ping, n.del.guard.rejoin, n.del.guard.update = n.pingName, n.askJoin, n.inbox.push
	b := n.meta.encode()
	n.del.meta.Store(&b)
	mc := cfg.memberlistConfig(n.del, logger)
	n.updateWait = mc.GossipInterval
	n.table.forget = mc.GossipToTheDeadTime
	n.out = &sender{table: n.table, selfBoot: boot, queueSize: cfg.SendQueueSize,
		stats: &n.stats, log: logger, wg: &n.wg, links: make(map[string]*outLink),
		batchDatagram: batchDatagram(mc)}
	n.disp = &dispatcher{inbox: n.inbox, table: n.table, out: n.out,
		events: make(chan election.Event, eventBuffer), stats: &n.stats, log: logger,
		selfBoot: boot, hold: cfg.ReorderTimeout, maxMsgs: cfg.QueueSize, links: make(map[string]*inLink),
		rejoin: n.askJoin}
	return n, mc, nil
}

// newBootID returns a random non-zero 64-bit ID for this process start.
func newBootID() (uint64, error) {
	// The start time, so that boot IDs order a member's incarnations: a
	// receiver can tell a restart it has not heard of yet (a greater boot
	// ID: accept) from a frame of an earlier life (a smaller one: drop).
	// It holds as long as the clock does not step back across a restart;
	// if it does, frames wait for the new metadata, as with random IDs.
	id := uint64(time.Now().UnixNano())
	if id == 0 {
		return 0, fmt.Errorf("membership: boot ID: the clock reads the epoch")
	}
	return id, nil
}

func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Seeds counts the configured seeds other than this node's own address
// (election.StartupTransport: a node with seeds holds its first election
// back until it sees another voter).
func (n *Node) Seeds() int {
	k := 0
	for _, s := range n.cfg.Seeds {
		if s != n.addr {
			k++
		}
	}
	return k
}

// Spread is memberlist's gossip interval: the news of a member that joined
// reaches others about that much later (election.StartupTransport).
func (n *Node) Spread() time.Duration { return n.updateWait }

// LocalID is this node's name, its election ID (Identity().Name).
func (n *Node) LocalID() string { return n.cfg.Name }

// Addr is the "host:port" other members reach this node at (the port
// picked when Config.BindPort is 0); give it to others as a seed.
func (n *Node) Addr() string { return n.addr }

// BootID is this process's random boot ID, published in the metadata.
func (n *Node) BootID() uint64 { return n.boot }

// Events delivers messages and membership changes, in the order memberlist
// reported them; this node itself never appears. It is closed by Close,
// and after a fatal error (see Err).
// Membership events are never dropped; messages are dropped (and counted,
// DropQueueFull) only when Config.QueueSize of them already wait.
func (n *Node) Events() <-chan election.Event { return n.disp.events }

// Send queues m for m.To and returns without waiting on the network.
// Heartbeats go best effort (one UDP datagram); everything else reliably
// (TCP) and, per link, in order. An error means m was not queued:
// ErrClosed, ErrUnknownPeer (m.To is not an admitted live member),
// ErrQueueFull, ErrInvalid (m.From is not this node, or m cannot be
// encoded) or ErrTooLarge.
func (n *Node) Send(m core.Message) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	if m.From != n.cfg.Name {
		// The receiver would drop it: the boot ID would not be From's.
		return fmt.Errorf("%w: From %q is not this node", ErrInvalid, m.From)
	}
	return n.out.send(m)
}

// Named reports whether this node runs named elections
// (election.BatchTransport): unless Config.UnnamedOnly, it announces them
// to the others, and takes and sends batches and candidacies.
func (n *Node) Named() bool { return !n.cfg.UnnamedOnly }

// SendBatch queues the batch b for b.To and returns without waiting on
// the network (election.BatchTransport): its heartbeats and acks as
// datagrams (as many as they need, each at most maxDatagram bytes), the
// rest reliably and in order on the link's batch stream. b.To must run
// named elections (election.Event.Named), b.From be this node, and every
// pair's message be from b.From to b.To. An error means not every pair
// was queued: ErrClosed, ErrUnknownPeer, ErrQueueFull, ErrInvalid (also
// when b.To or this node runs no named elections) or ErrTooLarge. b is
// not kept.
func (n *Node) SendBatch(b group.Batch) error {
	if err := n.namedSendable(b.From); err != nil {
		return err
	}
	return n.out.sendBatch(b)
}

// SendCandidacy queues the candidacy statement c for c.To, reliably and in
// order with the batches to it (election.BatchTransport), with SendBatch's
// errors. c is not kept.
func (n *Node) SendCandidacy(c election.Candidacy) error {
	if err := n.namedSendable(c.From); err != nil {
		return err
	}
	return n.out.sendCandidacy(c)
}

// sendable reports why this node cannot send from from, if it cannot.
func (n *Node) sendable(from string) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	if from != n.cfg.Name {
		// The receiver would drop it: the boot ID would not be From's.
		return fmt.Errorf("%w: From %q is not this node", ErrInvalid, from)
	}
	return nil
}

// namedSendable is sendable for a batch or a candidacy statement, which
// only a node that runs named elections sends.
func (n *Node) namedSendable(from string) error {
	if err := n.sendable(from); err != nil {
		return err
	}
	if n.cfg.UnnamedOnly {
		return fmt.Errorf("%w: this node runs no named elections (Config.UnnamedOnly)", ErrInvalid)
	}
	return nil
}

// SetRating publishes this node's new rating in its metadata. The gossip
// happens in the background; peers see EventPeerRating. With an elector
// running on this node, call election.Elector.SetRating instead: it calls
// this, and ranks the node by the new rating itself.
func (n *Node) SetRating(rating int64) error {
	return n.updateMeta(func(m *meta) { m.Rating = rating })
}

// updateMeta changes this node's metadata and has it published.
func (n *Node) updateMeta(change func(*meta)) error {
	if n.closed.Load() {
		return ErrClosed
	}
	n.metaMu.Lock()
	change(&n.meta)
	b := n.meta.encode()
	n.del.meta.Store(&b)
	n.table.setSelfMeta(n.meta)
	n.metaMu.Unlock()
	n.publisher.kick(&n.bg, n.publish) // a publication already due reads the latest meta
	return nil
}

// publish re-advertises the metadata after a SetRating or SetPayload, on
// a goroutine of its own because memberlist.UpdateNode waits for the
// broadcast; a timeout there is harmless (push/pull spreads it too).
func (n *Node) publish() {
	if n.stopping() {
		return
	}
	if err := n.ml.UpdateNode(n.updateWait); err != nil {
		n.log.Debug("rating update not yet gossiped", "error", err)
	}
}

// stopping reports whether Close has begun.
func (n *Node) stopping() bool {
	select {
	case <-n.stop:
		return true
	default:
		return false
	}
}

// errOnlySelf: every address the seeds resolved to is this node's own
// (the first member behind a DNS name); there was nobody to join.
var errOnlySelf = errors.New("membership: the seeds resolve to this node's own address only")

// Join contacts the given "host:port" members and merges state with them;
// a host may be a DNS name, resolved with Config.Resolver to every address
// it has, and this node's own address is skipped. It returns how many it
// reached; the error is non-nil only if none.
func (n *Node) Join(addrs ...string) (int, error) {
	if n.closed.Load() {
		return 0, ErrClosed
	}
	targets, rerr := n.resolveSeeds(addrs)
	var k int
	var err error
	switch {
	case len(targets) > 0:
		k, err = n.ml.Join(targets)
		if err != nil && rerr != nil {
			err = fmt.Errorf("%w\n%w", err, rerr)
		}
	case rerr != nil:
		err = rerr
	default:
		return 0, errOnlySelf
	}
	if err == nil {
		n.joined.Store(true)
		empty := ""
		n.joinErr.Store(&empty)
	} else {
		msg := err.Error()
		n.joinErr.Store(&msg)
	}
	return k, err
}

// askJoin queues addr for an immediate join; it never blocks (memberlist's
// probe goroutine calls it), and drops the request when many are queued.
// Before New has made its own joins, the join waits for them.
func (n *Node) askJoin(addr string) {
	j := &n.jobs
	j.mu.Lock()
	if len(j.restarted) < maxRestartedJoins {
		j.restarted = append(j.restarted, addr)
	}
	ready := j.ready
	j.mu.Unlock()
	if ready {
		n.joiner.kick(&n.bg, n.runJoins)
	}
}

// introduce joins addr, the highest-ranked voter this node learnt of from
// its seeds (before New returns, like the seeds' join, so that no join
// runs after Close): the coordinator, in a settled cluster with the default
// preemption policy. A join exchanges state both ways, so the coordinator
// learns of this node at once, and its first heartbeat reaches the node
// within its start-up window. Otherwise the news reaches the coordinator
// by gossip, O(log n) gossip rounds later (most of a second at 100
// members); meanwhile the node, hearing no heartbeat, holds an election
// whose questions the coordinator holds back as coming from a stranger,
// and every node that joins a large cluster that way costs O(n) messages.
func (n *Node) introduce(addr string) {
	if _, err := n.Join(addr); err != nil {
		n.log.Debug("introduction to the top-rated member failed", "addr", addr, "error", err)
	}
}

// minRejoinWait is the first wait before the seeds are tried again when
// none answered: a cluster whose members start together (a deployment)
// finds itself within tens of milliseconds, not a RejoinInterval later.
const minRejoinWait = 20 * time.Millisecond

// startJoiner lets the joins start, once New has made its own: at once
// those of members whose probe answers show a restart (askJoin), and the
// re-joins of the seeds and of the recently departed members: with
// backoff from minRejoinWait until a join has succeeded, then every
// RejoinInterval (rejoinT), and every fastRejoinWait (departedT).
// memberlist forgets dead members after GossipToTheDeadTime; after that
// the two sides of a healed partition would never probe each other
// again, so someone must join.
func (n *Node) startJoiner() {
	if wait := n.cfg.RejoinInterval; wait > 0 {
		if !n.joined.Load() && len(n.cfg.Seeds) > 0 {
			wait = min(minRejoinWait, wait)
		}
		n.rejoinWait = wait
		n.bg.afterFunc(&n.rejoinT, wait, func() { n.due(func(j *joinJobs) { j.rejoin = true }) })
		n.bg.afterFunc(&n.departedT, fastRejoinWait, n.departedTurn)
	}
	j := &n.jobs
	j.mu.Lock()
	j.ready = true
	pending := len(j.restarted) > 0
	j.mu.Unlock()
	if pending {
		n.joiner.kick(&n.bg, n.runJoins)
	}
}

// due records a join job and has the joiner run.
func (n *Node) due(set func(*joinJobs)) {
	n.jobs.mu.Lock()
	set(&n.jobs)
	n.jobs.mu.Unlock()
	n.joiner.kick(&n.bg, n.runJoins)
}

// departedTurn is departedT's: when this node is to re-join members that
// departed lately, it has the joiner do so; the timer goes on either way.
func (n *Node) departedTurn() {
	if targets := n.departedTargets(); len(targets) > 0 {
		n.due(func(j *joinJobs) { j.departed = targets })
	}
	n.bg.reset(&n.departedT, fastRejoinWait)
}

// runJoins is the joiner's work: the joins due, one after another, as
// long as the Node is not closing.
func (n *Node) runJoins() {
	restarted, rejoin, departed := n.jobs.take()
	for _, addr := range restarted {
		if n.stopping() {
			return
		}
		n.joinRestarted(addr)
	}
	if rejoin && !n.stopping() {
		n.rejoin()
		n.rejoinWait = n.nextRejoinWait(n.rejoinWait)
		n.bg.reset(&n.rejoinT, n.rejoinWait)
	}
	if len(departed) > 0 && !n.stopping() {
		if _, err := n.ml.Join(departed); err != nil {
			n.log.Trace("departed members not back yet", "targets", departed, "error", err)
		}
	}
}

// fastRejoinWait is how often the members that died or left lately are
// tried again (departedTurn): a member restarted after the others
// declared it dead, a seed restarted without seeds of its own above all,
// is back within about this long, not RejoinInterval.
const fastRejoinWait = 500 * time.Millisecond

// departedTargets lists the members that died or left lately, if any
// (the table forgets them after a while), for the joiner to join; the
// seeds wait for rejoin. In a large cluster only about restartJoiners
// members try at each turn (takesTurn): a member that comes back needs
// one join to be found, and a starved process whose members declare each
// other dead must not have every member push-pull its whole member list
// with each of them twice a second, which starves it further.
func (n *Node) departedTargets() []string {
	if !n.joined.Load() || n.cfg.RejoinInterval <= 0 || !n.takesTurn() {
		return nil
	}
	var targets []string
	for _, a := range n.table.departed(maxRejoinDeparted) {
		if a != n.addr {
			targets = append(targets, a)
		}
	}
	return targets
}

// takesTurn reports whether this node is one of the about restartJoiners
// members (in expectation) that act on news every member has: always in
// a cluster of at most restartJoiners members, else with probability
// restartJoiners/n.
func (n *Node) takesTurn() bool {
	k := n.table.size()
	return k <= restartJoiners || rand.IntN(k) < restartJoiners
}

// nextRejoinWait doubles the wait until a join has succeeded, up to
// RejoinInterval, and is RejoinInterval after.
func (n *Node) nextRejoinWait(wait time.Duration) time.Duration {
	if n.joined.Load() {
		return n.cfg.RejoinInterval
	}
	return min(2*wait, n.cfg.RejoinInterval)
}

func (n *Node) joinRestarted(addr string) {
	n.log.Debug("a member restarted and does not know this node yet: joining it", "addr", addr)
	if _, err := n.ml.Join([]string{addr}); err != nil {
		n.log.Debug("joining a restarted member failed", "addr", addr, "error", err)
	}
	n.del.guard.joinDone(addr)
}

// maxRejoinDeparted caps the departed members re-joined with the seeds:
// memberlist joins one address after another, each unreachable one
// costing up to TCPTimeout.
const maxRejoinDeparted = 3

// rejoin joins the seeds that are not live members of this node's view
// (each address a seed's name resolves to counts on its own) and up to
// maxRejoinDeparted members that left or died recently (the latest
// first), but never this node.
//
// A seed this node holds alive is in its part of the cluster already,
// and memberlist's own push-pulls keep the two in step; joining it again
// would only repeat one: every member a push-pull of the whole member
// list every RejoinInterval, O(n²) entries merged per interval across the
// cluster, which at a few hundred members in one process starves
// memberlist's failure detector. While some seed is alive in the view, the dead seeds
// and the departed members are news every member has: only about
// restartJoiners of the members join them (takesTurn), enough to heal a
// partition. With no seed alive this node may be the one cut off, and
// joins them all.
func (n *Node) rejoin() {
	targets := make([]string, 0, len(n.cfg.Seeds)+maxRejoinDeparted)
	add := func(a string) {
		if a != n.addr && !slices.Contains(targets, a) {
			targets = append(targets, a)
		}
	}
	seeds, rerr := n.resolveSeeds(n.cfg.Seeds)
	if rerr != nil {
		n.log.Debug("a seed's name does not resolve (yet)", "error", rerr)
	}
	live := n.table.liveAddrs(seeds)
	if len(live) == 0 || n.takesTurn() {
		for _, a := range seeds {
			if !live[a] {
				add(a)
			}
		}
		for _, a := range n.table.departed(maxRejoinDeparted) {
			add(a)
		}
	}
	if len(targets) == 0 {
		n.stats.rejoinsSkipped.Add(1)
		return
	}
	n.stats.rejoins.Add(1)
	if _, err := n.Join(targets...); err != nil {
		n.stats.rejoinFailures.Add(1)
		if kerr := keyRefused(err); kerr != nil && !n.joined.Load() {
			n.fail(kerr) // it never joined: its key is not the cluster's
			return
		}
		n.log.Debug("re-join reached nobody", "targets", targets, "error", err)
	}
}

// seedLookupTimeout bounds the resolution of a seed's DNS name.
const seedLookupTimeout = 2 * time.Second

// resolveSeeds returns the "ip:port" addresses that seeds name, each once,
// without this node's own (Addr), and an error naming the seeds whose
// name did not resolve, worded as memberlist words it ("failed to
// resolve"), for unreachable.
func (n *Node) resolveSeeds(seeds []string) ([]string, error) {
	var out []string
	var errs []error
	for _, s := range seeds {
		addrs, err := n.resolveSeed(s)
		if err != nil {
			errs = append(errs, err)
		}
		for _, a := range addrs {
			if !n.isSelf(a) && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, errors.Join(errs...)
}

// resolveSeed returns the "ip:port" addresses seed names: itself when its
// host is an IP address (or it has no port, for memberlist to report),
// else the addresses its name resolves to now with Config.Resolver.
func (n *Node) resolveSeed(seed string) ([]string, error) {
	host, port, err := net.SplitHostPort(seed)
	if err != nil || net.ParseIP(host) != nil {
		return []string{seed}, nil
	}
	var r Resolver = net.DefaultResolver
	if n.cfg.Resolver != nil {
		r = n.cfg.Resolver
	}
	ctx, cancel := context.WithTimeout(context.Background(), seedLookupTimeout)
	defer cancel()
	ips, err := r.LookupIPAddr(ctx, host)
	if err == nil && len(ips) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return nil, fmt.Errorf("failed to resolve %s: %w", seed, err)
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, net.JoinHostPort(ip.IP.String(), port))
	}
	return out, nil
}

// isSelf reports whether the "ip:port" addr is this node's own address.
func (n *Node) isSelf(addr string) bool {
	if addr == n.addr {
		return true
	}
	a, err1 := netip.ParseAddrPort(addr)
	b, err2 := netip.ParseAddrPort(n.addr)
	return err1 == nil && err2 == nil && a.Addr().Unmap() == b.Addr().Unmap() && a.Port() == b.Port()
}

// Members lists this node and the other members it knows, sorted by name,
// including those that left or died recently (Alive false) and those it
// refuses (Refused set).
func (n *Node) Members() []Member { return n.table.members(time.Now()) }

// Stats returns the node's cumulative counts.
func (n *Node) Stats() Stats { return n.stats.snapshot() }

// ErrLeaveUnconfirmed: Leave sent the news that this node leaves, but no
// member confirmed it within the timeout: the others may see a failure
// instead of a leave (after failure detection). It happens when every
// member stops at once, since each leaves while the others do; a caller
// stopping anyway may log it and go on (coordelect's Handle.Close does).
var ErrLeaveUnconfirmed = errors.New("membership: the leave was not confirmed in time")

// leaveTimeoutMsg is memberlist's (v0.7.0) error when Leave's broadcast
// was not confirmed within the timeout; it has no sentinel error.
const leaveTimeoutMsg = "timeout waiting for leave broadcast"

// Leave tells the cluster this node is leaving and waits up to timeout for
// the news to go out; peers then see EventPeerDown at once instead of
// after failure detection. Close must still be called. Idempotent. It
// returns an error wrapping ErrLeaveUnconfirmed when the news went out but
// was not confirmed in time. After a fatal error (Err) it returns an error
// wrapping ErrClosed and that error.
func (n *Node) Leave(timeout time.Duration) error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.closed.Load() {
		return ErrClosed
	}
	if err := n.Err(); err != nil {
		// memberlist is shut down (shutdownOnFailure): its Leave would panic.
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	err := n.ml.Leave(timeout)
	if err != nil && strings.Contains(err.Error(), leaveTimeoutMsg) {
		return fmt.Errorf("%w (%v): %w", ErrLeaveUnconfirmed, timeout, err)
	}
	return err
}

// Close shuts memberlist down without leaving, so that for the others this
// node has crashed (call Leave first for a graceful exit), stops every
// goroutine, waiting for them, and closes Events. A send in flight ends
// within memberlist's TCPTimeout. Idempotent; a second call waits for the
// first.
func (n *Node) Close() error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.closed.Swap(true) {
		return nil
	}
	close(n.stop)
	err := n.ml.Shutdown()
	n.out.close()
	n.inbox.close()
	n.bg.close()
	n.wg.Wait()
	n.log.Info("member stopped", "name", n.cfg.Name)
	return err
}
