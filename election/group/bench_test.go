package group

import (
	"strconv"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// benchGroup returns member m00's group of n members with e names (weights
// all 1, View mode), every name settled with coordinator lead (this
// member, or another) in term 1.
func benchGroup(b *testing.B, n, e int, placement Placement, lead string) (*Group, []string) {
	b.Helper()
	peers := make([]core.Peer, n)
	for i := range peers {
		peers[i] = core.Peer{ID: memberID(i), Rating: 1}
	}
	cfg := core.DefaultConfig()
	cfg.ID, cfg.Roster, cfg.Mode = memberID(0), core.MustRoster(peers), core.View
	g, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ns := names(e)
	for _, name := range ns {
		if err := g.Add(name, Options{Placement: placement}); err != nil {
			b.Fatal(err)
		}
	}
	term := core.MakeTerm(1, core.Tag(lead))
	for _, name := range ns {
		_ = g.With(name, func(n *core.Node) error { n.Bootstrap(lead, term); return nil })
	}
	g.Ready()
	return g, ns
}

// heartbeatBatch is a batch from member from of one heartbeat round
// (number seq) of each of names, as a coordinator in term 1 sends it.
func heartbeatBatch(from, to string, names []string, g *Group) Batch {
	b := Batch{From: from, To: to}
	term := core.MakeTerm(1, core.Tag(from))
	for _, name := range names {
		r, _ := g.Node(name).Roster().Get(from)
		b.Pairs = append(b.Pairs, Pair{Name: name, Msg: core.Message{Type: core.MsgHeartbeat, From: from, To: to,
			Coordinator: from, Term: term, Rating: r.Rating, Seq: 1}})
	}
	return b
}

// BenchmarkStepBatch: a follower's group takes one batch of k heartbeats
// (one per name, each name's next round) and its Ready.
func BenchmarkStepBatch(b *testing.B) {
	for _, k := range []int{1, 10, 100} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			g, ns := benchGroup(b, 20, 1000, PlaceSpread, memberID(1))
			batch := heartbeatBatch(memberID(1), memberID(0), ns[:k], g)
			b.ReportAllocs()
			for b.Loop() {
				for i := range batch.Pairs {
					batch.Pairs[i].Msg.Seq++
				}
				g.Step(batch)
				g.Ready()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(k), "ns/pair")
		})
	}
}

// BenchmarkTick: one tick and Ready of a group of E names, in the steady
// state of a follower of every name (its coordinator's heartbeat batch
// of every name arrives each interval, and is part of the cost) and of
// the coordinator of every name (its rounds of every name go out each
// interval, in batches, without the quorum guard).
func BenchmarkTick(b *testing.B) {
	for _, e := range []int{100, 1000} {
		b.Run("follower/E="+strconv.Itoa(e), func(b *testing.B) {
			g, ns := benchGroup(b, 20, e, PlaceSpread, memberID(1))
			batch := heartbeatBatch(memberID(1), memberID(0), ns, g)
			h := g.Config().HeartbeatInterval
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				g.Tick()
				if i%h == 0 {
					for j := range batch.Pairs {
						batch.Pairs[j].Msg.Seq++
					}
					g.Step(batch)
				}
				g.Ready()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e), "ns/name")
		})
		b.Run("leader/E="+strconv.Itoa(e), func(b *testing.B) {
			g, _ := benchGroup(b, 20, e, PlaceSpread, memberID(0))
			b.ReportAllocs()
			pairs := 0
			for b.Loop() {
				g.Tick()
				for _, bt := range g.Ready().Batches {
					pairs += len(bt.Pairs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(e), "ns/name")
			b.ReportMetric(float64(pairs)/float64(b.N), "pairs/tick")
		})
	}
}

// BenchmarkPlace: working the spread assignment out again for E names
// over n = 20 members, which a new member, a change of rating or of
// candidacy, or an added or removed spread name costs (at most once a
// HeartbeatInterval, however many changes it follows).
func BenchmarkPlace(b *testing.B) {
	g, _ := benchGroup(b, 20, 1000, PlaceSpread, memberID(1))
	b.ReportAllocs()
	for b.Loop() {
		g.place()
	}
}

// BenchmarkCandidacyFrame is one candidacy change from another member
// and the Ready after it, as the runtime's loop takes a candidacy frame,
// at n = 20 and 1,000 spread names; the clock moves a tick every 10
// frames. The assignment is worked out again at most once an interval
// (settlePlace), not once a frame.
func BenchmarkCandidacyFrame(b *testing.B) {
	g, ns := benchGroup(b, 20, 1000, PlaceSpread, memberID(1))
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if err := g.PeerCandidate(memberID(2), ns[k%len(ns)], k/len(ns)%2 == 1); err != nil {
			b.Fatal(err)
		}
		g.Ready()
		if k++; k%10 == 0 {
			g.Tick()
		}
	}
}

// BenchmarkAddBurst: a member of n = 20 that runs 1,000 spread names adds
// 1,000 more, one at a time, each read back at once (as the runtime's
// Election does), then hands over the Ready after them; reported per
// added name. The adds of one tick share one assignment (Add).
func BenchmarkAddBurst(b *testing.B) {
	more := make([]string, 1000)
	for i := range more {
		more[i] = "more-" + strconv.Itoa(i)
	}
	for range b.N {
		b.StopTimer()
		g, _ := benchGroup(b, 20, 1000, PlaceSpread, memberID(1))
		b.StartTimer()
		for _, name := range more {
			if err := g.Add(name, Options{Placement: PlaceSpread}); err != nil {
				b.Fatal(err)
			}
			if g.Node(name) == nil {
				b.Fatalf("%s not built", name)
			}
		}
		g.Ready()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(more)), "ns/add")
}
