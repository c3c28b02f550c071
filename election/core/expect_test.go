package core

import "testing"

// expectNode is a View-mode node "1" that knows only itself, as the
// runtime starts one, with the start-up hold configured.
func expectNode(t *testing.T, voters, window int) *Node {
	t.Helper()
	n, err := NewNode(Config{ID: "1", Roster: MustRoster([]Peer{{ID: "1", Rating: 1}}), Mode: View,
		StartupDelay: 5, ExpectVoters: voters, ExpectWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tickUntil ticks n until tick `until`, calling at(tick) before each tick;
// it returns the tick at which the node started its first election (-1:
// none).
func tickUntil(n *Node, until int, at func(int)) int {
	for n.Now() < until {
		if at != nil {
			at(n.Now())
		}
		n.Tick()
		if n.Ready().ElectionsStarted > 0 {
			return n.Now()
		}
	}
	return -1
}

// Consul's bootstrap_expect: no election before ExpectVoters voters are in
// the view (and the view has held still for one StartupDelay check).
func TestExpectHoldsUntilVotersVisible(t *testing.T) {
	n := expectNode(t, 3, 200)
	got := tickUntil(n, 200, func(now int) {
		switch now {
		case 7:
			n.PeerUp(Peer{ID: "2", Rating: 2})
		case 31:
			n.PeerUp(Peer{ID: "3", Rating: 3})
		}
	})
	if got >= 0 && got < 31 {
		t.Fatalf("elected at tick %d with fewer than 3 voters visible", got)
	}
	// Checks every 5 ticks: at 35 the view has just grown, at 40 it held.
	if got != 40 {
		t.Fatalf("first election at tick %d, want 40", got)
	}
	if su := n.Startup(); su.Holding || su.Short || su.Voters != 3 || su.Expect != 3 {
		t.Fatalf("Startup() = %+v", su)
	}
}

// With Bootstrap the window bounds the wait: the node elects with what it
// sees, and says that it was short of the expectation.
func TestExpectWindowPasses(t *testing.T) {
	n := expectNode(t, 3, 50)
	n.cfg.Bootstrap = true
	n.PeerUp(Peer{ID: "2", Rating: 2})
	if su := n.Startup(); !su.Holding || su.Voters != 2 {
		t.Fatalf("before the window: Startup() = %+v", su)
	}
	if got := tickUntil(n, 100, nil); got != 50 {
		t.Fatalf("first election at tick %d, want 50 (the window)", got)
	}
	if su := n.Startup(); su.Holding || !su.Short || su.Voters != 2 {
		t.Fatalf("after the window: Startup() = %+v", su)
	}
}

// Without Bootstrap a node that has never seen ExpectVoters voters holds
// past the window, however long (dead seeds, another key): it never leads
// on its own, and Hold says what it waits for. Once the voters show up
// it elects as usual.
func TestExpectHoldsPastWindowUntilSeen(t *testing.T) {
	n := expectNode(t, 3, 50)
	n.PeerUp(Peer{ID: "2", Rating: 2})
	if got := tickUntil(n, 5000, nil); got != -1 {
		t.Fatalf("elected at tick %d having never seen 3 voters", got)
	}
	if h := n.Hold(); h.Reason != HoldExpect || h.Voters != 2 || h.Need != 3 || h.Found != 3 {
		t.Fatalf("Hold() = %+v, want expect 2 of 3, not found yet (3 to see)", h)
	}
	n.PeerUp(Peer{ID: "3", Rating: 3})
	if got := tickUntil(n, 5100, nil); got < 0 {
		t.Fatal("no election once 3 voters were visible")
	}
	if su := n.Startup(); su.Holding || su.Short {
		t.Fatalf("Startup() = %+v, want settled, not short", su)
	}
	// Seen once is enough: a voter that leaves afterwards ends no hold.
	m := expectNode(t, 3, 50)
	m.PeerUp(Peer{ID: "2", Rating: 2})
	m.PeerUp(Peer{ID: "3", Rating: 3})
	tickUntil(m, 7, nil) // the check at tick 5 sees 3 voters, still changing
	m.PeerDown("3")
	if got := tickUntil(m, 100, nil); got != 50 {
		t.Fatalf("seen 3 voters once: first election at tick %d, want 50 (the window)", got)
	}
}

// Without an expectation, a node whose view is still growing waits for it
// to hold still for one StartupDelay period (members joining one after the
// other in a deployment); a node whose view does not change elects after
// StartupDelay, as without the hold.
func TestHoldWhileViewGrows(t *testing.T) {
	n := expectNode(t, 0, 100)
	got := tickUntil(n, 100, func(now int) {
		if now%4 == 0 && now < 30 {
			id := string(rune('2' + now/4))
			n.PeerUp(Peer{ID: id, Rating: int64(now)})
		}
	})
	// Growing until tick 28: the checks at 30 and 35 see a change (at 30,
	// the member added at 28), 35 none.
	if got != 35 {
		t.Fatalf("first election at tick %d, want 35", got)
	}
	alone := expectNode(t, 0, 100)
	if got := tickUntil(alone, 100, nil); got != 5 {
		t.Fatalf("a node alone elected at tick %d, want 5 (StartupDelay)", got)
	}
	off := expectNode(t, 0, 0)
	if got := tickUntil(off, 100, func(now int) { off.PeerUp(Peer{ID: string(rune('a' + now)), Rating: 1}) }); got != 5 {
		t.Fatalf("without a window: first election at tick %d, want 5", got)
	}
}

// A node that hears a coordinator while it holds follows it: the hold
// delays only this node's own election.
func TestHoldFollowsCoordinator(t *testing.T) {
	n := expectNode(t, 3, 200)
	n.PeerUp(Peer{ID: "9", Rating: 9})
	tickUntil(n, 10, nil)
	hb := func(int) {
		n.Step(Message{Type: MsgHeartbeat, From: "9", To: "1", Coordinator: "9", Term: MakeTerm(1, Tag("9"))})
	}
	hb(0)
	if st := n.Status(); st.Coordinator != "9" {
		t.Fatalf("status %+v, want coordinator 9", st)
	}
	if n.Startup().Holding {
		t.Fatal("still holding after following a coordinator")
	}
	if got := tickUntil(n, 200, hb); got != -1 {
		t.Fatalf("elected at tick %d while following a live coordinator", got)
	}
}

func TestExpectConfigValidated(t *testing.T) {
	base := Config{ID: "1", Roster: MustRoster([]Peer{{ID: "1"}})}
	for _, c := range []Config{
		{ExpectVoters: -1, ExpectWindow: 10},
		{ExpectWindow: -1},
		{ExpectVoters: 3},
	} {
		c.ID, c.Roster = base.ID, base.Roster
		if err := c.Validate(); err == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
}

// Only the node's own start-up timer waits: a top member that holds and
// gets an ELECTION from a lower one whose hold is over takes part (here:
// it is the top, so it wins), rather than stay silent and let the lower
// one declare itself.
func TestHoldDoesNotSilenceAnElection(t *testing.T) {
	n, err := NewNode(Config{ID: "9", Roster: MustRoster([]Peer{{ID: "9", Rating: 9}}), Mode: View,
		StartupDelay: 5, ExpectVoters: 3, ExpectWindow: 200})
	if err != nil {
		t.Fatal(err)
	}
	n.PeerUp(Peer{ID: "1", Rating: 1})
	tickUntil(n, 20, nil)
	if !n.Startup().Holding {
		t.Fatalf("not holding with 2 of 3 voters: %+v", n.Startup())
	}
	n.Step(Message{Type: MsgElection, From: "1", To: "9", Rating: 1})
	var counted Counters
	for range 20 {
		rd := n.Ready()
		counted.Add(&rd.Counters)
		for _, m := range rd.Messages {
			if m.Type == MsgCoordinator || m.Type == MsgAnswer || m.Type == MsgPreVote {
				return // it answers, announces, or asks to raise the term
			}
		}
		n.Tick()
	}
	t.Fatalf("the holding top member stayed silent: state %v, counters %+v", n.Status().State, counted)
}
