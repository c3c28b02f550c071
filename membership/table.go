package membership

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// Member is one member as this node sees it (Node.Members).
type Member struct {
	// Name is the member's name, its election ID.
	Name string
	// Addr is the member's advertised "host:port".
	Addr string
	// Rating is the member's published rating.
	Rating int64
	// Voter is false for a non-voter (Config.NonVoter).
	Voter bool
	// Algorithm is the algorithm name it publishes (Config.Algorithm).
	Algorithm string
	// BootID is random per process start: a member restarted under the
	// same name has a new one.
	BootID uint64
	// Alive: memberlist holds the member alive. Members that left or died
	// are listed, not alive, until memberlist forgets them
	// (GossipToTheDeadTime).
	Alive bool
	// Self marks this node.
	Self bool
	// Refused says why an alive member is hidden from the elector: "" (it
	// is not), RefusedMeta or RefusedTagCollision.
	Refused string
	// Payload is what the member publishes (Config.Payload).
	Payload string
}

// Refusal reasons (Member.Refused).
const (
	RefusedMeta         = "metadata"
	RefusedTagCollision = "tag collision"
)

// entry is the table's record of one member. It is kept small: every
// member holds one for every other (112 bytes each, where a copy of
// memberlist's node with its raw and decoded metadata took 240 and more).
type entry struct {
	info     peerAddr
	meta     peerMeta
	since    time.Time // when alive last changed
	alive    bool      // alive in memberlist
	admitted bool      // alive, valid metadata, unique tag: the elector knows it
	refused  refusal   // why an alive member is not admitted
}

// peerAddr is a member's name and address: the parts of a memberlist.Node
// the table keeps (not its metadata, which it keeps decoded in peerMeta).
type peerAddr struct {
	Name string
	Addr net.IP
	Port uint16
}

func (a peerAddr) address() string {
	return net.JoinHostPort(a.Addr.String(), strconv.Itoa(int(a.Port)))
}

// peerMeta is the part of a member's metadata that the table uses after
// the join: the shared election settings (meta's Quorum, Heartbeat,
// Misses, Lease) are checked at the join (guard.checkCompat) and not kept.
type peerMeta struct {
	Rating   int64
	Boot     uint64
	rare     *rareMeta // nil: this node's Algorithm and no payload, as most members
	NonVoter bool
}

// rareMeta is the part of a member's metadata that is usually the same
// for every member and so not kept per member.
type rareMeta struct {
	Algorithm string
	Payload   string
}

// algorithm returns the member's Algorithm; own is this node's.
func (m peerMeta) algorithm(own string) string {
	if m.rare == nil {
		return own
	}
	return m.rare.Algorithm
}

// payload returns the member's Payload.
func (m peerMeta) payload() string {
	if m.rare == nil {
		return ""
	}
	return m.rare.Payload
}

// refusal is why an alive member is not admitted (Member.Refused).
type refusal uint8

const (
	refusedNone refusal = iota
	refusedMeta
	refusedTag
)

func (r refusal) String() string {
	switch r {
	case refusedMeta:
		return RefusedMeta
	case refusedTag:
		return RefusedTagCollision
	}
	return ""
}

// table is the membership view that the dispatcher builds from memberlist's
// events and turns into elector events. Only the dispatcher goroutine
// changes it; Send and Members read it concurrently.
//
// Tags: terms embed core.Tag(ID), so two admitted members must not share a
// tag. Among live members with the same tag the one with the lowest ID (by
// core.CompareID) is admitted, so every node that sees the same members
// admits the same one; a member whose tag equals this node's own is always
// refused. Refusals are logged as errors and counted.
type table struct {
	mu      sync.RWMutex
	self    entry
	selfAlg string // this node's Algorithm, which most entries leave out (peerMeta.rare)
	selfTag uint32
	peers   map[string]*entry
	byTag   map[uint32]*entry // the admitted peers, by core.Tag of their name
	forget  time.Duration     // how long departed members stay listed
	// gone counts the departed peers still listed, and nextPrune is the
	// earliest moment one of them is due to be forgotten: with them,
	// prune and departed, called after every batch of messages and
	// twice a second, cost nothing while no member has departed,
	// instead of a scan of every peer (O(n) per message at n members).
	gone      int
	nextPrune time.Time
	// collided counts the live peers refused for a tag collision: promote,
	// asked at every departure, scans the peers only when there are some.
	collided int
	log      hclog.Logger
	stats    *counters
}

func newTable(name string, m meta, forget time.Duration, log hclog.Logger, stats *counters) *table {
	return &table{
		self:    entry{info: peerAddr{Name: name}, meta: m.peer(m.Algorithm), alive: true, admitted: true},
		selfAlg: m.Algorithm,
		selfTag: core.Tag(name),
		peers:   make(map[string]*entry),
		byTag:   make(map[uint32]*entry),
		forget:  forget,
		log:     log,
		stats:   stats,
	}
}

