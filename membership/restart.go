package membership

import (
	"errors"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// A member that comes back under its name at a new address (a Kubernetes
// pod recreated with a new IP) meets two records of its earlier life:
//
//   - memberlist keeps a name at one address while it holds the member
//     alive or suspect, and ignores an alive message for the same name at
//     another address ("conflicting address"). A member that left (Leave)
//     may take a new address at once; one declared dead may once
//     DeadNodeReclaimTime has passed (deadNodeReclaimTime below).
//   - the guard refuses a name held at another address (a clash).
//
// When the news of the departure has not reached a member yet, or the
// earlier life crashed, the two cannot be told apart from the claim alone:
// a restart and a second process under the same name both show the name
// at a new address with a greater boot ID. A ping to the old address
// under the name tells them apart: memberlist answers a ping only for its
// own name, so an answer means a live process still holds the name there
// (a clash), and silence means an earlier life.
//
// The restarted member (the claim is its own name, with a smaller boot ID,
// at an address not its own) checks the old address itself: while New
// runs, New waits for the check and fails with a *NameTakenError if the
// old address answers; later, a live holder makes it yield (Err). An
// earlier life does not stop it.
//
// Any other member that holds the name alive at the old address and hears
// the claim (a greater boot ID than the one it knows) checks the old
// address too, and refuses the claim as a clash if it answers. If it does
// not, the table follows the member at its new address at once (the
// elector sees a restart), while memberlist keeps the old record until
// its failure detector lets it go (moveRestart); then the new address is
// joined, and memberlist takes it (the old record is dead). A leave of the
// earlier life that arrives during the check settles it the same way. News
// of an earlier life (a smaller boot ID than the table's, at an address
// that does not answer) is ignored.

// deadNodeReclaimTime is the memberlist DeadNodeReclaimTime that the Node
// sets unless Config.Memberlist changes it: any positive value lets a
// member declared dead come back at another address; memberlist's default,
// 0, keeps its name at the old address until it forgets the dead member
// (GossipToTheDeadTime, 30 s with the LAN profile). The boot IDs and the
// check above tell a restart from a clash, so no further delay is needed.
const deadNodeReclaimTime = time.Nanosecond

// checkPings is how many pings (each waiting memberlist's ProbeTimeout) an
// old address gets before it counts as an earlier life: one lost datagram
// must not turn a live process into an earlier life.
const checkPings = 3

// maxChecks bounds the claims the guard remembers (each claim's sender is
// only a claim); beyond it, settled ones are forgotten, and with none to
// forget a new claim is refused as a clash without a check.
const maxChecks = 64

// errChecking cancels a merge that carries a claim under check: the join
// is tried again (re-joins, push-pulls) once the check has settled.
var errChecking = errors.New("membership: a member claims a name held at another address; checking whether the old address still answers")

// checkState is where the check of an old address stands.
type checkState uint8

const (
	checkRunning checkState = iota // pings in flight
	checkLive                      // the old address answered: a clash
	checkGone                      // no answer: an earlier life
)

// checkKind says which address of two claims to one name a check pings.
type checkKind uint8

const (
	checkSelf    checkKind = iota // this node's name at an older address; other: this node's
	checkRestart                  // a peer held at the pinged address, claimed newer at other
	checkEarlier                  // a peer held at other, claimed older at the pinged address
)

// check is the guard's record of one claim: the pinged address is in its
// key, the other address here.
type check struct {
	state checkState
	kind  checkKind
	other string
	claim nodeInfo // checkRestart: the member as the claim gives it
}

// checkKey is the name and the address pinged.
type checkKey = [2]string

// startCheck returns the state of the check that pings name at old, and
// starts one if there is none. ok is false when no check can run (no
// pinger, or too many claims): the caller treats the claim as a clash.
// Called with g.mu held.
func (g *guard) startCheck(kind checkKind, name, old, other string, claim *memberlist.Node) (st checkState, ok bool) {
	if g.ping == nil {
		return 0, false
	}
	key := checkKey{name, old}
	if c, found := g.checks[key]; found {
		return c.state, true
	}
	if len(g.checks) >= maxChecks {
		for k, c := range g.checks {
			if c.state != checkRunning {
				delete(g.checks, k)
			}
		}
		if len(g.checks) >= maxChecks {
			return 0, false
		}
	}
	if g.checks == nil {
		g.checks = make(map[checkKey]*check)
	}
	c := &check{state: checkRunning, kind: kind, other: other}
	if claim != nil {
		c.claim = nodeItem(itemUpdate, claim).node
	}
	g.checks[key] = c
	if kind == checkSelf {
		g.running++
	}
	g.ping(name, old, func(answered bool) { g.settle(key, answered) })
	return checkRunning, true
}

// settle records the result of the check key: answered says the old
// address answered a ping under the name.
func (g *guard) settle(key checkKey, answered bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settleLocked(key, answered)
}

// settleLocked is settle, with g.mu held.
func (g *guard) settleLocked(key checkKey, answered bool) {
	c := g.checks[key]
	if c == nil || c.state != checkRunning {
		return
	}
	if c.kind == checkSelf {
		g.running--
		if g.running == 0 && g.idle != nil {
			close(g.idle)
			g.idle = nil
		}
	}
	name, pinged := key[0], key[1]
	c.state = checkGone
	if answered {
		c.state = checkLive
	}
	switch {
	case answered && c.kind == checkSelf:
		g.fail(&NameTakenError{Name: name, Incumbent: pinged, Newcomer: c.other, Self: true})
	case answered && c.kind == checkRestart:
		_ = g.refuse(name, pinged, c.other)
	case answered:
		_ = g.refuse(name, c.other, pinged)
	case c.kind == checkSelf:
		g.log.Info("restarted at a new address: members still list this member's earlier life, and take this one once they see that one gone",
			"earlier", pinged, "now", c.other)
	case c.kind == checkRestart:
		g.log.Info("member restarted at a new address: taking it once its earlier life is declared gone",
			"member", name, "earlier", pinged, "now", c.other)
		if g.restarts == nil {
			g.restarts = make(map[string]string)
		}
		g.restarts[name] = c.other
		if a, held := g.table.heldAddr(name); !held || a.String() != pinged {
			g.joinRestart(name) // the earlier life went during the check
		} else {
			g.moveRestart(name, a, c.claim)
		}
	default:
		g.log.Debug("news of a member's earlier life ignored", "member", name, "earlier", pinged, "now", c.other)
	}
}

// departed settles a restart check at addr, the address memberlist has
// just let name go from (NotifyLeave): the earlier life left or was
// declared dead, which the pings would only confirm later, and the new
// address is joined at once. Called with g.mu held.
func (g *guard) departed(name, addr string) {
	key := checkKey{name, addr}
	if c := g.checks[key]; c != nil && c.state == checkRunning && c.kind == checkRestart {
		g.settleLocked(key, false)
	}
	g.joinRestart(name)
}

// moveRestart has the table follow a restarted member at its new address
// while memberlist still holds its earlier life alive at old. memberlist
// lets that one go only when its failure detector declares it dead: about
// 5 s with the LAN profile when every member suspects it, but up to
// SuspicionMaxTimeoutMult times that (24 s) when only a few do, as when
// the earlier life's leave reached all the others but this member (the
// restart's alive message replaces the leave in the others' gossip). Until
// then the table's address and metadata are the new life's: the elector
// sees a restart and sends to the new address. memberlist's later news of
// the earlier life (its death, stale alive messages) does not reach the
// table; its death joins the new address, so that memberlist takes it,
// and a failed join makes it a departure (joinDone). Called with g.mu
// held.
func (g *guard) moveRestart(name string, old addrKey, claim nodeInfo) {
	if g.update == nil || claim.Name != name {
		return
	}
	if g.moved == nil {
		g.moved = make(map[string]addrKey)
	}
	g.moved[name] = old
	g.table.hold(name, packAddr(claim.Addr, claim.Port))
	g.update(inboxItem{kind: itemUpdate, node: claim})
}

// earlierLifeGone handles memberlist's NotifyLeave for a member the table
// follows at a new address (moveRestart): it joins the new address and
// reports true, and the table hears nothing. Called with g.mu held.
func (g *guard) earlierLifeGone(n *memberlist.Node) bool {
	old, ok := g.moved[n.Name]
	if !ok || old != keyOf(n) {
		return false
	}
	delete(g.moved, n.Name)
	delete(g.restarts, n.Name)
	a, _ := g.table.heldAddr(n.Name) // the new address (moveRestart)
	if g.awaiting == nil {
		g.awaiting = make(map[string]string)
	}
	g.awaiting[n.Name] = a.String()
	g.rejoin(a.String())
	return true
}

// joinDone is told that a join of addr, asked for by askJoin, has
// returned. A member awaiting memberlist at that address (earlierLifeGone)
// that memberlist has still not taken (joined) has gone too: the table
// hears of its departure.
func (g *guard) joinDone(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, a := range g.awaiting {
		if a != addr {
			continue
		}
		delete(g.awaiting, name)
		held, ok := g.table.heldAddr(name)
		if !ok || held.String() != addr {
			continue
		}
		g.table.release(name)
		g.update(inboxItem{kind: itemLeave, node: nodeInfo{Name: name, Addr: held.IP(), Port: held.port}})
	}
}

// joinRestart asks for a join of the new address of name, if a check
// found that it restarted there. Called with g.mu held.
func (g *guard) joinRestart(name string) {
	addr, ok := g.restarts[name]
	if !ok {
		return
	}
	delete(g.restarts, name)
	if g.rejoin != nil {
		g.rejoin(addr)
	}
}

// awaitChecks waits until no check of this node's own name runs (New
// waits for those its joins started) or stop is closed.
func (g *guard) awaitChecks(stop <-chan struct{}) {
	g.mu.Lock()
	if g.running == 0 {
		g.mu.Unlock()
		return
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
	case <-stop:
	}
}

// claimsSelf handles a live member under this node's name at addr, another
// address, whose metadata gives boot: an earlier life of this member when
// boot is smaller and the old address does not answer. It returns handled
// false when the claim is not that (the caller applies the clash rules).
// Called with g.mu held.
func (g *guard) claimsSelf(addr string, boot uint64) (handled bool, err error) {
	if boot == 0 || boot >= g.boot {
		return false, nil
	}
	st, ok := g.startCheck(checkSelf, g.name, addr, g.self, nil)
	switch {
	case !ok:
		return false, nil
	case st == checkGone:
		return true, nil // memberlist ignores it: this node holds the name
	case st == checkLive:
		return true, &NameTakenError{Name: g.name, Incumbent: addr, Newcomer: g.self, Self: true}
	case g.starting:
		return true, nil // New waits for the check
	}
	return true, errChecking
}

// claimsRestart handles a live member name at claim while memberlist holds
// it alive at held. A boot ID greater than the one the table knows is a
// restart when held does not answer a ping; a smaller one is news of an
// earlier life, ignored when claim does not answer (memberlist ignores it
// too: the name is held). handled false: apply the clash rules. Called
// with g.mu held.
func (g *guard) claimsRestart(name string, held addrKey, claim string, boot uint64, p *memberlist.Node) (handled bool, err error) {
	if old, ok := g.moved[name]; ok && old.String() == claim {
		return true, nil // the earlier life, which memberlist still holds
	}
	known := g.table.boot(name)
	if known == 0 || boot == 0 || boot == known {
		return false, nil
	}
	if boot < known {
		st, ok := g.startCheck(checkEarlier, name, claim, held.String(), nil)
		if !ok {
			return false, nil
		}
		if st == checkLive {
			return true, &NameTakenError{Name: name, Incumbent: held.String(), Newcomer: claim}
		}
		return true, nil
	}
	st, ok := g.startCheck(checkRestart, name, held.String(), claim, p)
	switch {
	case !ok:
		return false, nil
	case st == checkGone:
		if g.restarts == nil {
			g.restarts = make(map[string]string)
		}
		g.restarts[name] = claim
		return true, nil
	case st == checkLive:
		return true, &NameTakenError{Name: name, Incumbent: held.String(), Newcomer: claim}
	}
	return true, errChecking
}

// pingName pings name at addr up to checkPings times, through memberlist,
// and calls done with whether it answered, on a goroutine of its own (the
// guard calls it under memberlist's lock). After Close, done is not called.
func (n *Node) pingName(name, addr string, done func(answered bool)) {
	n.bg.goFunc(func() {
		select {
		case <-n.created:
		case <-n.stop:
			return
		}
		udp, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			done(false)
			return
		}
		for range checkPings {
			if n.stopping() {
				return
			}
			if _, err := n.ml.Ping(name, udp); err == nil {
				done(true)
				return
			}
		}
		done(false)
	})
}
