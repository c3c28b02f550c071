package group

import (
	"reflect"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// idle counts the packets of a settled cluster over some heartbeat
// intervals: the most any link carried in one interval (all, with
// heartbeats, with acks), and the most one member sent per interval.
type idle struct {
	worst             tally
	busiest           float64 // packets per interval sent by the busiest member
	pairsPerPacket    float64
	linksUsed, leadMx int
	elections         uint64 // elections started while counting
}

func measureIdle(t *testing.T, c *cluster, ns []string) idle {
	t.Helper()
	c.settle(ns, 300)
	c.run(4 * c.h) // guarded rounds move onto the instants (realign)
	c.run(c.h - c.now%c.h)
	c.counting = true
	const intervals = 20
	c.run(intervals * c.h)
	c.counting = false
	var r idle
	sent := map[string]int{}
	total := 0
	for l, per := range c.packets {
		r.linksUsed++
		for _, k := range per {
			r.worst.all = max(r.worst.all, k.all)
			r.worst.heartbeats = max(r.worst.heartbeats, k.heartbeats)
			r.worst.acks = max(r.worst.acks, k.acks)
			sent[l.from] += k.all
			total += k.all
		}
	}
	busiest, _ := maxMean(sent)
	r.busiest = float64(busiest) / intervals
	r.pairsPerPacket = float64(c.pairs) / float64(max(1, total))
	r.leadMx, _ = maxMean(c.loads(c.leaders(ns)))
	r.elections = c.elections
	for _, id := range c.ids {
		for _, name := range ns {
			if e := c.groups[id].names[name]; c.groups[id].Config().QuorumSize > 0 && e.offPhase() {
				t.Errorf("%s: %s's guarded rounds are still off the instants", id, name)
			}
		}
	}
	return r
}

// A coordinator of many names sends each destination its heartbeats of
// every name in one packet per heartbeat interval; with the quorum guard
// a follower sends each coordinator its acks of every name in one packet
// per interval too. Measured at n = 20, E = 1,000 under PlaceSpread
// (every member leads about 50 names), next to a one-name cluster of the
// same size.
func TestOnePacketPerDestinationPerInterval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quorum int
	}{{"no guard", 0}, {"guard", 20}} {
		t.Run(tc.name, func(t *testing.T) {
			n, e := 20, 1000
			if testing.Short() {
				e = 200
			}
			tweak := func(cfg *core.Config) { cfg.QuorumSize = tc.quorum }
			c := newCluster(t, n, tweak)
			ns := names(e)
			c.addStaggered(Options{Placement: PlaceSpread}, 7, ns...)
			many := measureIdle(t, c, ns)
			one := newCluster(t, n, tweak)
			one.add(Options{}, DefaultName)
			single := measureIdle(t, one, []string{DefaultName})
			t.Logf("%s, E=%d: per link per interval at most %d packets (%d with heartbeats, %d with acks); busiest member sends %.1f packets per interval (leads %d names), %.1f pairs a packet; one name: busiest sends %.1f per interval (ratio %.2f); elections started while idle: %d",
				tc.name, e, many.worst.all, many.worst.heartbeats, many.worst.acks, many.busiest, many.leadMx, many.pairsPerPacket,
				single.busiest, many.busiest/single.busiest, many.elections)
			if many.elections != 0 || single.elections != 0 {
				t.Errorf("%d elections started while idle (%d with one name)", many.elections, single.elections)
			}
			if many.worst.heartbeats != 1 || many.worst.acks > 1 {
				t.Errorf("a link carried %+v in one interval, want one packet of heartbeats and at most one of acks", many.worst)
			}
			// Without the guard a member heartbeats its successors and its
			// rotation's share of the others (doc.go, "Placement"): at
			// most 3W + B + 1 members an interval, not all n - 1.
			cfg := c.groups[c.ids[0]].Config()
			if bound := float64(spreadSuccessors*cfg.HeartbeatWatchers + cfg.HeartbeatBatch + 1); tc.quorum == 0 && many.busiest > bound {
				t.Errorf("the busiest member sends %.1f packets an interval, want at most %.0f", many.busiest, bound)
			}
			if tc.quorum == 0 && many.busiest > 2*single.busiest {
				t.Errorf("the busiest member sends %.1f packets an interval, more than twice a one-name cluster's %.1f", many.busiest, single.busiest)
			}
		})
	}
}

