package core

import (
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
