package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// docs/algorithms.md, ring: one initiator with m working members
// costs m ELECTION hops and m COORDINATOR hops; in Textbook mode each dead
// successor passed costs one failed attempt more (a sent message), and
// every hop is acknowledged.
func TestRingSingleInitiatorCounts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dead      []string
		initiator string
	}{
		{"none dead", nil, "3"},
		{"coordinator dead", []string{"8"}, "1"},
		{"initiator before the dead coordinator", []string{"8"}, "7"},
		{"two dead in a row", []string{"8", "1"}, "5"},
		{"scattered dead", []string{"8", "2", "5"}, "3"},
		{"all but two dead", []string{"8", "1", "2", "3", "5", "6"}, "4"},
	} {
		for _, mode := range []Mode{Textbook, View} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				// No coordinator to start with: in View mode the view
				// reporting a coordinator dead makes every node elect.
				w := newTestNet(t, testCfg(Ring, mode), members(8, func(i int) int64 { return int64(10 * (i + 1)) }))
				w.crash(tc.dead...)
				w.detect(tc.initiator)
				c, term := w.settle(500)

				m, k := 8-len(tc.dead), len(tc.dead)
				if c != w.highestLive() || term.Tag() != Tag(c) {
					t.Fatalf("coordinator %s term %s, want %s", c, term, w.highestLive())
				}
				// Textbook mode's COORDINATOR lap takes m hops back to the
				// member that turned it; View mode tells the m - 1 others.
				wantElection, wantAck, wantCoord := m, 0, m-1
				if mode == Textbook {
					wantElection, wantAck, wantCoord = m+k, 2*m, m
				}
				if got := w.sent[MsgElection]; got != wantElection {
					t.Errorf("ELECTION messages = %d, want %d (m=%d, dead=%d)", got, wantElection, m, k)
				}
				if got := w.sent[MsgCoordinator]; got != wantCoord {
					t.Errorf("COORDINATOR messages = %d, want %d", got, wantCoord)
				}
				if got := w.sent[MsgAck]; got != wantAck {
					t.Errorf("ACK messages = %d, want %d", got, wantAck)
				}
				if got := w.counter(func(c *Counters) uint64 { return c.ElectionsStarted }); got != 1 {
					t.Errorf("elections started = %d, want 1", got)
				}
			})
		}
	}
}

// The COORDINATOR lap carries the list of working members and names the
// highest-ranked voter in it; the list holds every working member once, in
// ring order from the initiator.
func TestRingCoordinatorListsWorkingMembers(t *testing.T) {
	w := newTestNet(t, testCfg(Ring, Textbook), members(6, func(i int) int64 { return int64(i) }))
	w.bootstrap("6")
	w.crash("6", "2")
	var list []Peer
	w.observe = func(m Message) {
		if m.Type == MsgCoordinator && list == nil {
			list = m.Clone().List
		}
	}
	w.detect("4")
	w.settle(200)
	var got []string
	for _, p := range list {
		got = append(got, p.ID)
	}
	if fmt.Sprint(got) != "[4 5 1 3]" {
		t.Fatalf("COORDINATOR list = %v, want [4 5 1 3]", got)
	}
}

// Seeds 002/003: several participants may start at once; all must end
// agreeing. With IDs rising clockwise (tags rising) every lap but the
// highest-term one dies at the next initiator.
func TestRingConcurrentInitiatorsAgree(t *testing.T) {
	t.Run("two", func(t *testing.T) {
		for _, mode := range []Mode{Textbook, View} {
			w := newTestNet(t, testCfg(Ring, mode), members(8, func(i int) int64 { return int64((i * 5) % 8) }))
			w.bootstrap("1")
			w.crash("1")
			w.detect("3", "6")
			if c, _ := w.settle(500); c != w.highestLive() {
				t.Fatalf("%s: coordinator %s, want %s", mode, c, w.highestLive())
			}
		}
	})
	t.Run("all rising", func(t *testing.T) {
		const n = 16
		w := newTestNet(t, testCfg(Ring, View), members(n, func(i int) int64 { return int64(n - i) }))
		w.detect(w.ids...)
		c, _ := w.settle(500)
		if c != "1" {
			t.Fatalf("coordinator %s, want 1 (highest rating)", c)
		}
		// n-1 laps die after one hop; the highest-tag lap goes round.
		if got := w.sent[MsgElection]; got != 2*n-1 {
			t.Errorf("ELECTION messages = %d, want %d", got, 2*n-1)
		}
		// The member that turned the lap tells the n - 1 others (View mode).
		if got := w.sent[MsgCoordinator]; got != n-1 {
			t.Errorf("COORDINATOR messages = %d, want %d", got, n-1)
		}
	})
	t.Run("all falling", func(t *testing.T) {
		const n = 16
		ms := members(n, func(i int) int64 { return int64(i) })
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			ms[i], ms[j] = ms[j], ms[i] // tags fall clockwise: the worst case
		}
		w := newTestNet(t, testCfg(Ring, Textbook), ms)
		w.detect(w.ids...)
		if c, _ := w.settle(500); c != w.highestLive() {
			t.Fatalf("coordinator %s, want %s", c, w.highestLive())
		}
		if got, bound := w.sent[MsgElection], n*(n+1)/2; got > bound {
			t.Errorf("ELECTION messages = %d, want at most %d", got, bound)
		}
	})
}

