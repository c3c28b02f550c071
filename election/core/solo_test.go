package core

import (
	"fmt"
	"slices"
	"testing"
)

// The lone member (prevote.go, "The lone member"; docs/design.md,
// "Pre-vote"): a member whose view loses its last voters within SoloDelay
// of each other raises no term alone until SoloDelay after the departure
// that left it one voter; one that loses them further apart, or a member
// of two, leads at once. Each test drives node "1" alone: its peers never
// answer, only the view changes.

// soloNode returns node "1" of members "1".."n" (nonVoters among them),
// following coordinator "n" in its first term.
func soloNode(t *testing.T, alg Algorithm, n int, nonVoters ...string) *Node {
	t.Helper()
	ps := members(n, func(i int) int64 { return int64(i) })
	for i := range ps {
		for _, id := range nonVoters {
			if ps[i].ID == id {
				ps[i].NonVoter = true
			}
		}
	}
	r, err := NewRoster(ps)
	if err != nil {
		t.Fatal(err)
	}
	node, err := NewNode(Config{ID: "1", Roster: r, Algorithm: alg, Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	top := fmt.Sprint(n)
	node.Bootstrap(top, MakeTerm(1, Tag(top)))
	return node
}

// leadsAfter ticks n until it leads, up to limit ticks, and returns the
// ticks that took (limit+1 if it never led). It fails the test if n raised
// its term without leading.
func leadsAfter(t *testing.T, n *Node, limit int) int {
	t.Helper()
	before := n.Status().Term
	for i := 0; i <= limit; i++ {
		st := n.Status()
		if st.State == StateCoordinator && st.Coordinator == n.ID() {
			return i
		}
		if st.Term != before {
			t.Fatalf("term %s raised to %s after %d ticks without leading", before, st.Term, i)
		}
		n.Tick()
		n.Ready()
	}
	return limit + 1
}

func down(n *Node, ids ...string) {
	for _, id := range ids {
		n.PeerDown(id)
	}
	n.Ready()
}

var threeAlgorithms = []Algorithm{Bully, Ring, Peterson}

// The lone survivor of simultaneous crashes (or a member cut off from the
// rest, which it cannot tell apart) waits SoloDelay, then leads: the hold
// delays it, never strands it.
func TestSoloSurvivorLeadsAfterSoloDelay(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			n := soloNode(t, alg, 5)
			delay := n.Config().SoloDelay
			down(n, "2", "3", "4", "5")
			took := leadsAfter(t, n, 2*delay)
			t.Logf("alone after losing 4 peers at once: led %d ticks later in %s (SoloDelay %d)", took, n.Status().Term, delay)
			if took < delay {
				t.Fatalf("led after %d ticks, within SoloDelay = %d of losing every peer at once", took, delay)
			}
			if slack := n.Config().HeartbeatInterval * n.Config().HeartbeatMisses; took > delay+slack {
				t.Fatalf("led after %d ticks, want at most SoloDelay + K*H = %d", took, delay+slack)
			}
		})
	}
}

// Within the hold the member reports no coordinator and sends nothing;
// once a member it can ask is back, the hold no longer applies and the
// coordinator's next heartbeat is followed in the unchanged term.
func TestSoloHoldThenReturn(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			n := soloNode(t, alg, 5)
			term := n.Status().Term
			down(n, "2", "3", "4", "5")
			var started uint64 // elections started after the departures
			for i := 0; i < n.Config().SoloDelay/2; i++ {
				n.Tick()
				rd := n.Ready()
				if len(rd.Messages) > 0 {
					t.Fatalf("tick %d: alone, sent %v", i, rd.Messages)
				}
				started += rd.ElectionsStarted
			}
			if st := n.Status(); st.Coordinator != "" || st.Term != term || st.State == StateCoordinator {
				t.Fatalf("held: %+v, want no coordinator in %s", st, term)
			}
			if started > 0 {
				t.Errorf("held: %d elections started after the first, want none until the hold ends", started)
			}
			for _, id := range []string{"2", "3", "4", "5"} {
				p, _ := n.Roster().Get(id)
				n.PeerUp(p)
			}
			// With company again it elects after its idle timeout (bully
			// first waits H + T + RoundTrip for a senior's announcement).
			c, asked := n.Config(), false
			limit := c.HeartbeatInterval*(c.HeartbeatMisses+1) + c.AnswerTimeout + c.RoundTrip
			for i := 0; i <= limit && !asked; i++ {
				n.Tick()
				asked = len(n.Ready().Messages) > 0
			}
			if !asked {
				t.Fatalf("nothing sent within %d ticks of the members' return", limit)
			}
			n.Step(Message{Type: MsgHeartbeat, From: "5", To: "1", Coordinator: "5", Term: term, Seq: 1})
			n.Ready()
			if st := n.Status(); st.Coordinator != "5" || st.Term != term {
				t.Fatalf("after the return: %+v, want coordinator 5 in %s", st, term)
			}
		})
	}
}

