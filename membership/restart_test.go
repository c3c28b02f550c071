package membership

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// pinger is a guard's ping that the test answers.
type pinger struct {
	asked []string // "name@addr"
	done  map[string]func(bool)
}

func (p *pinger) ping(name, addr string, done func(bool)) {
	p.asked = append(p.asked, name+"@"+addr)
	p.done[name+"@"+addr] = done
}

// The guard's rules for one name at two addresses, with the pings
// answered by the test: a peer's newer boot ID at a new address is checked
// at the old address (a restart when silent, a clash when answered), and
// its new address joined once memberlist lets the old one go (at once if
// that happens during the check); a peer's
// older boot ID is checked at its own address and ignored when silent;
// this node's name at another address with an older boot ID is checked
// there, and makes this node yield only when answered.
func TestGuardRestartClaims(t *testing.T) {
	stats := &counters{}
	tb := newTable("self", meta{Boot: 10}, time.Minute, hclog.NewNullLogger(), stats)
	var failed error
	g := newGuard("self", meta{Boot: 10}, tb, hclog.NewNullLogger(), stats, func(err error) { failed = err })
	p := &pinger{done: map[string]func(bool){}}
	var joins []string
	g.ping, g.rejoin = p.ping, func(addr string) { joins = append(joins, addr) }
	node := func(name string, port uint16, boot uint64) *memberlist.Node {
		return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: port, Meta: meta{Boot: boot}.encode()}
	}
	g.joined(node("self", 9, 10))
	g.joined(node("a", 1, 5))
	tb.alive(nodeInfo{Name: "a", Addr: net.IPv4(127, 0, 0, 1).To4(), Port: 1, Meta: meta{Boot: 5}.encode()}, time.Now())

	// a restarted at :2 (boot 7): checked at :1, silent: a restart.
	if err := g.checkName(node("a", 2, 7)); !errors.Is(err, errChecking) {
		t.Fatalf("a newer a at :2 while :1 is checked: %v, want errChecking", err)
	}
	if err := g.checkName(node("a", 2, 7)); !errors.Is(err, errChecking) || len(p.asked) != 1 || p.asked[0] != "a@127.0.0.1:1" {
		t.Fatalf("the claim again: %v, pings %v; want one ping of a at :1", err, p.asked)
	}
	p.done["a@127.0.0.1:1"](false)
	if err := g.checkName(node("a", 2, 7)); err != nil || len(joins) != 0 {
		t.Fatalf("a at :2 after :1 was silent: %v, joins %v; want taken, no join while :1 is held", err, joins)
	}
	g.left(node("a", 1, 5))
	if len(joins) != 1 || joins[0] != "127.0.0.1:2" {
		t.Fatalf("joins after a's earlier life left: %v, want a's new address", joins)
	}

	// c restarted at :7 and its earlier life at :6 leaves while the check
	// runs: the leave settles it, and :7 is joined at once.
	g.joined(node("c", 6, 5))
	tb.alive(nodeInfo{Name: "c", Addr: net.IPv4(127, 0, 0, 1).To4(), Port: 6, Meta: meta{Boot: 5}.encode()}, time.Now())
	if err := g.checkName(node("c", 7, 8)); !errors.Is(err, errChecking) {
		t.Fatalf("a newer c at :7: %v, want errChecking", err)
	}
	g.left(node("c", 6, 5))
	if len(joins) != 2 || joins[1] != "127.0.0.1:7" {
		t.Fatalf("joins after c's earlier life left during the check: %v, want c's new address", joins)
	}
	p.done["c@127.0.0.1:6"](false) // the pings end later: nothing more

	// d restarted at :11 while memberlist keeps its earlier life at :10
	// alive (it has not detected the death yet): with an inbox, the table
	// follows :11 at once; memberlist's later news of :10 stays out of it;
	// its death joins :11, and a join that brings nothing back makes d a
	// departure.
	var items []inboxItem
	g.update = func(it inboxItem) { items = append(items, it) }
	g.joined(node("d", 10, 5))
	tb.alive(nodeInfo{Name: "d", Addr: net.IPv4(127, 0, 0, 1).To4(), Port: 10, Meta: meta{Boot: 5}.encode()}, time.Now())
	_ = g.checkName(node("d", 11, 9))
	p.done["d@127.0.0.1:10"](false)
	if a, ok := tb.heldAddr("d"); !ok || a.String() != "127.0.0.1:11" || len(items) != 1 || items[0].kind != itemUpdate || items[0].node.address() != "127.0.0.1:11" {
		t.Fatalf("after :10 was silent: d held at %v, items %+v; want the table moved to :11", a, items)
	}
	if err := g.checkName(node("d", 10, 5)); err != nil || stats.refusedName.Load() != 0 {
		t.Fatalf("memberlist's news of d at :10: %v, want ignored", err)
	}
	if g.joined(node("d", 10, 5)) {
		t.Fatal("an update of d's earlier life reached the table")
	}
	if g.left(node("d", 10, 5)) || len(joins) != 3 || joins[2] != "127.0.0.1:11" {
		t.Fatalf("memberlist let d's earlier life go: joins %v; want :11 joined and the table not told", joins)
	}
	g.joinDone("127.0.0.1:11") // memberlist did not take :11
	if _, ok := tb.heldAddr("d"); ok || len(items) != 2 || items[1].kind != itemLeave || items[1].node.Name != "d" {
		t.Fatalf("after the join of :11 failed: items %+v; want d's departure", items)
	}
	g.update = nil

	// News of b's earlier life (boot 3 at :4, b held at :3 with boot 6):
	// checked at :4; silent: ignored, answered: a clash.
	g.joined(node("b", 3, 6))
	tb.alive(nodeInfo{Name: "b", Addr: net.IPv4(127, 0, 0, 1).To4(), Port: 3, Meta: meta{Boot: 6}.encode()}, time.Now())
	if err := g.checkName(node("b", 4, 3)); err != nil {
		t.Fatalf("b's earlier life at :4: %v, want ignored while checked", err)
	}
	p.done["b@127.0.0.1:4"](false)
	if err := g.checkName(node("b", 4, 3)); err != nil || stats.refusedName.Load() != 0 {
		t.Fatalf("b's earlier life, silent: %v, refused %d", err, stats.refusedName.Load())
	}
	_ = g.checkName(node("b", 5, 2))
	p.done["b@127.0.0.1:5"](true)
	var taken *NameTakenError
	if err := g.checkName(node("b", 5, 2)); !errors.As(err, &taken) || stats.refusedName.Load() != 1 {
		t.Fatalf("an older b at :5 that answers: %v, refused %d; want a clash, counted", err, stats.refusedName.Load())
	}

	// This node's name at :8 with an older boot ID, while New runs:
	// accepted while checked, a clash when :8 answers.
	if err := g.checkName(node("self", 8, 4)); err != nil || failed != nil {
		t.Fatalf("this node's name at :8 while starting: %v, failed %v; want it checked", err, failed)
	}
	p.done["self@127.0.0.1:8"](true)
	if !errors.As(failed, &taken) || !taken.Self || taken.Incumbent != "127.0.0.1:8" || taken.Newcomer != "127.0.0.1:9" {
		t.Fatalf("after :8 answered: failed %v, want a *NameTakenError with Self", failed)
	}
}
