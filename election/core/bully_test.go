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
			node.Step(Message{Type: MsgPreVoteAck, From: m.To, To: "4", Term: old, Seq: m.Seq, Granted: true, Rating: int64(m.To[0] - '0')})
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
// cut (askPair): ELECTIONs to the senior and the suspect at once. If the
// view reports the late senior dead during T', the watcher asks at once.
func TestBullyWatcherWaitsForASeniorTakingOver(t *testing.T) {
	const n = 1000
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{ID: strconv.Itoa(i + 1), Rating: int64(i + 1)}
	}
	for _, c := range []struct {
		name          string
		asked, dies   bool
		wantAtTimeout []string // ELECTIONs when H + T + RoundTrip ran out
	}{
		{name: "not asked", wantAtTimeout: []string{"1000", "999"}},
		{name: "asked", asked: true},
		{name: "asked, then dead", asked: true, dies: true},
	} {
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
			t.Fatalf("%s: the watcher sent %+v on its detector's firing; want silence while it awaits 999", c.name, out)
		}
		if c.asked {
			node.Step(Message{Type: MsgPreVote, From: "999", To: "998", Term: old, Seq: 1, Rating: 999})
			out := node.Ready().Messages
			if len(out) != 1 || out[0].Type != MsgPreVoteAck || !out[0].Granted {
				t.Fatalf("%s: the watcher's answer to 999's pre-vote: %+v, want a grant", c.name, out)
			}
		}
		sent := func() (elections []string, other []string) {
			for _, m := range node.Ready().Messages {
				switch m.Type {
				case MsgElection:
					elections = append(elections, m.To)
				case MsgHeartbeatAck:
				default:
					other = append(other, m.Type.String()+" to "+m.To)
				}
			}
			return elections, other
		}
		var elections, other []string
		for range cfg.HeartbeatInterval + cfg.AnswerTimeout + cfg.RoundTrip {
			node.Tick()
			e, o := sent()
			elections, other = append(elections, e...), append(other, o...)
		}
		slices.Sort(elections)
		if !slices.Equal(elections, c.wantAtTimeout) {
			t.Errorf("%s: ELECTIONs to %v when the wait ran out, want %v", c.name, elections, c.wantAtTimeout)
		}
		if !c.asked {
			continue
		}
		if len(other) != 0 {
			t.Fatalf("%s: the watcher sent %v while it waited; want silence", c.name, other)
		}
		if c.dies {
			node.Tick()
			node.PeerDown("999")
			elections, _ = sent()
			if !slices.Equal(elections, []string{"1000"}) {
				t.Errorf("%s: ELECTIONs to %v when the view reported 999 dead during T', want one to 1000 (the top survivor asks the suspect)", c.name, elections)
			}
			continue
		}
		// Silent for T' - 1 more ticks, then 999's announcement arrives.
		for range cfg.CoordinatorTimeout - 1 {
			node.Tick()
			e, o := sent()
			elections, other = append(elections, e...), append(other, o...)
		}
		if len(elections)+len(other) != 0 {
			t.Fatalf("%s: the watcher sent ELECTIONs to %v and %v within T' - 1 ticks; want silence while 999 takes over", c.name, elections, other)
		}
		won := MakeTerm(2, Tag("999"))
		node.Step(Message{Type: MsgCoordinator, From: "999", To: "998", Term: won, Coordinator: "999", Rating: 999})
		node.Ready()
		if st := node.Status(); st.Coordinator != "999" || st.Term != won || node.Electing() {
			t.Errorf("%s: after 999's announcement %+v (electing %v), want 999 in its term, no election", c.name, st, node.Electing())
		}
	}
}