// A member of two that loses its one peer leads at once: there is no
// pattern of many failures to suspect itself by.
func TestSoloTwoMembersLeadAtOnce(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			n := soloNode(t, alg, 2)
			down(n, "2")
			if took := leadsAfter(t, n, n.Config().SoloDelay); took > lonePromptly(n) {
				t.Fatalf("led after %d ticks, want at most %d", took, lonePromptly(n))
			}
		})
	}
}

// A member that loses its peers one by one, further apart than SoloDelay,
// leads at once when the last one goes; closer together, it waits until
// SoloDelay after the departure that left it one peer (not after the last).
func TestSoloOneByOne(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			n := soloNode(t, alg, 3)
			delay := n.Config().SoloDelay
			down(n, "2")
			for i := 0; i < delay; i++ {
				n.Tick()
				n.Ready()
			}
			down(n, "3")
			if took := leadsAfter(t, n, delay); took > lonePromptly(n) {
				t.Fatalf("apart: led after %d ticks, want at most %d", took, lonePromptly(n))
			}

			n = soloNode(t, alg, 3)
			gap := delay * 2 / 5
			down(n, "2")
			for i := 0; i < gap; i++ {
				n.Tick()
				n.Ready()
			}
			down(n, "3")
			if took := leadsAfter(t, n, delay); took < delay-gap || took > delay-gap+lonePromptly(n) {
				t.Fatalf("%d ticks apart: led after %d ticks, want SoloDelay - %d = %d (+%d)",
					gap, took, gap, delay-gap, lonePromptly(n))
			}
		})
	}
}

// Only voters count: a member whose other voter and a non-voter leave
// together is a member of two voters that lost its peer.
func TestSoloNonVotersDoNotCount(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			n := soloNode(t, alg, 3, "2")
			down(n, "2", "3")
			if took := leadsAfter(t, n, n.Config().SoloDelay); took > lonePromptly(n) {
				t.Fatalf("led after %d ticks, want at most %d", took, lonePromptly(n))
			}
		})
	}
}

