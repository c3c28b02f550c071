package membership

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/grow"
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

// entry is the table's record of one member. It is kept small, 64 bytes:
// every member holds one for every other, in one slice (table.peers)
// without a map. The name shares its bytes with memberlist's copy.
type entry struct {
	name   string
	rating int64
	boot   uint64
	rare   *rareMeta // nil: this node's Algorithm and no payload, as most members
	addr   addrKey   // the address, packed (as the guard keeps it), 18 bytes
	flags  entryFlags
	// refused says why an alive member is not admitted.
	refused refusal
	tag     uint32 // core.Tag(name): the table's order
}

// entryFlags are an entry's yes-or-no facts.
type entryFlags uint8

const (
	flagAlive        entryFlags = 1 << iota // alive in memberlist, as the dispatcher has heard (alive, leave)
	flagAdmitted                            // alive, valid metadata, unique tag: the elector knows it
	flagNonVoterPeer                        // the member's metadata says NonVoter
	flagHeld                                // memberlist holds it alive now: the guard's (held.go)
	flagNamedPeer                           // it announces named elections (nodeInfo.Named): it takes batch frames
)

func (e *entry) is(f entryFlags) bool { return e.flags&f != 0 }

func (e *entry) set(f entryFlags, on bool) {
	if on {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

func (e *entry) address() string { return e.addr.String() }

// setMeta keeps the part of m that the table uses after the join: the
// shared election settings (meta's Quorum, Heartbeat, Misses, Lease) are
// checked at the join (guard.checkCompat) and not kept. alg is this
// node's Algorithm (every compatible member has it).
func (e *entry) setMeta(m meta, alg string) {
	e.rating, e.boot, e.rare = m.Rating, m.Boot, nil
	e.set(flagNonVoterPeer, m.NonVoter)
	if m.Algorithm != alg || m.Payload != "" {
		e.rare = &rareMeta{Algorithm: m.Algorithm, Payload: m.Payload}
	}
}

// rareMeta is the part of a member's metadata that is usually the same
// for every member and so not kept per member.
type rareMeta struct {
	Algorithm string
	Payload   string
}

// algorithm returns the member's Algorithm; own is this node's.
func (e *entry) algorithm(own string) string {
	if e.rare == nil {
		return own
	}
	return e.rare.Algorithm
}

// payload returns the member's Payload.
func (e *entry) payload() string {
	if e.rare == nil {
		return ""
	}
	return e.rare.Payload
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
//
// The entries are one slice in (tag, name) order: a member is found by a
// binary search on its tag, and the members that share a tag (the holder
// and those refused for it) are neighbours. The guard's record of the
// members memberlist holds alive is kept in the same entries (held.go):
// an entry the guard holds and the table does not list yet is in the
// slice, not in what the table lists. A map by name and another by
// tag cost about 220 bytes per member at n = 1,000 with the entries they
// pointed to (the maps had grown to 2,048 slots); the slice costs its 64
// bytes per entry, and up to 1/8 more while it grows (grow.RoomForOne),
// which clip gives back once no entry has been added for clipAfter. A new
// member moves the ones after it (O(n) copies, as the elector's roster
// does).
type table struct {
	mu      sync.RWMutex
	self    entry
	selfAlg string // this node's Algorithm, which most entries leave out (entry.rare)
	peers   []entry
	forget  time.Duration // how long departed members stay listed
	// left holds when each departed peer still listed departed, and
	// nextPrune is the earliest moment one of them is due to be
	// forgotten: with them, prune and departed, called after every batch
	// of messages and twice a second, cost nothing while no member has
	// departed, instead of a scan of every peer (O(n) per message at n
	// members). Live members keep no time.
	left      map[string]time.Time
	nextPrune time.Time
	// collided counts the live peers refused for a tag collision: promote,
	// asked at every departure, looks only when there are some.
	collided int
	// listed counts the peers the table lists: alive, or departed and in
	// left. The slice also holds entries only the guard holds (held.go).
	listed int
	// adds counts the entries added; clipAdds and clipSince are the
	// count clip last saw and when it first saw it (clip).
	adds      uint64
	clipAdds  uint64
	clipSince time.Time
	log       hclog.Logger
	stats     *counters
}

func newTable(name string, m meta, forget time.Duration, log hclog.Logger, stats *counters) *table {
	t := &table{
		self:    entry{name: name, tag: core.Tag(name), flags: flagAlive | flagAdmitted},
		selfAlg: m.Algorithm,
		left:    make(map[string]time.Time),
		forget:  forget,
		log:     log,
		stats:   stats,
	}
	t.self.setMeta(m, m.Algorithm)
	return t
}

// search returns the position of the entry named name, whose tag is tag,
// or the position where it would go, and whether it is there.
func (t *table) search(name string, tag uint32) (int, bool) {
	return slices.BinarySearchFunc(t.peers, name, func(e entry, name string) int {
		if c := cmp.Compare(e.tag, tag); c != 0 {
			return c
		}
		return strings.Compare(e.name, name)
	})
}

// get returns the entry named name, or nil; the pointer is valid until
// the table next adds or removes an entry.
func (t *table) get(name string) *entry {
	if i, ok := t.search(name, core.Tag(name)); ok {
		return &t.peers[i]
	}
	return nil
}

// add inserts a new entry for name.
func (t *table) add(name string, tag uint32, at int) *entry {
	t.peers = slices.Insert(grow.RoomForOne(t.peers), at, entry{name: name, tag: tag})
	t.adds++
	return &t.peers[at]
}

// clipAfter is how long the table goes without a new entry before clip
// gives back the slice's spare room: longer than a join's burst of
// push-pulls, so that a cluster forming or a partition healing does not
// copy the slice back and forth, and short beside a service's life.
const clipAfter = 30 * time.Second

// clip gives back the spare room of the entries' slice (up to an eighth
// of it: 8 KB at n = 1,000) once no entry has been added for clipAfter:
// one O(n) copy, again only after the next addition. The dispatcher calls
// it after every batch; with nothing to do it takes the read lock only.
func (t *table) clip(now time.Time) {
	t.mu.RLock()
	idle := t.adds == t.clipAdds && !t.clipSince.IsZero() && (cap(t.peers) == len(t.peers) || now.Sub(t.clipSince) < clipAfter)
	t.mu.RUnlock()
	if idle {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.adds != t.clipAdds || t.clipSince.IsZero() {
		t.clipAdds, t.clipSince = t.adds, now
		return
	}
	if now.Sub(t.clipSince) >= clipAfter {
		t.peers = grow.Clip(t.peers)
	}
}

// alive records a live member's address and metadata. memberlist reports
// a change as NotifyJoin (from dead) or NotifyUpdate (from alive); alive
// treats both alike, so a missed transition does no harm.
func (t *table) alive(info nodeInfo, now time.Time) []election.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	if info.Name == t.self.name {
		t.self.addr = packAddr(info.Addr, info.Port)
		return nil
	}
	tag := core.Tag(info.Name)
	var e *entry
	if i, ok := t.search(info.Name, tag); ok {
		e = &t.peers[i]
	} else {
		e = t.add(info.Name, tag, i)
	}
	if !e.is(flagAlive) {
		if _, departed := t.left[e.name]; departed {
			delete(t.left, e.name) // back from the departed
		} else {
			t.listed++ // new, or held by the guard alone
		}
		e.set(flagAlive, true)
		e.rating, e.boot, e.rare = 0, 0, nil
		e.set(flagNonVoterPeer, false)
	}
	if !e.is(flagHeld) {
		// memberlist has let it go since this item was queued (while it
		// holds it, hold keeps its latest address).
		e.addr = packAddr(info.Addr, info.Port)
	}
	e.set(flagNamedPeer, info.Named)
	return t.setMeta(e, info.Meta)
}

// restart reports whether the live member info describes a restart of a
// member this table remembers: a boot ID greater than the one it had
// before it departed or changed. It also returns how many members the
// table lists (this node included). Call it before alive.
func (t *table) restart(info nodeInfo) (restarted bool, members int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e := t.get(info.Name)
	if e == nil || e.boot == 0 {
		return false, t.listed + 1
	}
	m, err := decodeMeta(info.Meta)
	return err == nil && m.Boot > e.boot, t.listed + 1
}

// leave records a member that left or was declared dead.
func (t *table) leave(name string, now time.Time) []election.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.get(name)
	if e == nil || !e.is(flagAlive) {
		return nil
	}
	e.set(flagAlive, false)
	t.left[e.name] = now
	t.setRefused(e, refusedNone)
	if due := now.Add(t.forget); len(t.left) == 1 || due.Before(t.nextPrune) {
		t.nextPrune = due
	}
	out := t.demote(e)
	if out != nil {
		out = append(out, t.promote(e.tag)...)
	}
	return out
}

// setMeta decodes a live member's metadata and derives the events.
func (t *table) setMeta(e *entry, raw []byte) []election.Event {
	full, err := decodeMeta(raw)
	if err != nil {
		if e.refused != refusedMeta {
			t.log.Error("refusing member: bad metadata", "member", e.name, "addr", e.address(), "error", err)
			t.stats.refusedMeta.Add(1)
		}
		out := t.demote(e)
		t.setRefused(e, refusedMeta)
		return out
	}
	old := *e
	e.setMeta(full, t.selfAlg)
	switch {
	case !e.is(flagAdmitted):
		return t.admit(e)
	case old.boot != e.boot || old.is(flagNonVoterPeer) != e.is(flagNonVoterPeer):
		// A restart (or a changed role): the elector must see it leave.
		return []election.Event{downEvent(e), upEvent(e)}
	case old.rating != e.rating:
		return []election.Event{{Kind: election.EventPeerRating, Peer: e.peer()}}
	}
	return nil
}

// admit admits a live member with valid metadata unless its tag collides.
func (t *table) admit(e *entry) []election.Event {
	if e.tag == t.self.tag {
		t.refuseTag(e, t.self.name, e.tag)
		return nil
	}
	var out []election.Event
	if h := t.tagHolder(e.tag); h != nil {
		if core.CompareID(e.name, h.name) > 0 {
			t.refuseTag(e, h.name, e.tag)
			return nil
		}
		out = t.demote(h)
		t.refuseTag(h, e.name, e.tag)
	}
	e.set(flagAdmitted, true)
	t.setRefused(e, refusedNone)
	return append(out, upEvent(e))
}

// sameTag returns the entries whose tag is tag: neighbours in the slice,
// usually one or none.
func (t *table) sameTag(tag uint32) []entry {
	i, _ := slices.BinarySearchFunc(t.peers, tag, func(e entry, tag uint32) int { return cmp.Compare(e.tag, tag) })
	j := i
	for j < len(t.peers) && t.peers[j].tag == tag {
		j++
	}
	return t.peers[i:j]
}

// promote admits the lowest-named live member refused for tag, if any,
// now that the tag's holder is gone.
func (t *table) promote(tag uint32) []election.Event {
	if t.collided == 0 {
		return nil // nobody is waiting for a tag (each departure asks)
	}
	var best *entry
	same := t.sameTag(tag)
	for i := range same {
		if e := &same[i]; e.is(flagAlive) && e.refused == refusedTag &&
			(best == nil || core.CompareID(e.name, best.name) < 0) {
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

// tagHolder returns the admitted peer whose name has tag, or nil: a
// binary search, since every member admits every other (a scan was O(n)
// per admission, O(n²) per member at start-up).
func (t *table) tagHolder(tag uint32) *entry {
	same := t.sameTag(tag)
	for i := range same {
		if same[i].is(flagAdmitted) {
			return &same[i]
		}
	}
	return nil
}

func (t *table) refuseTag(e *entry, other string, tag uint32) {
	if e.refused != refusedTag {
		t.log.Error("refusing member: its core.Tag equals another member's, terms would be ambiguous; rename one",
			"member", e.name, "other", other, "tag", tag)
		t.stats.refusedTag.Add(1)
	}
	t.setRefused(e, refusedTag)
}

// demote hides an admitted member from the elector.
func (t *table) demote(e *entry) []election.Event {
	if !e.is(flagAdmitted) {
		return nil
	}
	e.set(flagAdmitted, false)
	return []election.Event{downEvent(e)}
}

func (e *entry) peer() core.Peer {
	return core.Peer{ID: e.name, Rating: e.rating, NonVoter: e.is(flagNonVoterPeer)}
}

func upEvent(e *entry) election.Event {
	return election.Event{Kind: election.EventPeerUp, Peer: e.peer(), Named: e.is(flagNamedPeer)}
}

func downEvent(e *entry) election.Event {
	return election.Event{Kind: election.EventPeerDown, Peer: core.Peer{ID: e.name}}
}

// prune forgets members that departed more than forget ago and returns
// their names.
func (t *table) prune(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.left) == 0 || !now.After(t.nextPrune) {
		return nil
	}
	var gone []string
	var next time.Time
	for name, since := range t.left {
		if due := since.Add(t.forget); now.After(due) {
			delete(t.left, name)
			gone = append(gone, name)
		} else if next.IsZero() || due.Before(next) {
			next = due
		}
	}
	if len(gone) > 0 {
		t.listed -= len(gone)
		t.forgetUnlisted()
	}
	t.nextPrune = next
	return gone
}

// forgetUnlisted deletes the entries that neither the table lists nor the
// guard holds; an entry the guard holds but the table no longer lists (its
// return is queued) keeps its name and address alone, as if new.
func (t *table) forgetUnlisted() {
	t.peers = slices.DeleteFunc(t.peers, func(e entry) bool {
		if e.is(flagAlive) {
			return false
		}
		_, departed := t.left[e.name]
		return !departed && !e.is(flagHeld)
	})
	for i := range t.peers {
		e := &t.peers[i]
		if _, departed := t.left[e.name]; !departed && !e.is(flagAlive) {
			t.setRefused(e, refusedNone)
			*e = entry{name: e.name, addr: e.addr, tag: e.tag, flags: flagHeld}
		}
	}
}

// departed returns the addresses of up to k members that left or died
// and are still remembered, the latest first.
func (t *table) departed(k int) []string {
	t.mu.RLock()
	if len(t.left) == 0 {
		t.mu.RUnlock()
		return nil
	}
	type gone struct {
		addr  string
		since time.Time
	}
	var all []gone
	for name, since := range t.left {
		if e := t.get(name); e != nil && !e.addr.none() {
			all = append(all, gone{e.address(), since})
		}
	}
	t.mu.RUnlock()
	slices.SortFunc(all, func(a, b gone) int { return b.since.Compare(a.since) })
	out := make([]string, 0, min(k, len(all)))
	for _, g := range all[:min(k, len(all))] {
		out = append(out, g.addr)
	}
	return out
}

// size returns how many members the table lists, this node included.
func (t *table) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.listed + 1
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
	check := func(e *entry) {
		if e.addr.none() {
			return
		}
		ip := netip.AddrFrom16(e.addr.ip).Unmap()
		if a, ok := want[netip.AddrPortFrom(ip, e.addr.port)]; ok {
			live[a] = true
		}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	check(&t.self)
	for i := range t.peers {
		if e := &t.peers[i]; e.is(flagAlive) {
			check(e)
		}
	}
	return live
}

// target is what the sender needs to reach an admitted member.
type target struct {
	node  memberlist.Node
	boot  uint64
	named bool // it runs named elections: it takes batch frames (flagNamedPeer)
}

// target returns an admitted live member's address and boot ID.
func (t *table) target(name string) (target, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e := t.get(name)
	if e == nil || !e.is(flagAdmitted) {
		return target{}, false
	}
	n := memberlist.Node{Name: name, Addr: e.addr.IP(), Port: e.addr.port}
	return target{node: n, boot: e.boot, named: e.is(flagNamedPeer)}, true
}

// setSelfMeta records this node's new metadata.
func (t *table) setSelfMeta(m meta) {
	t.mu.Lock()
	t.self.setMeta(m, t.selfAlg)
	t.mu.Unlock()
}

// members lists this node and the members the table holds, by name,
// leaving out those departed more than forget before now (prune deletes
// them when the dispatcher next runs).
//
// It copies the entries under the lock and formats them after: the
// guard's hold and release, which memberlist calls with its node lock
// held, wait for the lock.
func (t *table) members(now time.Time) []Member {
	t.mu.RLock()
	listed := make([]entry, 0, t.listed+1)
	listed = append(listed, t.self)
	for i := range t.peers {
		e := &t.peers[i]
		if since, departed := t.left[e.name]; e.is(flagAlive) || departed && now.Sub(since) <= t.forget {
			listed = append(listed, *e)
		}
	}
	t.mu.RUnlock()
	out := make([]Member, len(listed))
	for i := range listed {
		out[i] = listed[i].member(i == 0, t.selfAlg)
	}
	slices.SortFunc(out, func(a, b Member) int { return core.CompareID(a.Name, b.Name) })
	return out
}

// member returns e as Members lists it; alg is this node's Algorithm.
func (e *entry) member(self bool, alg string) Member {
	m := Member{
		Name: e.name, Rating: e.rating, Voter: !e.is(flagNonVoterPeer),
		Algorithm: e.algorithm(alg), BootID: e.boot,
		Alive: e.is(flagAlive), Self: self, Refused: e.refused.String(), Payload: e.payload(),
	}
	if !e.addr.none() {
		m.Addr = e.address()
	}
	return m
}