// Random initiators, ratings, crashes and delivery orders (the ring needs no
// FIFO): every run ends with all running nodes following the highest-ranked
// live voter in one term.
func TestRingRandomSchedulesAgree(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 3 + rng.IntN(8)
		mode := Mode(rng.IntN(2))
		w := newTestNet(t, testCfg(Ring, mode), members(n, func(int) int64 { return rng.Int64N(5) }))
		w.rng = rng
		w.bootstrap(w.roster.ByRank(n - 1).ID)
		w.crash(w.roster.ByRank(n - 1).ID)
		for _, id := range w.ids[:rng.IntN(2)] {
			if !w.down[id] {
				w.crash(id)
			}
		}
		var live []string
		for _, id := range w.ids {
			if !w.down[id] && rng.IntN(3) == 0 {
				live = append(live, id)
			}
		}
		if len(live) == 0 {
			live = append(live, w.highestLive())
		}
		w.detect(live...)
		if c, _ := w.settle(2000); c != w.highestLive() {
			t.Fatalf("seed %d (%s): coordinator %s, want %s\n%s", seed, mode, c, w.highestLive(), w.dump())
		}
	}
}

// Both ring algorithms under random faults: random ratings (with ties),
// initiators, delivery orders (per-link FIFO for the active/relay ring, any
// order for the ring), a crash at a random point of the election, lost and
// duplicated messages for a while, a resign, restarts of crashed nodes.
// Every run must end with the running nodes agreeing on one coordinator in
// one term, which in View mode is the highest-ranked live voter. (Textbook
// mode cannot tell a member that died after the lap collected it, so there
// the coordinator may be a dead node; lost announcements need the heartbeat
// failure detector, which lossy runs turn on.)
func TestRingAlgorithmsRandomFaults(t *testing.T) {
	for seed := uint64(1); seed <= 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		alg, mode, lossy := Algorithm(1+rng.IntN(2)), Mode(rng.IntN(2)), rng.IntN(3) == 0
		cfg := testCfg(alg, mode)
		if lossy {
			cfg.HeartbeatMisses = 3
		}
		n := 3 + rng.IntN(8)
		w := newTestNet(t, cfg, members(n, func(int) int64 { return rng.Int64N(6) }))
		w.rng, w.fifo = rng, alg == Peterson || rng.IntN(2) == 0
		name := fmt.Sprintf("seed %d %s/%s lossy=%v", seed, alg, mode, lossy)
		faultyElection(w, rng, lossy)
		c := checkFaultyOutcome(t, w, name, w.highestLive())
		resigned := ""
		if !w.down[c] && rng.IntN(2) == 0 {
			resigned = c
			w.nodes[c].Resign()
			w.flush(c)
			checkFaultyOutcome(t, w, name+" after resign", w.highestLive(resigned))
		}
		for _, id := range w.ids {
			if w.down[id] && rng.IntN(2) == 0 {
				w.restart(id)
			}
		}
		// A later election may bring the resigned node back (it only
		// refrains from displacing its successor).
		checkFaultyOutcome(t, w, name+" after restarts", w.highestLive(), w.highestLive(resigned))
	}
}

