package membership

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/coordelect/coordelect/election/core"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// ErrNameTaken: another live member already holds this node's name (see
// NameTakenError).
var ErrNameTaken = errors.New("membership: name taken")

// NameTakenError says that two processes claim one member name. New
// returns it when this node is the newcomer; Node.Err returns it when the
// clash is found after New returned and this node yielded.
type NameTakenError struct {
	// Name is the name both members claim.
	Name string
	// Incumbent is the address of the member that keeps the name; Newcomer
	// the address of the one refused.
	Incumbent, Newcomer string
	// Self: this node is the newcomer (it has shut itself down).
	Self bool
}

// Error describes the clash and what to do about it.
func (e *NameTakenError) Error() string {
	if e.Self {
		return fmt.Sprintf("membership: name %q is taken by the member at %s; this node (%s) refuses to run under it: give it another name",
			e.Name, e.Incumbent, e.Newcomer)
	}
	return fmt.Sprintf("membership: refusing the member at %s: name %q is taken by the member at %s", e.Newcomer, e.Name, e.Incumbent)
}

// Unwrap returns ErrNameTaken.
func (e *NameTakenError) Unwrap() error { return ErrNameTaken }

// ErrIncompatible: a member's protocol version or shared election settings
// differ from this node's (see IncompatibleError).
var ErrIncompatible = errors.New("membership: incompatible member")

// IncompatibleError names the first setting in which a member differs from
// this node (a Config field, or ProtocolVersion) and both values. Both
// sides of a refused join log it; New returns it to the joining side.
type IncompatibleError struct {
	// Member and Addr are the other member's name and address.
	Member, Addr string
	// Field is the setting that differs: a Config field or ProtocolVersion.
	Field string
	// Ours and Theirs are its values here and there.
	Ours, Theirs string
	// Self: this node was joining (New returns the error).
	Self bool
}

// Error names the member, the setting and both values.
func (e *IncompatibleError) Error() string {
	s := fmt.Sprintf("membership: member %q at %s is incompatible: %s is %s there and %s here", e.Member, e.Addr, e.Field, e.Theirs, e.Ours)
	if e.Self {
		s += "; this node refuses to join: give every member the same " + e.Field
	}
	return s
}

// Unwrap returns ErrIncompatible.
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// guard decides, inside memberlist's callbacks, which members the node
// refuses before memberlist merges them: a second process under a name
// that a live member holds. It runs under memberlist's locks: it never
// blocks and never calls into memberlist; fail only records the error.
//
// Who yields when two processes claim one name: a node still inside New
// always does (it has not started electing); a running node yields only to
// a member that started before it (a smaller boot ID, the start time; ties
// by address), so both sides of a clash found after join agree on which
// one goes. A claim with a smaller boot ID (for this node's name) or a
// greater one (for another member's) is first checked with a ping to the
// old address: silence there makes it a restart at a new address, not a
// clash (restart.go). The live members and their addresses are mirrored from
// memberlist's own events (joined, left) into the table's entries
// (table.hold, held.go), so the check needs no call back into memberlist.
type guard struct {
	name  string
	boot  uint64
	own   meta // this node's settings, for compat
	table *table
	log   hclog.Logger
	stats *counters
	fail  func(error)

	// ping checks whether a process answers under a name at an address
	// and calls back with the answer, never blocking (Node.pingName);
	// rejoin asks for a join of an address (Node.askJoin). With ping nil,
	// every name at a second address is a clash (restart.go).
	ping   func(name, addr string, done func(answered bool))
	rejoin func(addr string)

	mu       sync.Mutex
	self     string             // this node's address, from its own NotifyJoin
	starting bool               // New has not returned
	voters   map[string]int64   // live voters' ratings, by name, while starting (for topVoter); then nil
	reported map[[2]string]bool // clashes already logged: name, address; nil until the first
	checks   map[checkKey]*check
	running  int                // checks of this node's own name with pings in flight
	idle     chan struct{}      // closed when running drops to 0 (awaitChecks)
	restarts map[string]string  // name: the new address of a member found restarted (restart.go)
	moved    map[string]addrKey // name: the earlier life memberlist still holds, the table follows the new one
	awaiting map[string]string  // name: the new address joined once memberlist let the earlier life go
	// update queues a membership item for the table (the inbox's push);
	// nil: a restart waits for memberlist (restart.go, moveRestart).
	update func(inboxItem)
}

// addrKey is a member's IP and port, packed: the guard compares them
// where it compared nodeAddr's "ip:port" strings (equal keys, equal
// strings), and the table keeps one per member. The IP is kept in its
// 16-byte form, IPv4 as ::ffff:a.b.c.d, whichever form memberlist gives
// (both print alike); 18 bytes with no length field, so that the table's
// entry fits in 64. The zero IP ("::", which memberlist never advertises)
// stands for none, as does an address longer than 16 bytes, which no IP is.
type addrKey struct {
	ip   [16]byte
	port uint16
}