// sends records, for each tick of a lone group, which names' heartbeats
// its batches carried.
func sends(g *Group, ticks int) map[int][]string {
	out := map[int][]string{}
	for range ticks {
		g.Tick()
		for _, b := range g.Ready().Batches {
			if b.To != memberID(1) {
				continue
			}
			for _, p := range b.Pairs {
				if p.Msg.Type == core.MsgHeartbeat {
					out[g.Now()] = append(out[g.Now()], p.Name)
				}
			}
		}
	}
	return out
}

// A coordinator's routine heartbeats wait for the group's round instant
// (a multiple of HeartbeatInterval, 5 here); the first round of a term
// goes at once. Names a, b and c take the lead at ticks 0, 2 and 3: their
// first rounds go at 5, 7 and 8, their second ones (10, 12, 13) at 10 and
// 15, and from then on all three go together at every instant.
func TestRoutineHeartbeatsWait(t *testing.T) {
	g := newGroup(t, 3)
	lead := func(name string) {
		if err := g.Add(name, Options{}); err != nil {
			t.Fatal(err)
		}
		_ = g.With(name, func(n *core.Node) error { n.Bootstrap(g.ID(), core.MakeTerm(1, core.Tag(g.ID()))); return nil })
		g.Ready()
	}
	lead("a")
	g.Tick()
	g.Ready()
	g.Tick()
	g.Ready()
	lead("b")
	g.Tick()
	g.Ready()
	lead("c")
	got := sends(g, 22-g.Now())
	want := map[int][]string{5: {"a"}, 7: {"b"}, 8: {"c"}, 10: {"a"}, 15: {"b", "c", "a"}, 20: {"b", "c", "a"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("heartbeats to m01 by tick: %v, want %v", got, want)
	}
}

// With the quorum guard a name whose rounds fall between instants is
// given a round at the next instant, after which its rounds fall on the
// instants and wait for nothing.
func TestGuardedRoundsRealign(t *testing.T) {
	c := newCluster(t, 3, func(cfg *core.Config) { cfg.QuorumSize = 3 })
	c.addStaggered(Options{}, 3, "a", "b", "c")
	c.settle([]string{"a", "b", "c"}, 300)
	// Move the leaders of b and c off the instants: b's by a round
	// verified now (core.Node.VerifyRound), c's by a hand-off.
	for c.now%c.h != 2 {
		c.tick()
	}
	lb, _ := c.leader("b")
	_ = c.groups[lb].With("b", func(n *core.Node) error { n.VerifyRound(); return nil })
	lc, _ := c.leader("c")
	_ = c.groups[lc].With("c", func(n *core.Node) error { return n.Resign() })
	c.deliver()
	off := 0
	for range 100 {
		c.tick()
		for _, id := range c.ids {
			for _, e := range c.groups[id].names {
				if e.offPhase() {
					off++
				}
			}
		}
		if _, err := c.leader("c"); err == nil && off > 0 {
			break
		}
	}
	if off == 0 {
		t.Fatalf("no round went between instants: the test tests nothing")
	}
	c.run(3 * c.h)
	lead := c.groups[c.ids[0]]
	for _, name := range []string{"a", "b", "c"} {
		l, _ := c.leader(name)
		lead = c.groups[l]
		if e := lead.names[name]; e.offPhase() {
			t.Errorf("%s: rounds still between instants", name)
		}
	}
	// Every heartbeat from now on goes at an instant.
	c.counting = true
	c.run(4 * c.h)
	for l, per := range c.packets {
		for interval, k := range per {
			if k.heartbeats > 1 {
				t.Errorf("%v: %d heartbeat packets in interval %d", l, k.heartbeats, interval)
			}
		}
	}
}
