package core

import (
	"fmt"
	"testing"
)

// viewCfg is a runtime-like configuration: View mode, the heartbeat
// detector on, default timings.
func viewCfg(alg Algorithm) Config {
	return Config{Algorithm: alg, Mode: View}
}

// A forged heartbeat whose epoch is the top of the 32-bit range would make
// the next election wrap the epoch to 0 and every honest announcement look
// stale (issue: one frame wedges the cluster). Such a term is refused and
// counted as bad_term; the cluster then fails over as usual, with a term
// that grows.
func TestForgedMaxEpochTermIsRefused(t *testing.T) {
	for _, alg := range []Algorithm{Bully, Ring, Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			w := newTestNet(t, viewCfg(alg), members(5, func(i int) int64 { return int64(i) }))
			w.bootstrap("5")
			before := w.nodes["1"].Status().Term
			forged := Message{Type: MsgHeartbeat, From: "5", To: "1", Coordinator: "5", Term: MakeTerm(1<<32-1, Tag("5"))}
			w.nodes["1"].Step(forged)
			if got := w.total("1").Dropped[DropBadTerm]; got != 1 {
				t.Fatalf("bad_term drops = %d, want 1", got)
			}
			if st := w.nodes["1"].Status(); st.Term != before {
				t.Fatalf("term after the forged frame = %s, want %s", st.Term, before)
			}
			w.crash("5")
			w.detect("1", "2", "3", "4")
			c, term := w.settle(200)
			if c != "4" || term <= before || term.Epoch() >= MaxEpoch {
				t.Fatalf("after the crash: coordinator %s term %s, want 4 above %s", c, term, before)
			}
		})
	}
}

func TestTermPlausible(t *testing.T) {
	tests := []struct {
		known, t Term
		want     bool
	}{
		{0, MakeTerm(1, 7), true},
		{0, MakeTerm(MaxEpochStep, 7), true},    // a fresh member learns a cluster's epoch at once...
		{0, MakeTerm(MaxEpochStep+1, 7), false}, // ...up to MaxEpochStep (the epoch allowance)
		{0, MakeTerm(MaxEpoch, 7), false},
		{0, MakeTerm(MaxEpoch+1, 7), false},    // out of range
		{0, MakeTerm(1<<32-1, 7), false},       // the wrap
		{MakeTerm(5, 1), MakeTerm(3, 2), true}, // stale is not implausible (the caller drops it as stale)
		{MakeTerm(5, 1), MakeTerm(5+MaxEpochStep, 2), true},
		{MakeTerm(5, 1), MakeTerm(6+MaxEpochStep, 2), false}, // a jump no honest cluster makes
	}
	for _, tt := range tests {
		if got := tt.t.Plausible(tt.known); got != tt.want {
			t.Errorf("%s.Plausible(%s) = %v, want %v", tt.t, tt.known, got, tt.want)
		}
	}
}

// A member whose epoch reached MaxEpoch never stands: winning would need an
// epoch that every other member refuses.
func TestNoElectionPastMaxEpoch(t *testing.T) {
	w := newTestNet(t, viewCfg(Bully), members(3, func(i int) int64 { return int64(i) }))
	top := MakeTerm(MaxEpoch, Tag("3"))
	w.nodes["3"].Bootstrap("3", top)
	w.nodes["3"].term = top
	w.nodes["3"].Detect()
	for _, m := range w.nodes["3"].Ready().Messages {
		if m.Term.Epoch() > MaxEpoch {
			t.Fatalf("sent %+v with epoch past MaxEpoch", m)
		}
	}
}

