package core

import (
	"fmt"
	"testing"
)

// The epoch allowance (term.go): a member's epoch rises by at most
// MaxEpochStep + EpochRate*D in any D ticks, whatever frames it receives,
// and a member behind a cluster by at most MaxEpochStep follows it at
// once.

// allowanceNode returns node "1" of members "1".."5" (bully, View mode),
// following coordinator "5" in term epoch.5, its allowance whole.
func allowanceNode(t *testing.T, epoch uint32) *Node {
	t.Helper()
	n, err := NewNode(Config{ID: "1", Roster: MustRoster(members(5, func(i int) int64 { return int64(i) })), Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	if epoch > 0 {
		n.Bootstrap("5", MakeTerm(epoch, Tag("5")))
	}
	n.Ready()
	return n
}

// heartbeatAt is a heartbeat in coordinator "5"'s name, in its term of
// epoch e, to node "1".
func heartbeatAt(e uint32) Message {
	return Message{Type: MsgHeartbeat, From: "5", To: "1", Coordinator: "5", Term: MakeTerm(e, Tag("5")), Rating: 4}
}

// TestEpochAllowanceArithmetic steps a node through the allowance's cases:
// each row advances the node's clock, hands it a heartbeat of an epoch
// (0: none) and states the epoch it must hold then and whether the frame
// was dropped as bad_term.
func TestEpochAllowanceArithmetic(t *testing.T) {
	const C, E = int(MaxEpochStep), EpochRate
	type step struct {
		ticks   int    // ticks to advance first
		frame   uint32 // a heartbeat's epoch, 0 for none
		epoch   uint32 // the node's epoch afterwards
		dropped bool   // the frame was dropped as bad_term
		room    int    // the allowance afterwards
	}
	tests := []struct {
		name  string
		start uint32 // the node's epoch at first (0: just started)
		steps []step
	}{
		{"a restarted member learns epoch 10^6 at once", 0, []step{
			{0, 1_000_000, 1_000_000, false, C - 1_000_000},
		}},
		{"a whole allowance, exactly", 0, []step{
			{0, MaxEpochStep, MaxEpochStep, false, 0},
			{0, MaxEpochStep + 1, MaxEpochStep, true, 0},          // nothing left...
			{1, MaxEpochStep + 1, MaxEpochStep + 1, false, E - 1}, // ...until a tick adds EpochRate
		}},
		{"one frame at MaxEpoch moves a fresh member by the allowance only", 0, []step{
			{0, MaxEpoch, MaxEpochStep, true, 0},
			{10, MaxEpoch, MaxEpochStep + 10*E, true, 0},
		}},
		{"beyond MaxEpoch is refused outright", 7, []step{
			{0, MaxEpoch + 1, 7, true, C},
			{0, 1<<32 - 1, 7, true, C},
		}},
		{"elections one epoch at a time cost one each", 100, []step{
			{0, 101, 101, false, C - 1},
			{0, 102, 102, false, C - 2},
			{2, 103, 103, false, C - 1}, // two ticks refill more than the two spent
		}},
		{"a member far behind after a partition", 5, []step{
			{0, 5 + 900_000, 5 + 900_000, false, C - 900_000},
		}},
		{"the allowance refills to MaxEpochStep, no further", 5, []step{
			{0, 5 + MaxEpochStep, 5 + MaxEpochStep, false, 0},
			{C/E + 1000, 0, 5 + MaxEpochStep, false, C},
		}},
		{"a cluster 3 * 2^20 ahead is caught up with at EpochRate a tick", 1, []step{
			{0, 1 + 3*MaxEpochStep, 1 + MaxEpochStep, true, 0},
			{C / E, 1 + 3*MaxEpochStep, 1 + 2*MaxEpochStep, true, 0},
			{C / E, 1 + 3*MaxEpochStep, 1 + 3*MaxEpochStep, false, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := allowanceNode(t, tt.start)
			for i, s := range tt.steps {
				for range s.ticks {
					n.Tick()
				}
				n.Ready()
				if s.frame != 0 {
					n.Step(heartbeatAt(s.frame))
				}
				rd := n.Ready()
				if got := n.term.Epoch(); got != s.epoch {
					t.Fatalf("step %d: epoch %d, want %d", i, got, s.epoch)
				}
				if got := rd.Dropped[DropBadTerm] > 0; got != s.dropped {
					t.Fatalf("step %d: dropped as bad_term %v, want %v", i, got, s.dropped)
				}
				if got := n.epochRoom(); got != s.room {
					t.Fatalf("step %d: allowance %d, want %d", i, got, s.room)
				}
			}
		})
	}
}

// TestEpochAllowanceLineRate: heartbeats in the coordinator's name, each a
// whole MaxEpochStep above what the node holds, three a tick for 60,000
// ticks (10 minutes at the runtime's 10-ms tick), as the frames that
// walked five members to MaxEpoch in 15 seconds. The first takes the whole
// allowance, each later tick EpochRate more: the node ends MaxEpochStep +
// EpochRate*(60,000 - 1) above where it started, within the bound of
// MaxEpochStep + EpochRate*60,000 and under 0.1 % of MaxEpoch.
func TestEpochAllowanceLineRate(t *testing.T) {
	const ticks = 60_000
	n := allowanceNode(t, 1)
	for range ticks {
		n.Tick()
		for range 3 {
			n.Step(heartbeatAt(n.term.Epoch() + MaxEpochStep))
		}
		n.Ready()
	}
	want := 1 + MaxEpochStep + EpochRate*(ticks-1)
	if got := n.term.Epoch(); got != want {
		t.Fatalf("epoch %d after %d ticks of frames, want %d = 1 + 2^20 + %d * %d", got, ticks, want, EpochRate, ticks-1)
	}
	if bound := MaxEpochStep + EpochRate*ticks; want-1 > bound || float64(bound) > 0.001*float64(MaxEpoch) {
		t.Fatalf("raised by %d, bound %d: not within the bound, or the bound not under 0.1 %% of MaxEpoch", want-1, bound)
	}
}

// No member makes a term past MaxEpoch: the cluster's epoch is MaxEpoch-1
// or MaxEpoch when its coordinator crashes. Bully's survivors win
// MaxEpoch from MaxEpoch-1; the rings' laps and active/relay elections run
// in MaxEpoch, and the coordinator term they would name (one further) is
// not made: the election is given up (ring.complete, peterson.finish). From
// MaxEpoch nobody stands (startElection). No message, no member's term
// ever carries an epoch past MaxEpoch, and nothing wraps.
func TestNoTermPastMaxEpoch(t *testing.T) {
	for _, alg := range threeAlgorithms {
		for _, epoch := range []uint32{MaxEpoch - 1, MaxEpoch} {
			t.Run(fmt.Sprintf("%s/%d", alg, epoch), func(t *testing.T) {
				w := newTestNet(t, viewCfg(alg), members(3, func(i int) int64 { return int64(i) }))
				w.observe = func(m Message) {
					if e := m.Term.Epoch(); e > MaxEpoch || e < epoch {
						t.Fatalf("sent %+v: epoch %d, want %d to MaxEpoch", m, e, epoch)
					}
				}
				for _, id := range w.ids {
					w.nodes[id].Bootstrap("3", MakeTerm(epoch, Tag("3")))
					w.flush(id)
				}
				w.deliver()
				w.crash("3")
				w.detect("1", "2")
				for range 500 {
					w.tick()
					w.deliver()
				}
				for _, id := range []string{"1", "2"} {
					st := w.nodes[id].Status()
					if st.Term.Epoch() > MaxEpoch {
						t.Fatalf("node %s: %v, past MaxEpoch", id, st)
					}
					leads := alg == Bully && epoch < MaxEpoch
					if got := st.Coordinator == "2"; got != leads {
						t.Fatalf("node %s: %v; 2 leading: %v, want %v", id, st, got, leads)
					}
				}
			})
		}
	}
}

// A member whose allowance is spent (it has just raised its epoch by
// MaxEpochStep) stands only once a tick has refilled it, then elects as
// usual.
func TestElectionWaitsForTheAllowance(t *testing.T) {
	for _, alg := range threeAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			w := newTestNet(t, viewCfg(alg), members(3, func(i int) int64 { return int64(i) }))
			w.bootstrap("3")
			for _, id := range w.ids {
				w.nodes[id].chargeEpochs(int(MaxEpochStep))
			}
			w.crash("3")
			w.detect("1", "2")
			w.deliver()
			for _, id := range []string{"1", "2"} {
				if n := w.nodes[id]; n.electing || n.term.Epoch() != 1 {
					t.Fatalf("node %s stood with its allowance spent: electing %v, term %s", id, n.electing, n.term)
				}
			}
			c, term := w.settle(2000)
			if c != "2" || term.Epoch() <= 1 {
				t.Fatalf("coordinator %s in %s, want 2 above epoch 1 once the allowance refilled", c, term)
			}
		})
	}
}

