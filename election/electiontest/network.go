// Package electiontest provides an in-memory network of election.Transports
// for tests, examples and single-process demos, in the manner of etcd raft's
// rafttest network and hashicorp/raft's InmemTransport.
//
// A Network delivers messages and membership events to each node in the
// order they were sent (FIFO per receiver), after an optional latency. A
// test can drop messages by a predicate, partition the nodes into groups,
// crash a node (it vanishes; the others are not told) and announce its
// death later, as a membership layer would. It uses no sockets and no
// goroutines of its own (only time.AfterFunc when a latency is set), so it
// runs inside a testing/synctest bubble.
//
// It also holds the cluster harness of the tests and benchmarks that start
// N members: Cluster runs Electors on a Network, and its real-memberlist
// twin, membership/clustertest, runs them on membership.Nodes. Both run
// each Elector as a Member, and Agree, Describe, Eventually and Hold serve
// either.
package electiontest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// DefaultBuffer is the default depth of a node's event channel; events that
// find it full are dropped and counted, as memberlist drops packets.
const DefaultBuffer = 1024

// Errors returned by a Transport.
var (
	ErrClosed      = errors.New("electiontest: transport closed")
	ErrUnknownPeer = errors.New("electiontest: unknown peer")
)

// Stats counts what a Network did with the messages sent through it.
// A batch's pairs count as its messages.
type Stats struct {
	// Sent counts messages accepted by Send and SendBatch, by type.
	Sent [core.NumMsgTypes]uint64
	// Packets counts what Send, SendBatch and SendCandidacy accepted, one
	// per call: the packets (frames) a real transport would send.
	Packets uint64
	// Delivered counts messages put into a receiver's event channel.
	Delivered uint64
	// Dropped counts messages lost: to a crashed node, across a partition,
	// by the drop predicate, or to a full event channel.
	Dropped uint64
}

// SentTotal is the number of messages accepted by Send.
func (s Stats) SentTotal() uint64 {
	var n uint64
	for _, v := range s.Sent {
		n += v
	}
	return n
}

// Network is a set of in-memory Transports. It is safe for concurrent use.
type Network struct {
	mu      sync.Mutex
	nodes   map[string]*Transport
	gone    map[string]bool // crashed or left: messages to them are lost
	group   map[string]int  // partition group; unlisted nodes are in group 0
	drop    func(core.Message) bool
	dropP   func(name string, m core.Message) bool
	dropC   func(c election.Candidacy) bool
	latency time.Duration
	buffer  int
	stats   Stats
	from    map[string]uint64 // packets sent, by sender (SenderPackets)
}

// NewNetwork returns an empty network with no latency and no faults.
func NewNetwork() *Network {
	return &Network{
		nodes:  make(map[string]*Transport),
		from:   make(map[string]uint64),
		gone:   make(map[string]bool),
		group:  make(map[string]int),
		buffer: DefaultBuffer,
	}
}

// SetLatency delays every later delivery by d.
func (n *Network) SetLatency(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.latency = d
}

// SetBuffer sets the event channel depth of nodes that join later.
func (n *Network) SetBuffer(depth int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.buffer = depth
}

// SetDrop installs a predicate that loses every message it returns true
// for (nil: lose none). It is called under the network's lock and must not
// call into the Network.
func (n *Network) SetDrop(drop func(core.Message) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop = drop
}

// SetDropPair installs a predicate that loses every pair of a batch it
// returns true for (nil: lose none), with SetDrop's contract; SetDrop's
// predicate applies to the pairs' messages too.
func (n *Network) SetDropPair(drop func(name string, m core.Message) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropP = drop
}

// SetDropCandidacy installs a predicate that loses every candidacy it
// returns true for (nil: lose none), with SetDrop's contract.
func (n *Network) SetDropCandidacy(drop func(c election.Candidacy) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropC = drop
}

// Partition splits the nodes: messages between nodes of different groups
// are lost. Nodes not listed form one more group. Membership events are
// not affected: tell the nodes with AnnounceDown if the scenario needs it.
func (n *Network) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.group)
	for i, g := range groups {
		for _, id := range g {
			n.group[id] = i + 1
		}
	}
}

// Heal removes every partition.
func (n *Network) Heal() { n.Partition() }

// SenderPackets returns, per member, the packets (Stats.Packets) it has
// sent so far.
func (n *Network) SenderPackets() map[string]uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.from)
}

// Stats returns the network's counts so far.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Join adds a node with the given identity and returns its Transport (its
// Elector reads the identity from it). The node learns every member
// already present, and every member learns it (EventPeerUp). A node that
// crashed or left may join again under the same Name (a restart).
// Identity.Payload is not carried: the Transport is no
// election.PayloadTransport.
func (n *Network) Join(id election.Identity) (*Transport, error) {
	return n.join(id, true)
}