// The redeploy pattern: every voter restarts (fresh state, term 0) while the
// non-voters keep running with the old term. The new coordinator's heartbeats
// are stale to the non-voters; they answer with their term, the coordinator
// steps down and the next election starts above it, so everyone agrees.
func TestNonVotersFollowAfterVotersRedeploy(t *testing.T) {
	for _, alg := range []Algorithm{Bully, Ring, Peterson} {
		for _, quorum := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/quorum=%d", alg, quorum), func(t *testing.T) {
				if alg == Bully && quorum == 0 {
					t.Skip("pending: bully without the guard does not elect here either (4 vouches for 5)")
				}
				cfg := viewCfg(alg)
				cfg.QuorumSize = quorum
				ms := members(5, func(i int) int64 { return int64(i) })
				ms[0].NonVoter, ms[1].NonVoter = true, true
				w := newTestNet(t, cfg, ms)
				old := MakeTerm(50, Tag("5"))
				for _, id := range []string{"1", "2"} {
					w.nodes[id].Bootstrap("5", old)
				}
				for _, id := range []string{"3", "4", "5"} {
					w.nodes[id], _ = NewNode(w.config(id))
				}
				c, term := w.settle(2000)
				if c != "5" || term <= old {
					t.Fatalf("coordinator %s term %s, want 5 above %s", c, term, old)
				}
			})
		}
	}
}

// With the quorum guard, only a heartbeat heard directly renews a lease: a
// follower that learnt of the coordinator from a relayed COORDINATOR does
// not acknowledge it.
func TestRelayedCoordinatorIsNotAcknowledged(t *testing.T) {
	cfg := viewCfg(Bully)
	cfg.QuorumSize = 5
	w := newTestNet(t, cfg, members(5, func(i int) int64 { return int64(i) }))
	n := w.nodes["1"]
	n.Bootstrap("4", MakeTerm(1, Tag("4")))
	n.Ready()
	n.Step(Message{Type: MsgCoordinator, From: "3", To: "1", Coordinator: "5", Term: MakeTerm(2, Tag("5")), Rating: 2})
	for _, m := range n.Ready().Messages {
		if m.Type == MsgHeartbeatAck {
			t.Fatalf("acknowledged a relayed announcement: %+v", m)
		}
	}
}

// Non-voters never count toward a majority: a voter with only non-voters
// around never holds a lease of QuorumSize 3, and non-voters do not
// acknowledge at all.
func TestNonVoterAcksDoNotCount(t *testing.T) {
	cfg := viewCfg(Bully)
	cfg.QuorumSize = 3
	ms := members(3, func(i int) int64 { return int64(i) })
	ms[0].NonVoter, ms[1].NonVoter = true, true
	w := newTestNet(t, cfg, ms)
	var acks int
	w.observe = func(m Message) {
		if m.Type == MsgHeartbeatAck && m.Seq > 0 {
			acks++
		}
	}
	for range 300 {
		w.tick()
	}
	if st := w.nodes["3"].Status(); st.State == StateCoordinator || st.Coordinator != "" {
		t.Fatalf("voter 3 with two non-voters: %+v, want no confirmed coordinator", st)
	}
	if acks != 0 {
		t.Fatalf("non-voters sent %d acks", acks)
	}
	// A forged ack in a non-voter's name counts for nothing either.
	n := w.nodes["3"]
	for _, id := range []string{"1", "2"} {
		n.Step(Message{Type: MsgHeartbeatAck, From: id, To: "3", Term: n.term, Seq: n.det.hbSeq})
	}
	if _, ok := n.LeaseEnd(); ok {
		t.Fatal("non-voters' acks confirmed a lease")
	}
}

// QuorumSize 1 is a one-member cluster: its majority is itself, so it leads
// as soon as it declares.
func TestQuorumOfOneElects(t *testing.T) {
	cfg := viewCfg(Bully)
	cfg.QuorumSize = 1
	w := newTestNet(t, cfg, members(1, func(int) int64 { return 0 }))
	c, _ := w.settle(cfg.HeartbeatInterval + 5 + 1) // the start-up window, then at once
	if c != "1" {
		t.Fatalf("coordinator %q, want 1", c)
	}
	for range 1000 {
		w.tick()
	}
	if st := w.nodes["1"].Status(); st.State != StateCoordinator {
		t.Fatalf("lone member lost its lease: %+v", st)
	}
}

