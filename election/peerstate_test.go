package election

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// BenchmarkPeerState measures what one member's elector holds for each
// other member once all have joined: the core node's view (its roster;
// Status builds its member list from it at each call, which is not
// counted), fed n PeerUps as the loop handles a join's push-pull (one
// flush after them). The members'
// names are allocated before the first reading and are not counted (the
// transport's copies, which the events share). It reports the live heap
// the state adds, per peer (B/peer), after two collections; the time per
// op is not a figure. membership's BenchmarkPeerState is the same for the
// membership layer.
//
//	go test ./election -run '^$' -bench PeerState -benchtime 3x
func BenchmarkPeerState(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			names := make([]string, n)
			for i := range names {
				names[i] = strconv.Itoa(i + 1)
			}
			var perPeer, settled float64
			for b.Loop() {
				perPeer, settled = electorStateBytes(b, names)
			}
			b.ReportMetric(perPeer, "B/peer")
			b.ReportMetric(settled, "B/peer-settled")
		})
	}
}

// electorStateBytes builds one elector's state for the members names (in
// an order other than ID order, as gossip brings them) and returns the
// live heap it adds, per member: right after the joins, and once the view
// has settled and the roster given back its spare room (clipRoster).
func electorStateBytes(b *testing.B, names []string) (joined, settled float64) {
	cfg := DefaultConfig()
	cfg.Transport = stubTransport{Identity{Name: "self", Rating: 0}}
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	e.flush()
	before := liveHeap()
	for i := range names {
		k := (i * 7919) % len(names) // a permutation: n is not a multiple of 7919
		e.handle(&Event{Kind: EventPeerUp, Peer: core.Peer{ID: names[k], Rating: int64(k + 1)}})
	}
	e.membersBuilt = time.Time{} // the members are counted at this flush, not up to n ms later
	e.flush()
	after := liveHeap()
	if got := len(e.Status().Members); got != len(names)+1 {
		b.Fatalf("the status lists %d members, want %d", got, len(names)+1)
	}
	e.view.Lock()
	e.node.ClipRoster()
	e.view.Unlock()
	clipped := liveHeap()
	runtime.KeepAlive(e)
	return float64(after-before) / float64(len(names)), float64(clipped-before) / float64(len(names))
}

// liveHeap returns the live heap after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