// JoinUnnamed is Join for a member that runs the unnamed election only,
// as an older build does during a rolling restart: its Transport's Named
// is false, and the others' EventPeerUp for it has Named false.
func (n *Network) JoinUnnamed(id election.Identity) (*Transport, error) {
	return n.join(id, false)
}

func (n *Network) join(id election.Identity, named bool) (*Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if id.Name == "" {
		return nil, fmt.Errorf(`electiontest: Join: Identity.Name = "": required`)
	}
	if _, ok := n.nodes[id.Name]; ok {
		return nil, fmt.Errorf("electiontest: Join: Identity.Name = %q: already a member", id.Name)
	}
	p := id.Peer()
	t := &Transport{net: n, id: id, self: p, named: named, events: make(chan election.Event, n.buffer)}
	for _, id := range n.sortedIDs() {
		other := n.nodes[id]
		n.enqueue(t, election.Event{Kind: election.EventPeerUp, Peer: other.self, Named: other.named})
		n.enqueue(other, election.Event{Kind: election.EventPeerUp, Peer: p, Named: named})
	}
	n.nodes[p.ID] = t
	delete(n.gone, p.ID)
	return t, nil
}

// MustJoin is Join for tests and examples; it panics on error.
func (n *Network) MustJoin(id election.Identity) *Transport {
	t, err := n.Join(id)
	if err != nil {
		panic(err)
	}
	return t
}

// Crash removes a node as if its process died: its event channel is closed
// (its Elector's Run returns ErrTransportClosed), messages to it are lost
// from now on, and nobody is told. Call AnnounceDown to play the
// membership layer's later verdict.
func (n *Network) Crash(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t, ok := n.nodes[id]; ok {
		n.remove(t)
	}
}

// AnnounceDown tells every member that id is down (EventPeerDown).
func (n *Network) AnnounceDown(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.broadcast(id, election.Event{Kind: election.EventPeerDown, Peer: core.Peer{ID: id}})
}

// Close closes every node's transport without telling anyone.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.nodes {
		n.remove(t)
	}
}

// Members returns the IDs of the nodes present, sorted.
func (n *Network) Members() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sortedIDs()
}

func (n *Network) sortedIDs() []string {
	ids := make([]string, 0, len(n.nodes))
	for id := range n.nodes {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, core.CompareID)
	return ids
}

// remove takes t out of the network and closes it; n.mu is held.
func (n *Network) remove(t *Transport) {
	delete(n.nodes, t.self.ID)
	n.gone[t.self.ID] = true
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.pending = nil
	close(t.events)
}

// broadcast queues ev for every member but from; n.mu is held.
func (n *Network) broadcast(from string, ev election.Event) {
	for _, id := range n.sortedIDs() {
		if id != from {
			n.enqueue(n.nodes[id], ev)
		}
	}
}

// send routes m; n.mu is held.
func (n *Network) send(m core.Message) error {
	to, ok := n.nodes[m.To]
	switch {
	case !ok && !n.gone[m.To]:
		return fmt.Errorf("%w %q", ErrUnknownPeer, m.To)
	case m.Type > 0 && int(m.Type) < core.NumMsgTypes:
		n.stats.Sent[m.Type]++
	}
	if !ok || n.group[m.From] != n.group[m.To] || n.drop != nil && n.drop(m) {
		n.stats.Dropped++
		return nil
	}
	n.stats.Packets++
	n.from[m.From]++
	n.enqueue(to, election.Event{Kind: election.EventMessage, Message: m.Clone()})
	return nil
}

// sendBatch routes b's pairs that are not lost, in one event; n.mu is
// held.
func (n *Network) sendBatch(b group.Batch) error {
	to, ok := n.nodes[b.To]
	switch {
	case !ok && !n.gone[b.To]:
		return fmt.Errorf("%w %q", ErrUnknownPeer, b.To)
	case ok && !to.named:
		return fmt.Errorf("electiontest: %q runs no named elections: it takes no batches", b.To)
	}
	var keep []group.Pair
	for _, p := range b.Pairs {
		if t := p.Msg.Type; t > 0 && int(t) < core.NumMsgTypes {
			n.stats.Sent[t]++
		}
		if !ok || n.group[b.From] != n.group[b.To] || n.drop != nil && n.drop(p.Msg) || n.dropP != nil && n.dropP(p.Name, p.Msg) {
			n.stats.Dropped++
			continue
		}
		keep = append(keep, group.Pair{Name: p.Name, Msg: p.Msg.Clone()})
	}
	n.stats.Packets++
	n.from[b.From]++
	if len(keep) > 0 {
		n.enqueue(to, election.Event{Kind: election.EventBatch, Batch: group.Batch{From: b.From, To: b.To, Pairs: keep}})
	}
	return nil
}

