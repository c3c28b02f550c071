package core

import (
	"strings"
	"testing"
)

func TestValidateNamesFieldAndValue(t *testing.T) {
	roster := MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "2", Rating: 2}})
	ok := Config{ID: "1", Roster: roster}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.ID = "" }, `Config.ID = "": must be set`},
		{func(c *Config) { c.ID = "9" }, `Config.ID = "9": must be a member of Roster`},
		{func(c *Config) { c.Roster = nil }, "Config.Roster = nil"},
		{func(c *Config) { c.AnswerTimeout = -1 }, "Config.AnswerTimeout = -1"},
		{func(c *Config) { c.AnswerTimeout, c.CoordinatorTimeout = 5, 6 }, "Config.CoordinatorTimeout = 6: must exceed AnswerTimeout + RoundTrip = 7"},
		{func(c *Config) { c.RoundTrip, c.AnswerTimeout = 5, 3 }, "Config.AnswerTimeout = 3: must cover a round trip"},
		{func(c *Config) { c.HeartbeatMisses = -2 }, "Config.HeartbeatMisses = -2"},
		{func(c *Config) { c.Algorithm = 7 }, "Config.Algorithm = algorithm(7)"},
		{func(c *Config) { c.PreemptMargin = -1 }, "Config.PreemptMargin = -1"},
		{func(c *Config) { c.QuorumSize = 3; c.QuorumLease = 5 }, "Config.QuorumLease = 5: must exceed HeartbeatInterval"},
	} {
		c := ok
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
		if _, nerr := NewNode(c); nerr == nil {
			t.Errorf("NewNode accepted a config that Validate rejects (%q)", tc.want)
		}
	}
}

func TestRosterRejectsBadMembers(t *testing.T) {
	if _, err := NewRoster([]Peer{{ID: "a"}, {ID: "a"}}); err == nil || !strings.Contains(err.Error(), `"a" appears twice`) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := NewRoster([]Peer{{ID: ""}}); err == nil {
		t.Error("empty ID accepted")
	}
	if _, err := NewRoster([]Peer{{ID: "1"}, {ID: "0"}, {ID: "00"}}); err == nil || !strings.Contains(err.Error(), `"0" and "00" have the same tag 0`) {
		t.Errorf("tag clash: %v", err)
	}
}

// A member whose tag another member has is refused at run time too, as
// membership refuses it: PeerUp ignores it and its messages are dropped, so
// it can never win a term that names another member.
func TestTagClashRefusedAtRunTime(t *testing.T) {
	node, err := NewNode(Config{ID: "2", Roster: MustRoster([]Peer{{ID: "1", Rating: 1}, {ID: "2", Rating: 2}}), Mode: View})
	if err != nil {
		t.Fatal(err)
	}
	node.PeerUp(Peer{ID: "01", Rating: 9})
	if node.Roster().Index("01") >= 0 {
		t.Fatal(`PeerUp added "01", whose tag is "1"'s`)
	}
	node.Step(Message{Type: MsgCoordinator, From: "01", To: "2", Coordinator: "01", Term: MakeTerm(5, Tag("01")), Rating: 9})
	if st := node.Status(); st.Coordinator == "01" || st.Term.Epoch() == 5 {
		t.Fatalf("a message from a clashing sender was taken: %+v", st)
	}
	if rd := node.Ready(); rd.Dropped[DropOrder] != 1 {
		t.Fatalf("drops %v, want one for order", rd.Dropped)
	}
}

func TestTermOrderAndTag(t *testing.T) {
	a, b := MakeTerm(3, 7), MakeTerm(4, 1)
	if !(a < b) || a.Epoch() != 3 || a.Tag() != 7 || a.String() != "3.7" {
		t.Fatalf("term %v / %v", a, b)
	}
	if Tag("42") != 42 || Tag("node-a") == Tag("node-b") {
		t.Fatal("tag: numeric IDs are their own tag; names hash")
	}
}

func TestCompareID(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"9", "10", -1}, {"10", "9", 1}, {"7", "7", 0}, {"9", "a", -1}, {"b", "a", 1}, {"01", "1", 1}} {
		if got := CompareID(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareID(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	if a, err := ParseAlgorithm("peterson"); err != nil || a != Peterson {
		t.Fatal(a, err)
	}
	if _, err := ParseAlgorithm("raft"); err == nil || !strings.Contains(err.Error(), "want bully, ring or peterson") {
		t.Fatal(err)
	}
}

// Rosters grown from membership events in any order end in the same ring
// order on every node.
func TestRosterGrowsInIDOrder(t *testing.T) {
	a := MustRoster([]Peer{{ID: "n3"}})
	b := MustRoster([]Peer{{ID: "n1"}})
	for _, id := range []string{"n5", "n1", "n2", "n4"} {
		a = a.with(Peer{ID: id})
	}
	for _, id := range []string{"n4", "n3", "n2", "n5"} {
		b = b.with(Peer{ID: id})
	}
	for i := 0; i < a.Len(); i++ {
		if a.At(i).ID != b.At(i).ID {
			t.Fatalf("ring orders differ: %v vs %v", a.Members(), b.Members())
		}
	}
}