// packAddr packs ip and port.
func packAddr(ip net.IP, port uint16) addrKey {
	k := addrKey{port: port}
	if ip16 := ip.To16(); ip16 != nil {
		copy(k.ip[:], ip16)
	}
	return k
}

func keyOf(n *memberlist.Node) addrKey { return packAddr(n.Addr, n.Port) }

// none reports that the key holds no IP.
func (k addrKey) none() bool { return k.ip == [16]byte{} }

// netIP returns the key's IP, 4 bytes for IPv4, without copying (nil if
// there is none); the slice shares k's array.
func (k *addrKey) netIP() net.IP {
	if k.none() {
		return nil
	}
	if ip := net.IP(k.ip[:]).To4(); ip != nil {
		return ip
	}
	return net.IP(k.ip[:])
}

// IP returns the address's IP (a new slice), nil if it has none.
func (k addrKey) IP() net.IP {
	if k.none() {
		return nil
	}
	return append(net.IP(nil), k.netIP()...)
}

// String is the address as nodeAddr prints it.
func (k addrKey) String() string {
	return net.JoinHostPort(k.netIP().String(), strconv.Itoa(int(k.port)))
}

// newGuard returns the guard of the node name, which keeps its mirror of
// memberlist's live members in table.
func newGuard(name string, own meta, table *table, log hclog.Logger, stats *counters, fail func(error)) *guard {
	return &guard{name: name, boot: own.Boot, own: own, table: table, log: log, stats: stats, fail: fail, starting: true,
		voters: make(map[string]int64)}
}

// report records that the clash key is being logged and returns whether it
// was new. Called with g.mu held.
func (g *guard) report(key [2]string) bool {
	if g.reported[key] {
		return false
	}
	if g.reported == nil {
		g.reported = make(map[[2]string]bool)
	}
	g.reported[key] = true
	return true
}

func nodeAddr(n *memberlist.Node) string {
	return net.JoinHostPort(net.IP(n.Addr).String(), strconv.Itoa(int(n.Port)))
}

// joined and left mirror memberlist's view of live members. memberlist
// calls them with its node lock held, so n's fields are read safely here
// and nowhere else: the *memberlist.Node that Members returns is memberlist's
// own, changed later under that lock.
//
// Each reports whether the event is to reach the table: not when it is
// about the earlier life of a member the table already follows at its new
// address (restart.go, moveRestart).
func (g *guard) joined(n *memberlist.Node) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n.Name == g.name && g.self == "" {
		g.self = nodeAddr(n)
	}
	if n.Name == g.name {
		return true
	}
	if old, ok := g.moved[n.Name]; ok && old == keyOf(n) {
		return false // stale news of the earlier life
	}
	if g.restarts[n.Name] == nodeAddr(n) {
		delete(g.restarts, n.Name) // memberlist took the new address
	}
	delete(g.moved, n.Name)
	delete(g.awaiting, n.Name)
	g.table.hold(n.Name, keyOf(n))
	if g.voters == nil {
		return true
	}
	if md, err := decodeMeta(n.Meta); err == nil && !md.NonVoter {
		g.voters[n.Name] = md.Rating
	} else {
		delete(g.voters, n.Name)
	}
	return true
}

func (g *guard) left(n *memberlist.Node) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.earlierLifeGone(n) {
		return false
	}
	g.table.release(n.Name)
	delete(g.voters, n.Name)
	g.departed(n.Name, nodeAddr(n))
	return true
}

// topVoter returns the address of the highest-ranked live voter (by
// rating, then name, as the elector ranks) other than this node; "" if
// there is none. It answers while New runs (before started), where the
// join picks the member to introduce itself to.
func (g *guard) topVoter() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var best core.Rank
	addr := ""
	for name, rating := range g.voters {
		if a, ok := g.table.heldAddr(name); ok {
			if r := (core.Rank{Rating: rating, ID: name}); addr == "" || r.Compare(best) > 0 {
				best, addr = r, a.String()
			}
		}
	}
	return addr
}

// started marks the end of New: from now on this node yields a clash only
// to an older member, and stops keeping the voters' ratings (only New asks
// topVoter): every member keeps the guard's record of every other, and
// it holds the address alone (in the table's entry).
func (g *guard) started() {
	g.mu.Lock()
	g.starting = false
	g.voters = nil
	g.mu.Unlock()
}