// The hold is for the member without the guard: with it, a member alone
// follows the guard's own rule (a guard of one leads at once).
func TestSoloGuardOfOne(t *testing.T) {
	r, err := NewRoster(members(3, func(i int) int64 { return int64(i) }))
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(Config{ID: "1", Roster: r, Algorithm: Bully, Mode: View, QuorumSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	n.Bootstrap("3", MakeTerm(1, Tag("3")))
	down(n, "2", "3")
	if took := leadsAfter(t, n, n.Config().SoloDelay); took > lonePromptly(n) {
		t.Fatalf("led after %d ticks, want at most %d", took, lonePromptly(n))
	}
}

// lonePromptly bounds how long a member that is alone and not held takes
// to lead: well under SoloDelay.
func lonePromptly(n *Node) int {
	c := n.Config()
	return c.AnswerTimeout + c.RoundTrip + lapTicks(n)
}

// With the guard the solo hold does not apply: a member left alone holds
// for want of a majority (HoldQuorum), and once members are back it
// stands again after its idle timeout, not SoloDelay later.
func TestSoloNoHoldWithGuard(t *testing.T) {
	r, err := NewRoster(members(3, func(i int) int64 { return int64(i) }))
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(Config{ID: "1", Roster: r, Algorithm: Bully, Mode: View, QuorumSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	n.Bootstrap("3", MakeTerm(1, Tag("3")))
	down(n, "2", "3")
	c := n.Config()
	n.Ready()
	for i := 0; i < 2*c.QuorumLease; i++ {
		n.Tick()
		if rd := n.Ready(); rd.ElectionsStarted != 0 {
			t.Fatalf("tick %d: an election started alone, with no majority to win", n.Now())
		}
	}
	if h := n.Hold(); h.Reason != HoldQuorum || h.Voters != 1 || h.Need != 2 {
		t.Fatalf("alone: Hold() = %+v, want quorum 1 of 2", h)
	}
	rd := n.Ready()
	if rd.ElectionsStarted != 0 {
		t.Fatalf("alone: %d elections started, want none (held)", rd.ElectionsStarted)
	}
	for _, id := range []string{"2", "3"} {
		p, _ := r.Get(id)
		n.PeerUp(p)
	}
	n.Ready()
	limit := 2 * c.HeartbeatInterval * c.HeartbeatMisses
	for i := 0; i < limit; i++ {
		n.Tick()
		for _, m := range n.Ready().Messages {
			if m.Type == MsgPreVote || m.Type == MsgElection {
				return
			}
		}
	}
	t.Fatalf("no election message within %d ticks of the members' return", limit)
}

// A wide pre-vote round without the guard asks wideAsk voters of a large
// cluster, not every one (issue 13: at 64 members in one process the wide
// rounds of starved members, 63 questions each, were 2,000 pre-votes a
// second), and the rounds of a member that keeps failing come to ask
// every voter in turn. Node "1" of 64 loses coordinator "64" and nobody
// ever answers.
func TestPreVoteWideRoundIsBounded(t *testing.T) {
	for _, alg := range []Algorithm{Bully, Ring, Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			const n = 64
			node := soloNode(t, alg, n)
			perRound := map[uint64]map[string]bool{}
			asked := map[string]bool{}
			for range 5000 {
				node.Tick()
				for _, m := range node.Ready().Messages {
					if m.Type != MsgPreVote {
						continue
					}
					if perRound[m.Seq] == nil {
						perRound[m.Seq] = map[string]bool{}
					}
					perRound[m.Seq][m.To] = true
					asked[m.To] = true
				}
			}
			if len(perRound) < 8 {
				t.Fatalf("%d pre-vote rounds in 5,000 ticks, want at least 8", len(perRound))
			}
			for round, to := range perRound {
				if len(to) > 2+wideAsk {
					t.Errorf("round %d asked %d voters, want at most %d", round, len(to), 2+wideAsk)
				}
			}
			if len(asked) != n-1 {
				t.Errorf("%d rounds asked %d distinct voters, want all %d others", len(perRound), len(asked), n-1)
			}
		})
	}
}

// In a fanned-out cluster the wide round asks the coordinator's watchers
// first (the W top-rated voters other than the suspect: they hear every
// heartbeat round) and fills the rest of its wideAsk questions from the
// moving offset. Node "1" of 64 (W = 4, B = 5: fanned out) loses
// coordinator "64": every wide round asks "63" to "60" and wideAsk - 4
// others, and no two rounds in a row ask the same others.
func TestPreVoteWideRoundAsksWatchersFirst(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			node := soloNode(t, alg, 64)
			if !node.fanningOut() {
				t.Fatal("64 members with the default W and B do not fan out")
			}
			watchers := []string{"63", "62", "61", "60"}
			var rounds []uint64
			perRound := map[uint64][]string{}
			for range 5000 {
				node.Tick()
				for _, m := range node.Ready().Messages {
					if m.Type != MsgPreVote {
						continue
					}
					if perRound[m.Seq] == nil {
						rounds = append(rounds, m.Seq)
					}
					perRound[m.Seq] = append(perRound[m.Seq], m.To)
				}
			}
			var prevOthers []string
			wide := 0
			for _, round := range rounds {
				to := perRound[round]
				if len(to) <= 2 {
					continue // the last round may not have widened yet
				}
				wide++
				first, rest := to[:2], to[2:] // the narrow round: "2" and "3"
				if !slices.Equal(first, []string{"2", "3"}) {
					t.Fatalf("round %d: the narrow round asked %v, want [2 3]", round, first)
				}
				if len(rest) != wideAsk {
					t.Fatalf("round %d: the wide round asked %d voters %v, want %d", round, len(rest), rest, wideAsk)
				}
				if !slices.Equal(rest[:len(watchers)], watchers) {
					t.Fatalf("round %d: the wide round asked %v first, want the watchers %v", round, rest[:len(watchers)], watchers)
				}
				others := rest[len(watchers):]
				for _, id := range others {
					if slices.Contains(watchers, id) {
						t.Fatalf("round %d: watcher %s asked twice: %v", round, id, rest)
					}
				}
				if slices.Equal(others, prevOthers) {
					t.Fatalf("round %d asked the same others as the round before: %v", round, others)
				}
				prevOthers = others
			}
			if wide < 8 {
				t.Fatalf("%d wide rounds in 5,000 ticks, want at least 8", wide)
			}
		})
	}
}

