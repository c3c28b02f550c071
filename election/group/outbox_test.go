package group

import (
	"reflect"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// The outbox keeps every destination's pairs in one buffer: the batches
// due are each destination's pairs in the order they were queued, in the
// order of the destinations' first pairs, and the pairs that wait for
// the round instant go with the next batch of their destination.
func TestOutboxGroupsByDestination(t *testing.T) {
	g := &Group{}
	g.cfg.ID = "m0"
	q := func(to string, seq uint64, urgent bool) {
		g.out.queue(to, Pair{Name: "n", Msg: core.Message{From: "m0", To: to, Seq: seq}}, urgent)
	}
	// sent returns the pairs' Seq per destination, and the destinations
	// in the order of the batches.
	sent := func() (map[string][]uint64, []string) {
		seqs, order := map[string][]uint64{}, []string{}
		for _, b := range g.rd.Batches {
			order = append(order, b.To)
			for _, p := range b.Pairs {
				if p.Msg.To != b.To {
					t.Errorf("pair for %s in the batch to %s", p.Msg.To, b.To)
				}
				seqs[b.To] = append(seqs[b.To], p.Msg.Seq)
			}
		}
		g.rd.Batches = g.rd.Batches[:0]
		return seqs, order
	}
	q("b", 1, false)
	q("a", 2, true)
	q("b", 3, false)
	q("c", 4, false)
	q("a", 5, false)
	q("c", 6, true)
	g.sendDue() // between instants: a and c go, b waits
	seqs, order := sent()
	if want := map[string][]uint64{"a": {2, 5}, "c": {4, 6}}; !reflect.DeepEqual(seqs, want) || !reflect.DeepEqual(order, []string{"a", "c"}) {
		t.Fatalf("first Ready: %v in the order %v, want %v in the order [a c]", seqs, order, want)
	}
	q("a", 7, false)
	q("b", 8, false)
	g.out.flush = true
	g.sendDue() // a round instant: everything goes, b first (its pairs waited)
	seqs, order = sent()
	if want := map[string][]uint64{"a": {7}, "b": {1, 3, 8}}; !reflect.DeepEqual(seqs, want) || !reflect.DeepEqual(order, []string{"b", "a"}) {
		t.Fatalf("second Ready: %v in the order %v, want %v in the order [b a]", seqs, order, want)
	}
	g.out.reclaim()
	if len(g.out.pairs) != 0 || len(g.out.pending) != 0 {
		t.Fatalf("after the round: %d pairs, %d destinations pending, want none", len(g.out.pairs), len(g.out.pending))
	}
}
