package membership

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// BenchmarkPeerState measures what one member's membership state holds for
// each other member once all have joined: the inbox items of the join's
// push-pull (all n reported at once, then a settled cluster's one item)
// and the table's entry, which also holds the guard's record, fed as the
// delegate and the dispatcher feed them. memberlist's own nodes (names, addresses,
// metadata) are allocated before the first reading and are not counted.
// It reports the live heap the state adds, per peer (B/peer), after two
// collections; the time per op is not a figure.
//
//	go test ./membership -run '^$' -bench PeerState -benchtime 3x
func BenchmarkPeerState(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			nodes := make([]*memberlist.Node, n)
			for i := range nodes {
				nodes[i] = &memberlist.Node{
					Name: strconv.Itoa(i + 1),
					Addr: net.ParseIP(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)),
					Port: 7946,
					Meta: meta{Rating: int64(i + 1), Boot: uint64(i + 1), Algorithm: "bully"}.encode(),
				}
			}
			var perPeer, settled float64
			for b.Loop() {
				perPeer, settled = peerStateBytes(nodes)
			}
			b.ReportMetric(perPeer, "B/peer")
			b.ReportMetric(settled, "B/peer-settled")
		})
	}
}

// peerStateBytes builds one member's state for nodes and returns the live
// heap it holds, per node: right after the joins, and once the table has
// given back its spare room (clip, clipAfter later).
func peerStateBytes(nodes []*memberlist.Node) (joined, settled float64) {
	own := meta{Rating: 0, Boot: 1, Algorithm: "bully"}
	c := &counters{}
	before := liveHeap()
	tb := newTable("self", own, time.Minute, hclog.NewNullLogger(), c)
	g := newGuard("self", own, tb, hclog.NewNullLogger(), c, func(error) {})
	q := newInbox(64, c)
	g.started()
	for _, n := range nodes { // a join's push-pull: every member at once
		g.joined(n)
		q.push(nodeItem(itemJoin, n))
	}
	now := time.Now()
	buf := q.take(nil)
	for _, it := range buf {
		tb.alive(it.node, now)
	}
	q.push(nodeItem(itemUpdate, nodes[0])) // the settled cluster's next item
	buf = q.take(buf)
	for _, it := range buf {
		tb.alive(it.node, now)
	}
	after := liveHeap()
	tb.clip(now)
	tb.clip(now.Add(clipAfter))
	clipped := liveHeap()
	runtime.KeepAlive(g)
	runtime.KeepAlive(tb)
	runtime.KeepAlive(q)
	runtime.KeepAlive(buf)
	return float64(after-before) / float64(len(nodes)), float64(clipped-before) / float64(len(nodes))
}

// liveHeap returns the live heap after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
