package core

import "testing"

// ringNode returns member id of a Textbook active/relay ring of size
// members rated by position, with the quorum guard of quorum (0: off).
func ringNode(t *testing.T, id string, size, quorum int) (*Node, *peterson) {
	t.Helper()
	r, err := NewRoster(members(size, func(i int) int64 { return int64(i) }))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testCfg(Peterson, Textbook)
	cfg.ID, cfg.Roster, cfg.QuorumSize = id, r, quorum
	n, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n, n.alg.(*peterson)
}

// sentTo returns the ELECTION messages of n's next Ready, by receiver.
func sentTo(n *Node) map[string]Message {
	out := map[string]Message{}
	for _, m := range n.Ready().Messages {
		if m.Type == MsgElection {
			out[m.To] = m
		}
	}
	return out
}

// ackOf is the Ack that m's receiver sends back.
func ackOf(m Message) Message {
	return Message{Type: MsgAck, From: m.To, To: m.From, Term: m.Term, Initiator: m.Initiator,
		Lap: m.Lap, Index: m.Index, Phase: m.Phase, Phases: m.Phases, Value: m.Value, Coordinator: m.Coordinator}
}

// The rings' hop timeout is HopTimeout until round trips are measured,
// then twice the longest of those measured within rttMemory, capped at
// maxHopWait·HopTimeout; the lap's per-hop allowance follows their mean.
func TestHopTimeoutFollowsRoundTrips(t *testing.T) {
	n, _ := ringNode(t, "1", 3, 0)
	hop := n.cfg.HopTimeout
	if got := n.hopTimeout(); got != hop {
		t.Fatalf("hop timeout %d with nothing measured, want HopTimeout %d", got, hop)
	}
	n.det.measuring().add(n.now, 5)
	n.det.measuring().add(n.now, 1)
	if got, want := n.hopTimeout(), max(hop, 10); got != want {
		t.Fatalf("hop timeout %d after round trips of 5 and 1 ticks, want %d", got, want)
	}
	if got, want := n.roundTrip(), max(n.cfg.RoundTrip, 3+1); got != want {
		t.Fatalf("per-hop allowance %d after round trips of 5 and 1 ticks, want %d (their mean 3, plus 1)", got, want)
	}
	n.det.measuring().add(n.now, 1000)
	if got, want := n.hopTimeout(), maxHopWait*hop; got != want {
		t.Fatalf("hop timeout %d after a round trip of 1000 ticks, want the cap %d", got, want)
	}
	n.Advance(n.rttMemory() + 1)
	if got := n.hopTimeout(); got != hop {
		t.Fatalf("hop timeout %d after every sample is older than rttMemory, want HopTimeout %d", got, hop)
	}
	if got := n.roundTrip(); got != n.cfg.RoundTrip {
		t.Fatalf("per-hop allowance %d after every sample expired, want RoundTrip %d", got, n.cfg.RoundTrip)
	}
}

// A hop given up on whose Ack arrives after all is a round trip the
// timeout did not cover: it is measured, and the next hop waits twice as
// long. An Ack that matches no hop given up on measures nothing.
func TestLateAckStretchesHopTimeout(t *testing.T) {
	n, p := ringNode(t, "1", 3, 0)
	n.Ready()
	p.join(electionTerm(n.term), true)
	first := sentTo(n)["2"]
	if first.Type != MsgElection {
		t.Fatal("member 1 sent no ELECTION to 2")
	}
	hop := n.cfg.HopTimeout
	for range hop {
		n.Tick()
	}
	if _, ok := sentTo(n)["3"]; !ok {
		t.Fatalf("after HopTimeout (%d ticks) without an Ack, member 1 did not pass 2 over", hop)
	}
	n.Step(Message{Type: MsgAck, From: "2", To: "1", Term: first.Term, Initiator: "2"})
	if _, got := n.det.rtts.stats(n.now, n.rttMemory()); got != 0 {
		t.Fatalf("an Ack that matches no hop measured a round trip of %d ticks", got)
	}
	for range 3 {
		n.Tick()
	}
	late := n.now - p.link.gave[0].sent
	n.Step(ackOf(first))
	if _, got := n.det.rtts.stats(n.now, n.rttMemory()); got != late {
		t.Fatalf("the late Ack measured %d ticks, want %d", got, late)
	}
	if got, want := n.hopTimeout(), max(hop, 2*late); got != want || got <= hop {
		t.Fatalf("hop timeout %d after a late Ack of %d ticks, want %d (above HopTimeout %d)", got, late, want, hop)
	}
}

// With the guard, a ring member whose hops to enough members time out
// that it reaches fewer than a majority sits out: it refuses the hops that
// ask for an Ack (its predecessor passes it over) and does not stand. A
// heartbeat of a confirmed coordinator ends it. Without the guard it
// takes part as before.
func TestCutOffRingMemberSitsOut(t *testing.T) {
	for _, quorum := range []int{5, 0} {
		n, p := ringNode(t, "5", 5, quorum)
		n.Ready()
		p.join(electionTerm(n.term), true)
		hop := n.cfg.HopTimeout
		for k := 0; k < 3; k++ { // 1, 2 and 3 never answer
			for range hop {
				n.Tick()
			}
		}
		n.Ready()
		if got := n.guard.sitsOut(n.now); got != (quorum > 0) {
			t.Fatalf("quorum %d: after giving up on 1, 2 and 3 of 5, sitsOut = %v", quorum, got)
		}
		if quorum == 0 {
			continue
		}
		// 4's ELECTION of the next term, which asks for an Ack, is refused.
		next := electionTerm(n.term)
		before := n.Ready().Counters.Dropped[DropUnexpected]
		n.Step(Message{Type: MsgElection, From: "4", To: "5", Term: next, Phase: packPhase(1, false),
			Value: Rank{Rating: 3, ID: "4"}, Initiator: "4"})
		rd := n.Ready()
		for _, m := range rd.Messages {
			if m.Type == MsgAck || m.Type == MsgElection {
				t.Fatalf("a member cut off from the majority answered an ELECTION hop: %+v", m)
			}
		}
		if rd.Counters.Dropped[DropUnexpected] != before+1 {
			t.Fatalf("the refused hop was not counted as dropped")
		}
		// A heartbeat from a coordinator a majority confirms ends it.
		n.Step(Message{Type: MsgHeartbeat, From: "4", To: "5", Term: MakeTerm(next.Epoch()+1, Tag("4")),
			Coordinator: "4", Confirmed: true, Seq: 1})
		if n.guard.sitsOut(n.now) {
			t.Fatal("still sitting out after a confirmed coordinator's heartbeat")
		}
	}
}
