package group

import (
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
			const n, e = 20, 1000
			tweak := func(cfg *core.Config) { cfg.QuorumSize = tc.quorum }
			c := newCluster(t, n, tweak)
			ns := names(e)
			c.add(Options{Placement: PlaceSpread}, ns...)
			many := measureIdle(t, c, ns)
			one := newCluster(t, n, tweak)
			one.add(Options{}, DefaultName)
			single := measureIdle(t, one, []string{DefaultName})
			t.Logf("%s, E=%d: per link per interval at most %d packets (%d with heartbeats, %d with acks); busiest member sends %.1f packets per interval (leads %d names), %.1f pairs a packet; one name: busiest sends %.1f per interval (ratio %.2f)",
				tc.name, e, many.worst.all, many.worst.heartbeats, many.worst.acks, many.busiest, many.leadMx, many.pairsPerPacket,
				single.busiest, many.busiest/single.busiest)
			if many.worst.heartbeats != 1 || many.worst.acks > 1 {
				t.Errorf("a link carried %+v in one interval, want one packet of heartbeats and at most one of acks", many.worst)
			}
		})
	}
}
