package core

import (
	"fmt"
	"testing"
)

// A quorum round (the guard's pre-vote, a preemption check) must reach a
// majority, so its first wave asks every live voter; after that it asks a
// silent voter again at most once per round trip it has measured, and not
// at all before it has measured one (askQuorum). These tests drive
// node "63" of 64 with the guard after coordinator "64" went down: the
// other voters stay silent, or one answers after a fixed round trip.

// guardedCandidate returns node "63" of members "1".."64" with the guard
// (QuorumSize 64), free of its promise to coordinator "64", which has just
// left its view: it has started an election and its pre-vote.
func guardedCandidate(t *testing.T, alg Algorithm) *Node {
	t.Helper()
	r, err := NewRoster(members(64, func(i int) int64 { return int64(i) }))
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(Config{ID: "63", Roster: r, Algorithm: alg, Mode: View, QuorumSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	n.Bootstrap("64", MakeTerm(1, Tag("64")))
	for n.guard.bound(n.now, n.term) {
		n.Tick()
	}
	n.Ready()
	n.PeerDown("64")
	return n
}

// pvAsk is one pre-vote question: the tick it was sent at and its round.
type pvAsk struct {
	at    int
	round uint64
}

// runPreVotes ticks n for ticks ticks and returns the pre-votes it sent to
// each voter. answer, if not nil, is called with each pre-vote and says
// after how many ticks (> 0) the voter's grant comes back, 0 for never.
func runPreVotes(n *Node, ticks int, answer func(Message) int) map[string][]pvAsk {
	asks := map[string][]pvAsk{}
	due := map[int][]Message{}
	take := func() {
		for _, m := range n.Ready().Messages {
			if m.Type != MsgPreVote {
				continue
			}
			asks[m.To] = append(asks[m.To], pvAsk{n.Now(), m.Seq})
			if answer == nil {
				continue
			}
			if d := answer(m); d > 0 {
				due[n.Now()+d] = append(due[n.Now()+d], Message{Type: MsgPreVoteAck, From: m.To, To: m.From,
					Term: m.Term, Seq: m.Seq, Granted: true, Rating: rating(n, m.To)})
			}
		}
	}
	take()
	for range ticks {
		n.Tick()
		take()
		for _, a := range due[n.Now()] {
			n.Step(a)
			take()
		}
		delete(due, n.Now())
	}
	return asks
}

func rating(n *Node, id string) int64 {
	p, _ := n.view.r.Get(id)
	return p.Rating
}

// Nobody answers: every round asks each voter once, and the rounds go on
// failing.
func TestQuorumPreVoteAsksSilentVotersOnce(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			n := guardedCandidate(t, alg)
			asks := runPreVotes(n, 3000, nil)
			if len(asks) != 62 {
				t.Fatalf("asked %d voters, want the 62 live others", len(asks))
			}
			rounds := map[uint64]bool{}
			for to, as := range asks {
				per := map[uint64]int{}
				for _, a := range as {
					rounds[a.round] = true
					if per[a.round]++; per[a.round] > 1 {
						t.Fatalf("round %d asked %s %d times (at %v), want once", a.round, to, per[a.round], as)
					}
				}
			}
			if len(rounds) < 5 {
				t.Fatalf("%d rounds in 3,000 ticks, want at least 5", len(rounds))
			}
		})
	}
}

// Voter "1" answers every question rtt ticks later, more than the round
// trip configured (RoundTrip 2); the others stay silent. Once a round trip
// is measured, a round asks a silent voter again no sooner than one round
// trip after it asked it last.
func TestQuorumPreVoteReasksOncePerMeasuredRoundTrip(t *testing.T) {
	for _, rtt := range []int{10, 30, 60} {
		for _, alg := range threeAlgorithms {
			t.Run(fmt.Sprintf("%s/rtt=%d", alg, rtt), func(t *testing.T) {
				n := guardedCandidate(t, alg)
				asks := runPreVotes(n, 3000, func(m Message) int {
					if m.To == "1" {
						return rtt
					}
					return 0
				})
				first := asks["1"][0].at + rtt // the first round trip measured
				again := 0
				as := asks["2"]
				for i := 1; i < len(as); i++ {
					if as[i].round != as[i-1].round || as[i-1].at < first {
						continue
					}
					again++
					if gap := as[i].at - as[i-1].at; gap <= rtt {
						t.Fatalf("voter 2 asked again %d ticks after it was asked at tick %d (round %d), want more than the round trip %d (asks %v)",
							gap, as[i-1].at, as[i].round, rtt, as)
					}
				}
				if again == 0 {
					t.Fatalf("voter 2 never asked again within a round after the first round trip measured: %v", as)
				}
			})
		}
	}
}
