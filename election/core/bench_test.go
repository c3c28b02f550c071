package core

import (
	"strconv"
	"testing"
)

func benchNode(b *testing.B, n int, mode Mode) *Node {
	b.Helper()
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{ID: strconv.Itoa(i + 1), Rating: int64(i + 1)}
	}
	node, err := NewNode(Config{ID: strconv.Itoa(n / 2), Roster: MustRoster(ps), Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	top := strconv.Itoa(n)
	node.Bootstrap(top, MakeTerm(1, Tag(top)))
	node.Ready()
	return node
}

// BenchmarkTickFollower: the per-tick cost of an idle follower.
func BenchmarkTickFollower(b *testing.B) {
	node := benchNode(b, 100, View)
	hb := Message{Type: MsgHeartbeat, From: "100", To: node.ID(), Coordinator: "100", Term: MakeTerm(1, 100), Rating: 100}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		node.Tick()
		if i%4 == 0 {
			node.Step(hb)
		}
		node.Ready()
	}
}

// BenchmarkStepHeartbeat: a follower handling its coordinator's heartbeat.
func BenchmarkStepHeartbeat(b *testing.B) {
	node := benchNode(b, 100, View)
	hb := Message{Type: MsgHeartbeat, From: "100", To: node.ID(), Coordinator: "100", Term: MakeTerm(1, 100), Rating: 100}
	b.ReportAllocs()
	for b.Loop() {
		node.Step(hb)
		node.Ready()
	}
}

// BenchmarkStepElection: a node answering an ELECTION from a lower node
// while an election is already running (textbook: one ANSWER out).
func BenchmarkStepElection(b *testing.B) {
	node := benchNode(b, 100, Textbook)
	node.Detect()
	node.Ready()
	m := Message{Type: MsgElection, From: "1", To: node.ID(), Term: MakeTerm(1, 100), Rating: 1}
	b.ReportAllocs()
	for b.Loop() {
		node.Step(m)
		node.Ready()
	}
}

// BenchmarkBullyFailoverView: one node's part in a view-mode failover:
// detect, ask the top live peer, receive the winner's COORDINATOR.
func BenchmarkBullyFailoverView(b *testing.B) {
	node := benchNode(b, 100, View)
	node.PeerDown("100")
	node.Ready()
	epoch := uint32(1)
	b.ReportAllocs()
	for b.Loop() {
		// No tick passes in this loop: without this, the epoch allowance
		// (term.go) would run out after 2^20 failovers.
		node.epochClock = 0
		node.Detect()
		node.Ready()
		epoch++
		node.Step(Message{Type: MsgCoordinator, From: "99", To: node.ID(), Coordinator: "99", Term: MakeTerm(epoch, 99), Rating: 99})
		node.Ready()
	}
}