// A coordinator that still reaches one follower but not the other three
// loses its lease; that follower must not defend it, so the connected
// majority elects a coordinator within twice the lease, for every
// algorithm (issue: the quorum guard left the cluster leaderless for ever),
// and keeps it: the cut-off member, which still reaches 4 and is the
// highest rated, is not elected again (the rings did so, lap after lap).
// Without the guard the four agree too, and stay agreed; the rings do in
// Textbook mode as well.
func TestGuardConnectedMajorityElects(t *testing.T) {
	for _, alg := range []Algorithm{Bully, Ring, Peterson} {
		for _, mode := range []Mode{View, Textbook} {
			for _, quorum := range []int{5, 0} {
				t.Run(fmt.Sprintf("%s/%s/quorum=%d", alg, mode, quorum), func(t *testing.T) {
					connectedMajorityElects(t, alg, mode, quorum)
				})
			}
		}
	}
}

func connectedMajorityElects(t *testing.T, alg Algorithm, mode Mode, quorum int) {
	switch {
	case alg == Bully && quorum == 0:
		t.Skip("pending: bully without the guard does not elect here either (4 vouches for 5)")
	case alg == Bully && mode == Textbook && quorum == 0:
		t.Skip("pending: bully in Textbook mode does not elect here within 2 leases (not this change's area)")
	}
	cfg := viewCfg(alg)
	cfg.Mode = mode
	cfg.QuorumSize = quorum
	w := newTestNet(t, cfg, members(5, func(i int) int64 { return int64(i) }))
	w.bootstrap("5")
	cut := func(a, b string) bool { return a == "5" && b != "4" || b == "5" && a != "4" }
	w.copies = func(m Message) int {
		if cut(m.From, m.To) {
			return 0
		}
		return 1
	}
	lease := w.nodes["1"].cfg.QuorumLease
	// Two leases from the cut, for every algorithm and mode (issue 13):
	// the winner, 4, which still heard 5 and so still acknowledged it,
	// leads once 1..3 acknowledge it (renewLease: a bound coordinator
	// needs a majority without itself), a pre-vote refused for a promise
	// is asked again when the promise runs out, and a Textbook bully
	// coordinator whose lease lapsed abdicates a heartbeat interval later
	// even if 4's ELECTION made it win again meanwhile. Before: 31 ticks
	// for the rings in View mode, 51 for Textbook bully.
	bound := 2 * lease
	elected := -1
	var c string
	var term Term
	for i := 0; i <= bound; i++ {
		w.tick()
		if c, term, _ = w.agreedExcept("5"); c != "" && c != "5" {
			elected = i
			break
		}
	}
	if elected < 0 {
		t.Fatalf("no coordinator of the connected majority within 2 leases:\n%s", w.dump())
	}
	t.Logf("%s: %s elected in term %s after %d ticks", alg, c, term, elected)
	for i := 0; i < 40*lease; i++ {
		w.tick()
		if c2, term2, ok := w.agreedExcept("5"); !ok || c2 != c || term2 != term {
			t.Fatalf("tick %d after the election: the connected majority left %s in %s:\n%s", i, c, term, w.dump())
		}
	}
}

// agreedExcept is agreed over the running nodes other than skip.
func (w *testNet) agreedExcept(skip string) (c string, t Term, ok bool) {
	first := true
	for _, id := range w.ids {
		if w.down[id] || id == skip {
			continue
		}
		n := w.nodes[id]
		s := n.Status()
		if s.Coordinator == "" || n.Electing() || !first && (s.Coordinator != c || s.Term != t) {
			return "", 0, false
		}
		c, t, first = s.Coordinator, s.Term, false
	}
	return c, t, !first
}