// A member that restarts (epoch 0) while the cluster's epoch is 10^6 —
// elections, or frames a forger walked it up with — follows the
// coordinator at its first heartbeat, with or without the guard.
func TestRestartedMemberFollowsHighEpochAtOnce(t *testing.T) {
	for _, alg := range threeAlgorithms {
		for _, quorum := range []int{0, 5} {
			t.Run(fmt.Sprintf("%s/quorum=%d", alg, quorum), func(t *testing.T) {
				cfg := viewCfg(alg)
				cfg.QuorumSize = quorum
				w := newTestNet(t, cfg, members(5, func(i int) int64 { return int64(i) }))
				term := MakeTerm(1_000_000, Tag("5"))
				for _, id := range w.ids {
					w.nodes[id].Bootstrap("5", term)
					w.flush(id)
				}
				w.deliver()
				w.crash("2")
				w.restart("2")
				w.deliver()
				n := w.nodes["2"]
				if n.Status().Term != term || n.coordinator != "5" {
					t.Fatalf("restarted member: %v coordinator %q, want term %s and coordinator 5 at once", n.Status(), n.coordinator, term)
				}
				if d := w.total("2").Dropped[DropBadTerm]; d != 0 {
					t.Fatalf("restarted member dropped %d frames as bad_term", d)
				}
			})
		}
	}
}
