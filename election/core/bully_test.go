package core

import (
	"slices"
	"strconv"
	"testing"
)

// A coordinator asked by a node that has not yet got its announcement (the
// ELECTION carries the older term) announces again to that node at once:
// silence would make the node ask every node above it after T.
func TestBullyCoordinatorAnswersStaleElection(t *testing.T) {
	ps := make([]Peer, 5)
	for i := range ps {
		ps[i] = Peer{ID: strconv.Itoa(i + 1), Rating: int64(i + 1)}
	}
	node, err := NewNode(Config{ID: "4", Roster: MustRoster(ps), Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	old := MakeTerm(1, Tag("5"))
	node.Bootstrap("5", old)
	node.PeerDown("5") // 4 is top now: it declares in epoch 2 once a pre-vote passes
	for _, m := range node.Ready().Messages {
		if m.Type == MsgPreVote {
			node.Step(Message{Type: MsgPreVoteAck, From: m.To, To: "4", Term: old, Seq: m.Seq, Confirmed: true, Rating: int64(m.To[0] - '0')})
			break
		}
	}
	if st := node.Status(); st.Coordinator != "4" || st.Term.Epoch() != 2 {
		t.Fatalf("after the coordinator's crash: %+v, want 4 in epoch 2", st)
	}
	node.Ready()
	node.Step(Message{Type: MsgElection, From: "2", To: "4", Term: old, Rating: 2})
	out := node.Ready().Messages
	if len(out) != 1 || out[0].Type != MsgCoordinator || out[0].To != "2" || out[0].Coordinator != "4" || out[0].Term != node.Status().Term {
		t.Fatalf("reply to a stale ELECTION: %+v, want one COORDINATOR to 2 naming 4 in the new term", out)
	}
}

// A watcher of a fanned-out cluster (n = 1,000) whose detector gave up on
// the coordinator waits H + T + RoundTrip for its senior's announcement.
// If the senior asked it for its pre-vote meanwhile, the senior is alive
// and taking over, late: the watcher then waits T' more in silence, and
// the senior's COORDINATOR, arriving then, ends the election with no term
// of the watcher's own. Without that request it takes the pair's short
// cut (askPair): ELECTIONs to the senior and the suspect at once.
func TestBullyWatcherWaitsForASeniorTakingOver(t *testing.T) {
	const n = 1000
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{ID: strconv.Itoa(i + 1), Rating: int64(i + 1)}
	}
	for _, asked := range []bool{false, true} {
		node, err := NewNode(Config{ID: "998", Roster: MustRoster(ps), Mode: View})
		if err != nil {
			t.Fatal(err)
		}
		cfg := node.Config()
		old := MakeTerm(1, Tag("1000"))
		node.Bootstrap("1000", old)
		node.Ready()
		node.Detect()
		if out := node.Ready().Messages; len(out) != 0 {
			t.Fatalf("asked=%v: the watcher sent %+v on its detector's firing; want silence while it awaits 999", asked, out)
		}
		if asked {
			node.Step(Message{Type: MsgPreVote, From: "999", To: "998", Term: old, Seq: 1, Rating: 999, Phase: uint32(preVoteElection)})
			out := node.Ready().Messages
			if len(out) != 1 || out[0].Type != MsgPreVoteAck || !out[0].Confirmed {
				t.Fatalf("the watcher's answer to 999's pre-vote: %+v, want a grant", out)
			}
		}
		wait := cfg.HeartbeatInterval + cfg.AnswerTimeout + cfg.RoundTrip
		var elections []string
		for range wait {
			node.Tick()
			for _, m := range node.Ready().Messages {
				if m.Type == MsgElection {
					elections = append(elections, m.To)
				}
			}
		}
		if !asked {
			slices.Sort(elections)
			if !slices.Equal(elections, []string{"1000", "999"}) {
				t.Errorf("asked=false: ELECTIONs to %v when the wait ran out, want 999 and 1000 together", elections)
			}
			continue
		}
		// Silent for T' - 1 more ticks, then 999's announcement arrives.
		for range cfg.CoordinatorTimeout - 1 {
			node.Tick()
			for _, m := range node.Ready().Messages {
				if m.Type != MsgHeartbeatAck {
					elections = append(elections, m.Type.String()+" to "+m.To)
				}
			}
		}
		if len(elections) != 0 {
			t.Fatalf("asked=true: the watcher sent %v within H + T + RoundTrip + T' - 1 ticks; want silence while 999 takes over", elections)
		}
		won := MakeTerm(2, Tag("999"))
		node.Step(Message{Type: MsgCoordinator, From: "999", To: "998", Term: won, Coordinator: "999", Rating: 999})
		node.Ready()
		if st := node.Status(); st.Coordinator != "999" || st.Term != won || node.Electing() {
			t.Errorf("asked=true: after 999's announcement %+v (electing %v), want 999 in its term, no election", st, node.Electing())
		}
	}
}
