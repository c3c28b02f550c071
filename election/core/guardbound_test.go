package core

import "testing"

// A coordinator still bound by its promise to another term does not count
// itself, but acks from a majority without it confirm it at once: every
// majority the other term's lease could rest on includes one of them, and
// they acknowledged only once free of that promise (issue 13: the
// connected majority's winner, which still acknowledged the cut-off
// coordinator, waited a lease and a margin after its last ack to it).
func TestBoundCoordinatorNeedsMajorityWithoutItself(t *testing.T) {
	for _, bound := range []bool{false, true} {
		cfg := viewCfg(Ring)
		cfg.QuorumSize = 5
		w := newTestNet(t, cfg, members(5, func(i int) int64 { return int64(i) }))
		n := w.nodes["4"]
		n.Bootstrap("5", MakeTerm(1, Tag("5")))
		if !bound {
			n.guard.grantEnd = 0
		}
		if n.guard.bound(n.now, n.term) {
			t.Fatal("bound before the new term")
		}
		t3 := MakeTerm(3, Tag("4"))
		n.term = t3
		n.becomeCoordinator(t3)
		n.heartbeat()
		n.Ready()
		if n.guard.bound(n.now, n.term) != bound {
			t.Fatalf("guard.bound = %v, want %v", n.guard.bound(n.now, n.term), bound)
		}
		ack := func(from string) {
			n.Step(Message{Type: MsgHeartbeatAck, From: from, To: "4", Term: t3, Seq: n.det.hbSeq})
		}
		ack("1")
		ack("2")
		if _, ok := n.LeaseEnd(); ok == bound {
			t.Fatalf("bound=%v: itself and two acks: confirmed %v, want %v", bound, ok, !bound)
		}
		ack("3")
		if _, ok := n.LeaseEnd(); !ok {
			t.Fatalf("bound=%v: three acks besides itself did not confirm it", bound)
		}
	}
}

// A pre-vote refused for a promise says when the promise runs out, and the
// candidate asks again then instead of a round later.
func TestPreVoteRefusalSaysWhenFree(t *testing.T) {
	cfg := viewCfg(Ring)
	cfg.QuorumSize = 5
	w := newTestNet(t, cfg, members(5, func(i int) int64 { return int64(i) }))
	f := w.nodes["2"]
	f.Bootstrap("5", MakeTerm(1, Tag("5")))
	f.guard.grantEnd = f.now + 3
	f.Step(Message{Type: MsgPreVote, From: "1", To: "2", Term: f.term, Seq: 1})
	out := f.Ready().Messages
	if len(out) != 1 || out[0].Type != MsgPreVoteAck || out[0].Granted || out[0].PromiseLeft != 3 {
		t.Fatalf("answer %+v, want a refusal free in 3 ticks", out)
	}
	c := w.nodes["1"]
	c.beginPreVote(preVoteElection, "")
	c.Ready()
	if c.pv.timer <= 1 {
		t.Fatalf("pre-vote timer %d, want the round's own", c.pv.timer)
	}
	a := out[0]
	a.Seq = c.pv.round
	c.Step(a)
	if c.pv.timer != 3 {
		t.Fatalf("pre-vote timer %d after the refusal, want 3", c.pv.timer)
	}
}