// A follower that acknowledged one coordinator acknowledges no coordinator
// of another term until its promise (QuorumLease + LeaseMargin from the
// receipt) has run out, so two leases never overlap.
func TestGrantHoldsAgainstANewTerm(t *testing.T) {
	cfg := viewCfg(Bully)
	cfg.QuorumSize = 3
	w := newTestNet(t, cfg, members(3, func(i int) int64 { return int64(i) }))
	w.bootstrap("3")
	n := w.nodes["1"]
	n.Step(Message{Type: MsgHeartbeat, From: "3", To: "1", Coordinator: "3", Term: MakeTerm(1, Tag("3")), Seq: 9, Rating: 2})
	n.Ready()
	granted := n.now
	newer := MakeTerm(2, Tag("2"))
	for n.now < granted+n.cfg.QuorumLease+n.cfg.LeaseMargin {
		n.Step(Message{Type: MsgHeartbeat, From: "2", To: "1", Coordinator: "2", Term: newer, Seq: 1, Rating: 1})
		for _, m := range n.Ready().Messages {
			if m.Type == MsgHeartbeatAck {
				t.Fatalf("tick %d: acknowledged term %s while the promise to 1.3 holds (until %d)", n.now, newer, granted+n.cfg.QuorumLease+n.cfg.LeaseMargin)
			}
		}
		n.Tick()
		n.Ready()
	}
	n.Step(Message{Type: MsgHeartbeat, From: "2", To: "1", Coordinator: "2", Term: newer, Seq: 2, Rating: 1})
	acked := false
	for _, m := range n.Ready().Messages {
		acked = acked || m.Type == MsgHeartbeatAck && m.Seq == 2
	}
	if !acked {
		t.Fatal("no acknowledgement once the promise ran out")
	}
}

// A coordinator whose process was paused past its lease steps down on the
// first Advance after it resumes, before it sends a heartbeat claiming a
// lease; a follower that was paused does not blame the coordinator for the
// time it slept.
func TestAdvanceAfterPause(t *testing.T) {
	cfg := viewCfg(Bully)
	cfg.QuorumSize = 3
	w := newTestNet(t, cfg, members(3, func(i int) int64 { return int64(i) }))
	w.bootstrap("3")
	for range 50 {
		w.tick()
	}
	c := w.nodes["3"]
	if _, ok := c.LeaseEnd(); !ok {
		t.Fatal("no lease before the pause")
	}
	c.Advance(500) // SIGSTOP for 500 ticks
	if st := c.Status(); st.State == StateCoordinator {
		t.Fatalf("coordinator after a pause past its lease: %+v", st)
	}
	for _, m := range c.Ready().Messages {
		if m.Type == MsgHeartbeat && m.Confirmed && !m.Released {
			t.Fatalf("heartbeat claiming a lease after the pause: %+v", m)
		}
	}
	f := w.nodes["1"]
	f.Advance(500)
	if st := f.Status(); st.Coordinator != "3" || f.Electing() {
		t.Fatalf("paused follower blamed the coordinator: %+v electing=%v", st, f.Electing())
	}
}

// A follower whose own loop ran late lately (local health) gives its
// coordinator more heartbeat intervals before it suspects it; one that
// runs on time suspects after K*H of silence. A coordinator that reports
// lag gets that much more too.
func TestDetectorPatience(t *testing.T) {
	silentTicks := func(setup func(f *Node)) int {
		w := newTestNet(t, viewCfg(Bully), members(3, func(i int) int64 { return int64(i) }))
		w.bootstrap("3")
		f := w.nodes["1"]
		setup(f)
		for i := 1; i < 1000; i++ {
			f.Tick()
			if f.Status().Coordinator == "" || f.Electing() {
				return i
			}
		}
		return -1
	}
	cfg := DefaultConfig()
	kh := cfg.HeartbeatInterval * cfg.HeartbeatMisses
	if got := silentTicks(func(*Node) {}); got != kh {
		t.Errorf("healthy follower suspected after %d ticks of silence, want K*H = %d", got, kh)
	}
	late := silentTicks(func(f *Node) {
		for range 3 {
			f.Advance(4) // its loop ran late three times
		}
		f.det.silence = 0
	})
	// Health 3, which falls to 2 after K*H ticks on time: K*H + 2H.
	if want := kh + 2*cfg.HeartbeatInterval; late != want {
		t.Errorf("late follower suspected after %d ticks, want K*H + 2H = %d", late, want)
	}
	lag := silentTicks(func(f *Node) {
		f.Step(Message{Type: MsgHeartbeat, From: "3", To: "1", Coordinator: "3", Term: MakeTerm(1, Tag("3")), Seq: 2, Lag: 7, Rating: 2})
		f.Ready()
	})
	if want := kh + 7; lag != want {
		t.Errorf("with the coordinator's lag 7: suspected after %d ticks, want K*H + 7 = %d", lag, want)
	}
}