// faultyElection starts an election from random initiators and injures it.
func faultyElection(w *testNet, rng *rand.Rand, lossy bool) {
	if rng.IntN(2) == 0 {
		top := w.roster.ByRank(len(w.ids) - 1).ID
		w.bootstrap(top)
		w.crash(top)
	}
	if lossy {
		loss, dup := 0.3*rng.Float64(), 0.3*rng.Float64()
		w.copies = func(Message) int {
			switch x := rng.Float64(); {
			case x < loss:
				return 0
			case x < loss+dup:
				return 2
			}
			return 1
		}
	}
	var initiators []string
	for _, id := range w.ids {
		if !w.down[id] && rng.IntN(3) == 0 {
			initiators = append(initiators, id)
		}
	}
	w.detect(append(initiators, w.highestLive())...)
	k := rng.IntN(30)
	w.deliverUntil(func(Message) bool { k--; return k < 0 })
	if up := len(w.ids) - len(w.down); up > 2 && rng.IntN(2) == 0 {
		for _, id := range rng.Perm(len(w.ids)) {
			if !w.down[w.ids[id]] {
				w.crash(w.ids[id])
				break
			}
		}
	}
	if lossy {
		for range 50 {
			w.tick()
		}
		w.copies = nil
	}
}

// checkFaultyOutcome waits for agreement; in View mode the coordinator
// must be one of want.
func checkFaultyOutcome(t *testing.T, w *testNet, name string, want ...string) string {
	t.Helper()
	w.deliver()
	// In View mode a voter that outranks an agreed coordinator asks it to
	// hand over (MsgPreempt) while still following it: such an agreement
	// is a step on the way, not the outcome.
	view := w.nodes[w.ids[0]].cfg.Mode == View
	for range 20 * lapTicks(w.nodes[w.ids[0]]) {
		if c, _, ok := w.agreed(); ok && (!view || slices.Contains(want, c)) {
			return c
		}
		w.tick()
	}
	t.Fatalf("%s: no agreement on %v\n%s", name, want, w.dump())
	return ""
}

// Non-voters forward the lap but are never chosen, however high their rating.
func TestRingNonVoterNeverChosen(t *testing.T) {
	ms := members(5, func(i int) int64 { return int64(i) })
	ms[4].NonVoter = true // the highest rating
	ms[2].NonVoter = true
	w := newTestNet(t, testCfg(Ring, Textbook), ms)
	w.detect("1")
	if c, _ := w.settle(200); c != "4" {
		t.Fatalf("coordinator %s, want 4 (the highest voter)", c)
	}
}

// A member crashes holding the ELECTION (it acknowledged it, so its
// predecessor does not skip it): the lap never returns, the election times
// out (lapTicks) and restarts in a new term.
func TestRingCrashMidElectionRestarts(t *testing.T) {
	w := newTestNet(t, testCfg(Ring, Textbook), members(6, func(i int) int64 { return int64(i) }))
	w.bootstrap("6")
	w.crash("6")
	w.detect("1")
	// Deliver hops until the lap has reached node 3, then crash 3 before
	// it acknowledges or forwards.
	w.deliverUntil(func(m Message) bool { return m.Type == MsgElection && m.To == "3" })
	// 3 receives and acknowledges the lap, then crashes before passing it on.
	w.nodes["3"].Step(w.pop())
	for _, m := range w.nodes["3"].Ready().Messages {
		if m.Type == MsgAck {
			w.queue = append(w.queue, m)
		}
	}
	w.crash("3")
	c, _ := w.settle(3 * lapTicks(w.nodes["1"]))
	if c != "5" {
		t.Fatalf("coordinator %s, want 5", c)
	}
	if w.counter(func(c *Counters) uint64 { return c.ElectionsRestarted }) == 0 {
		t.Fatal("no election was restarted")
	}
}

// View mode: the successor that holds the lap dies; the view tells its
// predecessor, which restarts at once instead of waiting for the timeout.
func TestRingViewSuccessorDownRestarts(t *testing.T) {
	w := newTestNet(t, testCfg(Ring, View), members(6, func(i int) int64 { return int64(i) }))
	w.bootstrap("6")
	w.crash("6")
	w.detect("1")
	w.deliverUntil(func(m Message) bool { return m.Type == MsgElection && m.To == "4" })
	w.crash("4")
	if got := w.total("3").ElectionsRestarted; got != 1 {
		t.Fatalf("node 3 restarted %d elections, want 1", got)
	}
	if c, _ := w.settle(10); c != "5" {
		t.Fatalf("coordinator %s, want 5", c)
	}
}