// merge checks the live members of a push-pull that memberlist is about to
// merge (a join, in either direction); an error cancels the merge.
func (g *guard) merge(peers []*memberlist.Node) error {
	for _, p := range peers {
		if p.State != memberlist.StateAlive {
			continue
		}
		if err := g.checkName(p); err != nil {
			return err
		}
		if err := g.checkCompat(p, true); err != nil {
			return err
		}
	}
	return nil
}

// vetAlive vets a member memberlist heard is alive (gossip or push-pull): an
// error makes memberlist ignore the news. It refuses incompatible members
// that reach this node other than by a join.
func (g *guard) vetAlive(p *memberlist.Node) error { return g.checkCompat(p, false) }

// checkCompat refuses a coordelect member whose protocol version or shared
// election settings differ from this node's. A member without metadata is
// let through (the table refuses it as a peer, as for any non-coordelect
// member). At a join while New runs, the refusal is this node's fatal
// error, which New returns.
func (g *guard) checkCompat(p *memberlist.Node, merge bool) error {
	if p.Name == g.name || len(p.Meta) == 0 {
		return nil
	}
	err := g.incompatible(p)
	if err == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := [2]string{p.Name, err.Field + "=" + err.Theirs}
	if g.report(key) {
		g.stats.refusedCompat.Add(1)
		g.log.Error("refusing an incompatible member", "member", p.Name, "addr", err.Addr,
			"field", err.Field, "ours", err.Ours, "theirs", err.Theirs)
	}
	if merge && g.starting {
		self := *err
		self.Self = true
		g.fail(&self)
	}
	return err
}

func (g *guard) incompatible(p *memberlist.Node) *IncompatibleError {
	// memberlist asks on every alive message, those merged from each
	// push-pull's full member list included: the compatible case, nearly
	// every one, allocates nothing.
	fail := func(field, ours, theirs string) *IncompatibleError {
		return &IncompatibleError{Member: p.Name, Addr: nodeAddr(p), Field: field, Ours: ours, Theirs: theirs}
	}
	if p.Meta[0] != metaVersion {
		return fail("ProtocolVersion", fmt.Sprint(metaVersion), fmt.Sprint(p.Meta[0]))
	}
	m, err := decodeMeta(p.Meta)
	if err != nil {
		return fail("metadata", "valid", err.Error())
	}
	field, ours, theirs, ok := g.own.compat(m)
	if ok {
		return nil
	}
	return fail(field, fmt.Sprint(ours), fmt.Sprint(theirs))
}

// conflict is memberlist's report that other claims the name of a live
// member it knows (existing); memberlist has already ignored other. The
// check logs the clash, or makes this node yield.
func (g *guard) conflict(existing, other *memberlist.Node) {
	_ = g.checkName(other)
}

// checkName checks the live member p: its name, address and metadata.
func (g *guard) checkName(p *memberlist.Node) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	name, raw := p.Name, p.Meta
	var boot uint64
	if m, err := decodeMeta(raw); err == nil {
		boot = m.Boot
	}
	if name != g.name {
		if a, ok := g.table.heldAddr(name); ok && a != keyOf(p) {
			if handled, err := g.claimsRestart(name, a, nodeAddr(p), boot, p); handled {
				return err
			}
			return g.refuse(name, a.String(), nodeAddr(p))
		}
		return nil
	}
	addr := nodeAddr(p)
	if g.self == "" || addr == g.self {
		return nil
	}
	if handled, err := g.claimsSelf(addr, boot); handled {
		if taken := (*NameTakenError)(nil); errors.As(err, &taken) {
			g.fail(err)
		}
		return err
	}
	if g.yields(raw, addr) {
		err := &NameTakenError{Name: name, Incumbent: addr, Newcomer: g.self, Self: true}
		g.fail(err)
		return err
	}
	return g.refuse(name, g.self, addr)
}

// yields reports whether this node gives its name up to the member at addr
// with metadata raw. Called with g.mu held.
func (g *guard) yields(raw []byte, addr string) bool {
	if g.starting {
		return true
	}
	m, err := decodeMeta(raw)
	if err != nil || m.Boot == 0 {
		return false // not a coordelect member: it cannot displace us
	}
	return m.Boot < g.boot || (m.Boot == g.boot && addr < g.self)
}

// refuse logs and counts a refused newcomer, once per name and address.
// Called with g.mu held.
func (g *guard) refuse(name, incumbent, newcomer string) error {
	err := &NameTakenError{Name: name, Incumbent: incumbent, Newcomer: newcomer}
	key := [2]string{name, newcomer}
	if g.report(key) {
		g.stats.refusedName.Add(1)
		g.log.Error("refusing a member: its name is taken", "member", name, "incumbent", incumbent, "newcomer", newcomer)
	}
	return err
}