// sendCandidacy routes c unless it is lost to a crash, a partition or
// the drop predicate (SetDropCandidacy);
// n.mu is held.
func (n *Network) sendCandidacy(c election.Candidacy) error {
	to, ok := n.nodes[c.To]
	switch {
	case !ok && !n.gone[c.To]:
		return fmt.Errorf("%w %q", ErrUnknownPeer, c.To)
	case ok && !to.named:
		return fmt.Errorf("electiontest: %q runs no named elections: it takes no candidacies", c.To)
	}
	n.stats.Packets++
	n.from[c.From]++
	if !ok || n.group[c.From] != n.group[c.To] || n.dropC != nil && n.dropC(c) {
		return nil
	}
	x := c.Clone()
	n.enqueue(to, election.Event{Kind: election.EventCandidacy, Candidacy: &x})
	return nil
}

// enqueue delivers ev to t now, or after the latency; n.mu is held.
func (n *Network) enqueue(t *Transport, ev election.Event) {
	if n.latency <= 0 && len(t.pending) == 0 {
		n.deliver(t, ev)
		return
	}
	t.pending = append(t.pending, pending{ev: ev, due: time.Now().Add(n.latency)})
	if t.timer == nil {
		t.timer = time.AfterFunc(n.latency, func() { n.deliverDue(t) })
	}
}

// deliverDue delivers t's pending events that are due, in order, and
// re-arms the timer for the next one.
func (n *Network) deliverDue(t *Transport) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t.closed {
		return
	}
	now := time.Now()
	for len(t.pending) > 0 && !t.pending[0].due.After(now) {
		n.deliver(t, t.pending[0].ev)
		t.pending[0] = pending{}
		t.pending = t.pending[1:]
	}
	if len(t.pending) == 0 {
		t.pending = nil // a burst's backing array goes
	}
	t.timer = nil
	if len(t.pending) > 0 {
		t.timer = time.AfterFunc(t.pending[0].due.Sub(now), func() { n.deliverDue(t) })
	}
}

// deliver puts ev into t's channel without blocking; n.mu is held.
func (n *Network) deliver(t *Transport, ev election.Event) {
	if t.closed {
		return
	}
	msgs := uint64(0)
	switch ev.Kind {
	case election.EventMessage:
		msgs = 1
	case election.EventBatch:
		msgs = uint64(len(ev.Batch.Pairs))
	}
	select {
	case t.events <- ev:
		n.stats.Delivered += msgs
	default:
		n.stats.Dropped += msgs
	}
}

type pending struct {
	ev  election.Event
	due time.Time
}

// Transport is one node's endpoint on a Network; it implements
// election.Transport.
type Transport struct {
	net    *Network
	id     election.Identity // as joined
	self   core.Peer         // id's current ranking (guarded by net.mu)
	named  bool              // it runs named elections (Join, not JoinUnnamed)
	events chan election.Event
	// guarded by net.mu
	closed  bool
	pending []pending
	timer   *time.Timer
}

var _ election.BatchTransport = (*Transport)(nil)

// LocalID is the node's ID (Identity().Name).
func (t *Transport) LocalID() string { return t.id.Name }

// Identity returns the node's identity, with its current rating.
func (t *Transport) Identity() election.Identity {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	id := t.id
	id.Rating = t.self.Rating
	return id
}

// Send routes m to m.To. A message that the network loses (crashed
// receiver, partition, drop predicate) is not an error, as with UDP; an ID
// that never joined is.
func (t *Transport) Send(m core.Message) error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	m.From = t.self.ID
	return t.net.send(m)
}

// Named reports whether the node runs named elections (Join; not
// JoinUnnamed).
func (t *Transport) Named() bool { return t.named }

// SendBatch routes b's pairs to b.To, in one event: the pairs that the
// network loses (crashed receiver, partition, drop predicates) are
// dropped, each counted as a message. The receiver must run named
// elections (Join).
func (t *Transport) SendBatch(b group.Batch) error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	b.From = t.self.ID
	return t.net.sendBatch(b)
}

// SendCandidacy routes c to c.To (lost only to a crash, a partition or
// the drop predicate).
func (t *Transport) SendCandidacy(c election.Candidacy) error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	c.From = t.self.ID
	return t.net.sendCandidacy(c)
}

// Events delivers the node's messages and membership events.
func (t *Transport) Events() <-chan election.Event { return t.events }

// SetRating publishes the node's new rating (EventPeerRating to every
// other member).
func (t *Transport) SetRating(rating int64) error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.self.Rating = rating
	p := t.self
	t.net.broadcast(p.ID, election.Event{Kind: election.EventPeerRating, Peer: p})
	return nil
}

// Close leaves the network gracefully: every other member is told the node
// is down, and its event channel is closed. It is idempotent.
func (t *Transport) Close() error {
	n := t.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if t.closed {
		return nil
	}
	n.remove(t)
	n.broadcast(t.self.ID, election.Event{Kind: election.EventPeerDown, Peer: core.Peer{ID: t.self.ID}})
	return nil
}