// alive records a live member's address and metadata. memberlist reports
// a change as NotifyJoin (from dead) or NotifyUpdate (from alive); alive
// treats both alike, so a missed transition does no harm.
func (t *table) alive(info nodeInfo, now time.Time) []election.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	addr := peerAddr{Name: info.Name, Addr: info.Addr, Port: info.Port}
	if info.Name == t.self.info.Name {
		t.self.info = addr
		return nil
	}
	e := t.peers[info.Name]
	if e == nil {
		e = &entry{}
		t.peers[info.Name] = e
	} else if !e.alive {
		t.gone-- // back from the departed
	}
	if !e.alive {
		e.alive, e.since, e.meta = true, now, peerMeta{}
	}
	e.info = addr
	return t.setMeta(e, info.Meta)
}

// restart reports whether the live member info describes a restart of a
// member this table remembers: a boot ID greater than the one it had
// before it departed or changed. It also returns how many members the
// table lists (this node included). Call it before alive.
func (t *table) restart(info nodeInfo) (restarted bool, members int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e := t.peers[info.Name]
	if e == nil || e.meta.Boot == 0 {
		return false, len(t.peers) + 1
	}
	m, err := decodeMeta(info.Meta)
	return err == nil && m.Boot > e.meta.Boot, len(t.peers) + 1
}

// leave records a member that left or was declared dead.
func (t *table) leave(name string, now time.Time) []election.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.peers[name]
	if e == nil || !e.alive {
		return nil
	}
	e.alive, e.since = false, now
	t.setRefused(e, refusedNone)
	t.gone++
	if due := now.Add(t.forget); t.gone == 1 || due.Before(t.nextPrune) {
		t.nextPrune = due
	}
	out := t.demote(e)
	if out != nil {
		out = append(out, t.promote(core.Tag(name))...)
	}
	return out
}

// setMeta decodes a live member's metadata and derives the events.
func (t *table) setMeta(e *entry, raw []byte) []election.Event {
	full, err := decodeMeta(raw)
	if err != nil {
		if e.refused != refusedMeta {
			t.log.Error("refusing member: bad metadata", "member", e.info.Name, "addr", e.info.address(), "error", err)
			t.stats.refusedMeta.Add(1)
		}
		out := t.demote(e)
		t.setRefused(e, refusedMeta)
		return out
	}
	m := full.peer(t.selfAlg)
	old := e.meta
	e.meta = m
	switch {
	case !e.admitted:
		return t.admit(e)
	case old.Boot != m.Boot || old.NonVoter != m.NonVoter:
		// A restart (or a changed role): the elector must see it leave.
		return []election.Event{downEvent(e), upEvent(e)}
	case old.Rating != m.Rating:
		return []election.Event{{Kind: election.EventPeerRating, Peer: e.peer()}}
	}
	return nil
}

// admit admits a live member with valid metadata unless its tag collides.
func (t *table) admit(e *entry) []election.Event {
	tag := core.Tag(e.info.Name)
	if tag == t.selfTag {
		t.refuseTag(e, t.self.info.Name, tag)
		return nil
	}
	var out []election.Event
	if h := t.tagHolder(tag); h != nil {
		if core.CompareID(e.info.Name, h.info.Name) > 0 {
			t.refuseTag(e, h.info.Name, tag)
			return nil
		}
		out = t.demote(h)
		t.refuseTag(h, e.info.Name, tag)
	}
	e.admitted = true
	t.setRefused(e, refusedNone)
	t.byTag[tag] = e
	return append(out, upEvent(e))
}