// Pre-vote answers that come later than a round waits (2 T: a process
// starved of CPU, where every member is slow; issue 13, 64 members in one
// process) must not keep the term from rising for ever: each round that
// nobody answered in time doubles the next one's wait, and the node
// raises the term once its wait covers the answers' delay. Node "1" of 5
// loses coordinator "5"; every pre-vote is granted, 3 T after it was
// asked. Before, every round failed and the late grants were dropped.
func TestPreVoteLateAnswersCount(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			node := soloNode(t, alg, 5)
			before := node.Status().Term
			delay := 3 * node.Config().AnswerTimeout
			type late struct {
				at int
				m  Message
			}
			var due []late
			for tick := range 2000 {
				node.Tick()
				for _, m := range node.Ready().Messages {
					if m.Type == MsgPreVote {
						due = append(due, late{tick + delay, Message{Type: MsgPreVoteAck, From: m.To, To: "1",
							Term: before, Seq: m.Seq, Granted: true}})
					}
				}
				for len(due) > 0 && due[0].at <= tick {
					node.Step(due[0].m)
					due = due[1:]
				}
				if node.Status().Term != before {
					t.Logf("term raised after %d ticks", tick)
					return
				}
			}
			t.Fatalf("term still %s after 2,000 ticks: every pre-vote answered after %d ticks failed", before, delay)
		})
	}
}

// A node names why it started an election: its first after the start-up
// window, its detector giving up on a silent coordinator, the membership
// layer's word that the coordinator is down.
func TestElectionCause(t *testing.T) {
	ps := []Peer{{ID: "1", Rating: 1}, {ID: "2", Rating: 2}, {ID: "3", Rating: 3}}
	n, err := NewNode(Config{ID: "2", Roster: MustRoster(ps), Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	started := func() (uint64, ElectionCause) {
		rd := n.Ready()
		return rd.ElectionsStarted, rd.Cause
	}
	for range n.cfg.StartupDelay {
		n.Tick()
	}
	if k, c := started(); k != 1 || c != CauseStartup {
		t.Fatalf("after the start-up window: %d started, cause %v; want 1, %v", k, c, CauseStartup)
	}
	// 3 wins and announces; 2 follows it.
	n.Step(Message{Type: MsgCoordinator, From: "3", To: "2", Term: MakeTerm(1, Tag("3")), Coordinator: "3"})
	if st := n.Status(); st.Coordinator != "3" {
		t.Fatalf("after 3's announcement: %+v, want to follow 3", st)
	}
	n.Ready()
	var k uint64
	var c ElectionCause
	for i := 0; i < 10_000 && k == 0; i++ { // 3 falls silent
		n.Tick()
		k, c = started()
	}
	if k != 1 || c != CauseSilence {
		t.Fatalf("after 3 fell silent: %d started, cause %v; want 1, %v", k, c, CauseSilence)
	}
	n.Step(Message{Type: MsgCoordinator, From: "3", To: "2", Term: MakeTerm(2, Tag("3")), Coordinator: "3"})
	if st := n.Status(); st.Coordinator != "3" {
		t.Fatalf("after 3's second announcement: %+v, want to follow 3", st)
	}
	n.Ready()
	n.PeerDown("3")
	if k, c := started(); k != 1 || c != CauseDown {
		t.Fatalf("after PeerDown of the coordinator: %d started, cause %v; want 1, %v", k, c, CauseDown)
	}
	for _, c := range []ElectionCause{CauseStartup, CauseSilence, CauseDown, CauseHandoff, CauseLeaderless, CauseChallenge, CauseRestart, CausePreempt} {
		if c.String() == "cause" || c.String() == "" {
			t.Errorf("cause %d has no name", c)
		}
	}
	if NumElectionCauses.String() != "cause" {
		t.Errorf("an unknown cause is named %q", NumElectionCauses.String())
	}
}