// View mode, coordinator crashed but membership has not said so yet (the
// heartbeat detector noticed): an election that replaces a coordinator has
// every ELECTION hop acknowledged, so the silent old coordinator is skipped
// after HopTimeout instead of swallowing the election, a live one
// acknowledges and stays in it, and so does a second member that died with
// it (issue 13 item 6: the lap waited for membership's seconds). Every
// live follower's detector fires (the tests' detectors are off, so Detect
// stands in for them): a lone detection would not pass the pre-vote while
// the others still count the coordinator heard.
func TestViewSuspectedCoordinator(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		for _, dead := range [][]string{nil, {"6"}, {"6", "3"}, {"6", "1"}, {"6", "5"}} {
			t.Run(fmt.Sprintf("%s/dead=%v", alg, dead), func(t *testing.T) {
				w := newTestNet(t, testCfg(alg, View), members(6, func(i int) int64 { return int64(i) }))
				w.bootstrap("6")
				w.tick()
				for _, id := range dead {
					w.down[id] = true // silently: the views still hold it alive
				}
				w.sent = [NumMsgTypes]int{}
				asked := 0 // ELECTION hops that ask for an Ack
				w.observe = func(m Message) {
					if m.Type != MsgElection {
						return
					}
					if m.Coordinator == m.To {
						asked++
					} else if m.From != "6" { // the old coordinator replaces nobody
						t.Errorf("%s -> %s: ELECTION that asks for no Ack", m.From, m.To)
					}
				}
				var followers []string
				for _, id := range w.ids {
					if id != "6" && !w.down[id] {
						followers = append(followers, id)
					}
				}
				w.detect(followers...)
				c, _ := w.settle(4 * (1 + len(dead)) * w.nodes["2"].cfg.HopTimeout)
				if want := w.highestLive(); c != want {
					t.Fatalf("coordinator %s, want %s", c, want)
				}
				if got := w.sent[MsgAck]; dead == nil && got != asked {
					t.Errorf("%d Acks for %d ELECTION hops that asked", got, asked)
				}
				if got := w.counter(func(c *Counters) uint64 { return c.ElectionsRestarted }); got != 0 {
					t.Errorf("%d elections restarted, want 0", got)
				}
			})
		}
	}
}

// View mode: a member dies after the lap listed it. If it would have been
// chosen it is passed over; if the COORDINATOR lap already names it, the
// first node that knows it is dead elects again.
func TestRingViewDeadCoordinatorNotFollowed(t *testing.T) {
	t.Run("passed over", func(t *testing.T) {
		w := newTestNet(t, testCfg(Ring, View), members(5, func(i int) int64 { return int64(i) }))
		w.detect("1")
		w.deliverUntil(func(m Message) bool { return m.Type == MsgElection && m.To == "1" })
		w.crash("5")
		if c, _ := w.settle(10); c != "4" {
			t.Fatalf("coordinator %s, want 4", c)
		}
	})
	t.Run("named", func(t *testing.T) {
		w := newTestNet(t, testCfg(Ring, View), members(5, func(i int) int64 { return int64(i) }))
		w.detect("1")
		w.deliverUntil(func(m Message) bool { return m.Type == MsgCoordinator })
		w.crash("5")
		if c, _ := w.settle(10); c != "4" {
			t.Fatalf("coordinator %s, want 4", c)
		}
		if w.counter(func(c *Counters) uint64 { return c.ElectionsRestarted }) == 0 {
			t.Fatal("no election was restarted")
		}
	})
}

// Resign: the coordinator hands off at once to the next voter by rating and
// does not displace it afterwards.
func TestRingsResignHandsOff(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		for _, mode := range []Mode{Textbook, View} {
			t.Run(alg.String()+"/"+mode.String(), func(t *testing.T) {
				w := newTestNet(t, testCfg(alg, mode), members(6, func(i int) int64 { return int64((i * 7) % 6) }))
				top := w.roster.ByRank(5).ID
				w.bootstrap(top)
				w.nodes[top].Resign()
				w.flush(top)
				c, term := w.settle(200)
				if want := w.roster.ByRank(4).ID; c != want {
					t.Fatalf("coordinator %s, want %s (next by rating)", c, want)
				}
				if term <= MakeTerm(1, Tag(top)) {
					t.Fatalf("term %s is not newer than the resigned coordinator's", term)
				}
				for i := 0; i < 50; i++ {
					w.tick()
				}
				if c2, _, ok := w.agreed(); !ok || c2 != c {
					t.Fatalf("after resign the cluster moved on to %q (ok=%v)", c2, ok)
				}
			})
		}
	}
}