// promote admits the lowest-named live member refused for tag, if any,
// now that the tag's holder is gone.
func (t *table) promote(tag uint32) []election.Event {
	if t.collided == 0 {
		return nil // nobody is waiting for a tag: no scan (each departure asks)
	}
	var best *entry
	for _, e := range t.peers {
		if e.alive && e.refused == refusedTag && core.Tag(e.info.Name) == tag &&
			(best == nil || core.CompareID(e.info.Name, best.info.Name) < 0) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	return t.admit(best)
}

// setRefused records why e is not admitted ("" when it is, or when it
// departed), and counts the members refused for a tag collision.
func (t *table) setRefused(e *entry, why refusal) {
	if e.refused == refusedTag {
		t.collided--
	}
	if why == refusedTag {
		t.collided++
	}
	e.refused = why
}

// tagHolder returns the admitted peer whose name has tag, or nil: a map
// look-up, since every member admits every other (a scan was O(n) per
// admission, O(n²) per member at start-up).
func (t *table) tagHolder(tag uint32) *entry { return t.byTag[tag] }

func (t *table) refuseTag(e *entry, other string, tag uint32) {
	if e.refused != refusedTag {
		t.log.Error("refusing member: its core.Tag equals another member's, terms would be ambiguous; rename one",
			"member", e.info.Name, "other", other, "tag", tag)
		t.stats.refusedTag.Add(1)
	}
	t.setRefused(e, refusedTag)
}

// demote hides an admitted member from the elector.
func (t *table) demote(e *entry) []election.Event {
	if !e.admitted {
		return nil
	}
	e.admitted = false
	if tag := core.Tag(e.info.Name); t.byTag[tag] == e {
		delete(t.byTag, tag)
	}
	return []election.Event{downEvent(e)}
}

func (e *entry) peer() core.Peer {
	return core.Peer{ID: e.info.Name, Rating: e.meta.Rating, NonVoter: e.meta.NonVoter}
}

func upEvent(e *entry) election.Event {
	return election.Event{Kind: election.EventPeerUp, Peer: e.peer()}
}

func downEvent(e *entry) election.Event {
	return election.Event{Kind: election.EventPeerDown, Peer: core.Peer{ID: e.info.Name}}
}

// prune forgets members that departed more than forget ago and returns
// their names.
func (t *table) prune(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone == 0 || !now.After(t.nextPrune) {
		return nil
	}
	var gone []string
	var next time.Time
	for name, e := range t.peers {
		if e.alive {
			continue
		}
		if due := e.since.Add(t.forget); now.After(due) {
			delete(t.peers, name)
			gone = append(gone, name)
			t.gone--
		} else if next.IsZero() || due.Before(next) {
			next = due
		}
	}
	t.nextPrune = next
	return gone
}

// departed returns the addresses of up to k members that left or died
// and are still remembered, the latest first.
func (t *table) departed(k int) []string {
	t.mu.RLock()
	if t.gone == 0 {
		t.mu.RUnlock()
		return nil
	}
	var gone []*entry
	for _, e := range t.peers {
		if !e.alive && e.info.Addr != nil {
			gone = append(gone, e)
		}
	}
	slices.SortFunc(gone, func(a, b *entry) int { return b.since.Compare(a.since) })
	out := make([]string, 0, min(k, len(gone)))
	for _, e := range gone[:min(k, len(gone))] {
		out = append(out, e.info.address())
	}
	t.mu.RUnlock()
	return out
}

// size returns how many members the table lists, this node included.
func (t *table) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.peers) + 1
}

// liveAddrs reports which of addrs ("ip:port") belong to a member
// memberlist holds alive, this node included. It compares parsed
// addresses, so that a scan of the whole table allocates nothing.
func (t *table) liveAddrs(addrs []string) map[string]bool {
	live := make(map[string]bool, len(addrs))
	want := make(map[netip.AddrPort]string, len(addrs))
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			want[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = a
		}
	}
	if len(want) == 0 {
		return live
	}
	check := func(info *peerAddr) {
		if ip, ok := netip.AddrFromSlice(info.Addr); ok {
			if a, ok := want[netip.AddrPortFrom(ip.Unmap(), info.Port)]; ok {
				live[a] = true
			}
		}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	check(&t.self.info)
	for _, e := range t.peers {
		if e.alive {
			check(&e.info)
		}
	}
	return live
}

// target is what the sender needs to reach an admitted member.
type target struct {
	node memberlist.Node
	boot uint64
}

// target returns an admitted live member's address and boot ID.
func (t *table) target(name string) (target, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e := t.peers[name]
	if e == nil || !e.admitted {
		return target{}, false
	}
	n := memberlist.Node{Name: name, Addr: e.info.Addr, Port: e.info.Port}
	return target{node: n, boot: e.meta.Boot}, true
}

// setSelfMeta records this node's new metadata.
func (t *table) setSelfMeta(m meta) {
	t.mu.Lock()
	t.self.meta = m.peer(t.selfAlg)
	t.mu.Unlock()
}

// peer returns the part of m that the table keeps; alg is this node's
// Algorithm (every compatible member has it).
func (m meta) peer(alg string) peerMeta {
	p := peerMeta{Rating: m.Rating, Boot: m.Boot, NonVoter: m.NonVoter}
	if m.Algorithm != alg || m.Payload != "" {
		p.rare = &rareMeta{Algorithm: m.Algorithm, Payload: m.Payload}
	}
	return p
}

// members lists this node and the members the table holds, by name,
// leaving out those departed more than forget before now (prune deletes
// them when the dispatcher next runs).
func (t *table) members(now time.Time) []Member {
	t.mu.RLock()
	out := make([]Member, 0, len(t.peers)+1)
	out = append(out, t.self.member(true, t.selfAlg))
	for _, e := range t.peers {
		if e.alive || now.Sub(e.since) <= t.forget {
			out = append(out, e.member(false, t.selfAlg))
		}
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b Member) int { return core.CompareID(a.Name, b.Name) })
	return out
}

// member returns e as Members lists it; alg is this node's Algorithm.
func (e *entry) member(self bool, alg string) Member {
	m := Member{
		Name: e.info.Name, Rating: e.meta.Rating, Voter: !e.meta.NonVoter,
		Algorithm: e.meta.algorithm(alg), BootID: e.meta.Boot,
		Alive: e.alive, Self: self, Refused: e.refused.String(), Payload: e.meta.payload(),
	}
	if e.info.Addr != nil {
		m.Addr = e.info.address()
	}
	return m
}
