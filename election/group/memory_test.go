package group

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/coordelect/coordelect/election/core"
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Bytes per name per member: a settled cluster of n = 20 members
// hosting E = 1,000 spread names (every member leads about 50 and
// follows the rest), its live heap (runtime.MemStats.HeapAlloc after two
// collections, less the heap before it was built) divided by E * n; then
// where the bytes go, each part measured alike on its own. The issue's
// target is 2 KiB; the test fails above 2.5 KiB (a regression).
func TestBytesPerName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 40,000 nodes")
	}
	const n, e = 20, 1000
	for _, tc := range []struct {
		name   string
		quorum int
	}{{"no guard", 0}, {"guard", n}} {
		t.Run(tc.name, func(t *testing.T) {
			base := heapAlloc()
			c := newCluster(t, n, func(cfg *core.Config) { cfg.QuorumSize = tc.quorum })
			ns := names(e)
			c.add(Options{Placement: PlaceSpread}, ns...)
			c.settle(ns, 300)
			c.run(10 * c.h)
			c.flight = nil
			total := heapAlloc() - base
			perName := float64(total) / (n * e)

			// The parts, for member m00's nodes.
			g := c.groups[c.ids[0]]
			g.Ready()
			msgs := 0
			for _, name := range ns {
				msgs += cap(g.Node(name).Ready().Messages)
			}
			pairs := cap(g.out.pairs)
			roster := g.Node(ns[0]).Roster().Members()
			before := heapAlloc()
			nodes := make([]*core.Node, e)
			host, _ := core.NewHost(g.Config())
			shared := core.MustRoster(roster)
			for i := range nodes {
				nodes[i], _ = host.NewNode(g.ID(), shared)
			}
			nodeBytes := float64(heapAlloc()-before) / e
			before = heapAlloc()
			rosters := make([]*core.Roster, e)
			ratings, nonVoter := make([]int64, len(roster)), make([]bool, len(roster))
			for i, p := range roster {
				ratings[i], nonVoter[i] = p.Rating, p.NonVoter
			}
			for i := range rosters {
				rosters[i], _ = shared.WithRatings(ratings, nonVoter)
			}
			rosterBytes := float64(heapAlloc()-before) / e
			runtime.KeepAlive(nodes)
			runtime.KeepAlive(rosters)
			msgBytes := float64(msgs) / e * float64(unsafe.Sizeof(core.Message{}))
			pairBytes := float64(pairs) / e * float64(unsafe.Sizeof(Pair{}))
			t.Logf("%s: %.0f bytes per name per member (n=%d, E=%d: %d bytes in all); target 2048", tc.name, perName, n, e, total)
			t.Logf("  a new core.Node of the group's core.Host, with its algorithm's state: %.0f (the Node struct is %d bytes)", nodeBytes, unsafe.Sizeof(core.Node{}))
			t.Logf("  its roster of %d members (per-name ratings and ranks; the member list shared): %.0f", n, rosterBytes)
			t.Logf("  core.Ready.Messages kept once drained (none: the core.Host pools them): %.1f messages of %d bytes: %.0f", float64(msgs)/e, unsafe.Sizeof(core.Message{}), msgBytes)
			t.Logf("  the group's batch buffer (a round's pairs, every destination's): %.1f pairs of %d bytes: %.0f", float64(pairs)/e, unsafe.Sizeof(Pair{}), pairBytes)
			t.Logf("  the rest (the group's entry of %d bytes and maps; a leader's fan-out, pre-vote and guard books): %.0f",
				unsafe.Sizeof(entry{}), perName-nodeBytes-rosterBytes-msgBytes-pairBytes)
			if perName > 2560 {
				t.Errorf("%.0f bytes per name per member", perName)
			}
			runtime.KeepAlive(c)
		})
	}
}