// A node alone in its ring elects itself without sending anything (in
// View mode once SoloDelay has passed: it lost both peers at once).
func TestRingsAlone(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		for _, mode := range []Mode{Textbook, View} {
			w := newTestNet(t, testCfg(alg, mode), members(3, func(i int) int64 { return int64(i) }))
			w.crash("2", "3")
			w.detect("1")
			if c, _ := w.settle(100 + DefaultConfig().SoloDelay); c != "1" {
				t.Fatalf("%s/%s: coordinator %s, want 1", alg, mode, c)
			}
		}
	}
}

// The lap timeout grows with the ring, so a 10,000-member ring is not
// timed out mid-lap by its own size.
func TestLapTicksScalesWithRing(t *testing.T) {
	small := newTestNet(t, testCfg(Ring, View), members(10, func(i int) int64 { return int64(i) }))
	big := newTestNet(t, testCfg(Ring, View), members(1000, func(i int) int64 { return int64(i) }))
	s, b := lapTicks(small.nodes["1"]), lapTicks(big.nodes["1"])
	if b < 1000*DefaultConfig().RoundTrip || b <= s {
		t.Fatalf("lapTicks: 10 members %d, 1000 members %d: want it to grow with the ring", s, b)
	}
}

func BenchmarkRingElection(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			ms := members(n, func(i int) int64 { return int64(i) })
			var msgs int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w := newTestNet(b, testCfg(Ring, View), ms)
				b.StartTimer()
				w.detect("1")
				w.deliver()
				msgs = w.sent[MsgElection] + w.sent[MsgCoordinator]
			}
			b.ReportMetric(float64(msgs), "msgs/op")
		})
	}
}

// With the quorum guard on, the winner of either ring heartbeats at once to
// collect the acks that confirm it, and only then is it reported; a
// minority cannot confirm one. Freshly started nodes acknowledge no one for
// QuorumLeaseMax and its margin (a promise made before a restart may still
// hold, and may have been a stretched lease): 8 * 15 + 9 ticks, and
// refuse pre-votes as long; testCfg has no detector to try again, so the
// election starts after that hold.
func TestRingsQuorumGuard(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		for _, mode := range []Mode{Textbook, View} {
			cfg := testCfg(alg, mode)
			cfg.QuorumSize = 5
			cfg.QuorumLease = 15 // testCfg's K would make the default lease endless
			w := newTestNet(t, cfg, members(5, func(i int) int64 { return int64(i) }))
			for range 8*15 + 9 {
				w.tick()
			}
			w.detect("1")
			if c, _ := w.settle(40); c != "5" {
				t.Fatalf("%s/%s: coordinator %s, want 5", alg, mode, c)
			}
			w.crash("5", "4", "3")
			// Both notice (testCfg has no heartbeat detector): with the
			// guard a minority raises no term in either mode, so 1's
			// election no longer pulls 2 away from 5 (issue 13).
			w.detect("1", "2")
			for range 100 {
				w.tick()
			}
			for _, id := range []string{"1", "2"} {
				if s := w.nodes[id].Status(); s.Coordinator != "" {
					t.Fatalf("%s/%s: minority node %s reports coordinator %s", alg, mode, id, s.Coordinator)
				}
			}
		}
	}
}

// Regression (found by the simulator's explorer): the COORDINATOR carries
// the coordinator's rank, so a node whose view has an old, lower rating for
// it does not displace it at once (which restarted the election forever).
func TestRingsAnnounceCoordinatorRating(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		for _, mode := range []Mode{Textbook, View} {
			w := newTestNet(t, testCfg(alg, mode), members(5, func(i int) int64 { return int64(i) }))
			w.nodes["1"].SetRating(100) // nobody has heard of it yet
			w.observe = func(m Message) {
				if m.Type == MsgCoordinator && m.Value != (Rank{100, "1"}) {
					t.Fatalf("%s/%s: COORDINATOR carries %v, want the coordinator's rank {100 1}", alg, mode, m.Value)
				}
			}
			w.detect("3")
			if c, _ := w.settle(50); c != "1" {
				t.Fatalf("%s/%s: coordinator %s, want 1", alg, mode, c)
			}
			if got := w.counter(func(c *Counters) uint64 { return c.ElectionsStarted }); got != 1 {
				t.Fatalf("%s/%s: %d elections started, want 1", alg, mode, got)
			}
		}
	}
}

