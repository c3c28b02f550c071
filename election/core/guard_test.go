package core

import "testing"

// TestGuardOffIsNoOp: without the guard (QuorumSize 0) the guard is a
// no-op part: whatever it is told, its promise, rounds, acks and lease
// stay at zero, nobody is isolated, and its predicates give the answer of
// a cluster without the guard.
func TestGuardOffIsNoOp(t *testing.T) {
	cfg := Config{QuorumLease: 15, QuorumLeaseMax: 120, LeaseMargin: 2, HeartbeatInterval: 5}
	var g guard
	g.configure(&cfg)
	term := MakeTerm(3, 7)
	for now := 0; now < 50; now++ {
		if _, ok := g.grant(now, term, 40); ok {
			t.Fatalf("tick %d: granted a promise without the guard", now)
		}
		g.newRound(now, term, uint64(now+1))
		if g.extend(now, term) {
			t.Fatalf("tick %d: confirmed a lease without the guard", now)
		}
		g.setIsolated(true)
		g.settleFollower(now, term)
		if g.settleLead(now, term) {
			t.Fatalf("tick %d: settled a lease without the guard", now)
		}
		if g.promised(now) || g.bound(now, term+1) || g.restartPromise(now) || g.isolated || g.neverConfirmed() {
			t.Fatalf("tick %d: %+v binds or isolates without the guard", now, g)
		}
	}
	if g.grantEnd != 0 || g.grantTerm != 0 || g.books != nil || g.leaseEnd != 0 || g.wireAsk(term) != 0 {
		t.Fatalf("books without the guard: %+v", g)
	}
	if !g.holds() || g.leased() || !g.counts(false) || g.needsOthers() || g.sufficient(4) != 4 || g.leavesNoMajority(100) {
		t.Fatalf("predicates without the guard: holds %v leased %v counts %v needsOthers %v sufficient %d leavesNoMajority %v",
			g.holds(), g.leased(), g.counts(false), g.needsOthers(), g.sufficient(4), g.leavesNoMajority(100))
	}
}

// TestGuardMajority: the guard's majorities of a quorum of 5.
func TestGuardMajority(t *testing.T) {
	cfg := Config{QuorumSize: 5, QuorumLease: 15, QuorumLeaseMax: 120, LeaseMargin: 2, HeartbeatInterval: 5}
	var g guard
	g.configure(&cfg)
	if g.majority() != 3 || !g.needsOthers() || g.sufficient(5) != 3 || g.sufficient(2) != 2 {
		t.Fatalf("majority %d, needsOthers %v, sufficient(5) %d, sufficient(2) %d; want 3, true, 3, 2",
			g.majority(), g.needsOthers(), g.sufficient(5), g.sufficient(2))
	}
	if g.leavesNoMajority(2) || !g.leavesNoMajority(3) {
		t.Fatalf("leavesNoMajority(2) %v, (3) %v; want false, true", g.leavesNoMajority(2), g.leavesNoMajority(3))
	}
	if !g.restartPromise(0) || g.holds() {
		t.Fatalf("a starting voter of a quorum of 5: restartPromise %v, holds %v; want true, false", g.restartPromise(0), g.holds())
	}
}