// Regression (found by the simulator's explorer): a node that resigned
// earlier stands again once a successor took over; two resigns in a row
// in a cluster of two live voters hand the role back and forth.
func TestRingsResignTwice(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		for _, mode := range []Mode{Textbook, View} {
			w := newTestNet(t, testCfg(alg, mode), members(3, func(i int) int64 { return int64(i) }))
			w.bootstrap("3")
			w.crash("2")
			for _, want := range []string{"1", "3", "1"} {
				c, _, _ := w.agreed()
				w.nodes[c].Resign()
				w.flush(c)
				if got, _ := w.settle(200); got != want {
					t.Fatalf("%s/%s: %s resigned, coordinator %s, want %s", alg, mode, c, got, want)
				}
			}
			if got := w.counter(func(c *Counters) uint64 { return c.ElectionsRestarted }); got != 0 {
				t.Fatalf("%s/%s: %d elections restarted, want 0 (the hand-offs go through at once)", alg, mode, got)
			}
		}
	}
}

// lapHops: how far the COORDINATOR lap still has to go from this node to
// the winner, the grace before a follower's failure detector counts.
func TestLapHops(t *testing.T) {
	for _, tc := range []struct {
		start, self, c, size, want int
	}{
		{0, 0, 5, 8, 5},  // the node that turns the lap, winner 5 hops on
		{0, 3, 5, 8, 2},  // on the way, before the winner
		{0, 6, 5, 8, 0},  // after the winner: it heartbeats already
		{6, 7, 5, 8, 6},  // the lap wraps round
		{6, 2, 5, 8, 3},  // after the wrap
		{2, 4, 2, 8, 0},  // the winner turned the lap
		{-1, 3, 5, 8, 2}, // unknown start: count from here
		{0, 3, -1, 8, 7}, // unknown winner: the farthest
		{0, -1, 5, 8, 0}, // this node is not on the lap
		{0, 0, 0, 1, 0},  // alone
	} {
		if got := lapHops(tc.start, tc.self, tc.c, tc.size); got != tc.want {
			t.Errorf("lapHops(%d, %d, %d, %d) = %d, want %d", tc.start, tc.self, tc.c, tc.size, got, tc.want)
		}
	}
}

// A follower that the COORDINATOR lap reaches before the winner does not
// start an election before the lap can have reached the winner and the
// winner's heartbeat come back. Every message here takes one tick; the
// coordinator 62 crashes, every member starts a lap at once, the lap of
// the highest tag (64) wins, and its COORDINATOR lap goes 63 hops to the
// winner 63, four times the K·H = 15 ticks of the failure detector.
func TestRingsFollowerWaitsForLap(t *testing.T) {
	for _, alg := range []Algorithm{Ring, Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			const n = 64
			w := newTestNet(t, Config{Algorithm: alg, Mode: View}, members(n, func(i int) int64 {
				return map[int]int64{61: 2000, 62: 1000}[i] + int64(i+1)
			}))
			w.bootstrap("62")
			w.crash("62")
			for i := 0; i < 10*n; i++ {
				w.hop()
			}
			if c, _, ok := w.agreed(); !ok || c != "63" {
				t.Fatalf("no agreement on 63:\n%s", w.dump())
			}
			if s := w.counter(func(c *Counters) uint64 { return c.ElectionsStarted }); s > n-1 {
				t.Errorf("%d elections started by %d members: followers timed out waiting for the lap", s, n-1)
			}
		})
	}
}

// hop delivers the messages queued now (not those they cause), then ticks
// every running node: every message takes one tick.
func (w *testNet) hop() {
	for end := len(w.queue); w.head < end; {
		if m := w.pop(); !w.down[m.To] {
			w.nodes[m.To].Step(m)
			w.flush(m.To)
		}
	}
	for _, id := range w.ids {
		if !w.down[id] {
			w.nodes[id].Tick()
			w.flush(id)
		}
	}
}
