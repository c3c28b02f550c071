package membership

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/testport"
	"github.com/coordelect/coordelect/membership/membershiptest"
)

func TestJoinRatingsAndMembers(t *testing.T) {
	checkLeaks(t)
	ms := cluster(t, 3, func(c *Config) {
		c.Algorithm = core.Ring
		c.NonVoter = c.Name == "n3"
	})
	n1, n2, n3 := ms[0], ms[1], ms[2]
	if err := n2.SetRating(25); err != nil {
		t.Fatal(err)
	}
	n1.waitPeerEvents(t, "n2", "rating:n2/25")
	n3.waitPeerEvents(t, "n2", "up:n2/20", "rating:n2/25")

	got := n1.Members()
	if len(got) != 3 {
		t.Fatalf("members: %+v", got)
	}
	for i, want := range []Member{
		{Name: "n1", Addr: n1.Addr(), Rating: 10, Voter: true, Alive: true, Self: true},
		{Name: "n2", Addr: n2.Addr(), Rating: 25, Voter: true, Alive: true},
		{Name: "n3", Addr: n3.Addr(), Rating: 30, Voter: false, Alive: true},
	} {
		want.Algorithm, want.BootID = "ring", ms[i].BootID()
		if got[i] != want {
			t.Errorf("member %d = %+v, want %+v", i, got[i], want)
		}
	}
}

func TestSendReliableAndBestEffort(t *testing.T) {
	checkLeaks(t)
	ms := cluster(t, 2, nil)
	n1, n2 := ms[0], ms[1]
	elect := sampleMessage()
	elect.Type, elect.From, elect.To = core.MsgElection, "n1", "n2"
	heartbeat := core.Message{Type: core.MsgHeartbeat, From: "n2", To: "n1", Coordinator: "n2", Term: core.MakeTerm(1, 2)}
	sendBothWays(t, n1, elect, n2, heartbeat)
	if s := n1.Stats(); s.Sent != 1 || s.Received != 1 || s.SendFailed != 0 {
		t.Fatalf("n1 stats: %+v", s)
	}
}

func TestSendErrors(t *testing.T) {
	checkLeaks(t)
	n := start(t, testConfig("solo"))
	tests := []struct {
		m    core.Message
		want error
	}{
		{core.Message{Type: core.MsgElection, From: "solo", To: "nobody"}, ErrUnknownPeer},
		{core.Message{Type: core.MsgElection, From: "solo", To: "solo"}, ErrUnknownPeer},
		{core.Message{From: "solo", To: "nobody"}, ErrInvalid},
		{core.Message{Type: core.MsgElection, From: "other", To: "nobody"}, ErrInvalid},
	}
	for _, tt := range tests {
		if err := n.Send(tt.m); !errors.Is(err, tt.want) {
			t.Errorf("Send(%+v) = %v, want %v", tt.m, err, tt.want)
		}
	}
	n.stop(t)
	n.stop(t) // idempotent
	if err := n.Send(tests[0].m); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	if err := n.SetRating(1); !errors.Is(err, ErrClosed) {
		t.Errorf("SetRating after Close = %v", err)
	}
	if err := n.Leave(time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Leave after Close = %v", err)
	}
}

// TestOrderUnderDelay delays every stream by 0-30 ms, so memberlist's
// connection-per-message SendReliable delivers out of order; the
// receiver must still see the sender's order, with nothing skipped.
func TestOrderUnderDelay(t *testing.T) {
	checkLeaks(t)
	fn := membershiptest.NewFaultNetwork(1, nil)
	ms := cluster(t, 2, func(c *Config) { c.Transport = listen(t, fn, c.Name, 0) })
	n1, n2 := ms[0], ms[1]
	fn.SetDelay(0, 30*time.Millisecond)
	const count = 100
	for i := range count {
		m := core.Message{Type: core.MsgElection, From: "n1", To: "n2", Phase: uint32(i)}
		if err := n1.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	if !waitUntil(waitTimeout, func() bool { return len(n2.messages()) >= count }) {
		t.Fatalf("received %d of %d", len(n2.messages()), count)
	}
	for i, ev := range n2.messages() {
		if ev.Message.Phase != uint32(i) {
			t.Fatalf("message %d has phase %d: order lost", i, ev.Message.Phase)
		}
	}
	s := n2.Stats()
	if s.Reordered == 0 || s.GapsSkipped != 0 {
		t.Fatalf("stats %+v: want some messages reordered (else the test proves nothing) and no gap", s)
	}
	t.Logf("%d of %d messages arrived early and were held", s.Reordered, count)
}

// TestBestEffortElectionMessages: an election message marked BestEffort
// (a coordinator's announcement to a member that hears it in rotation)
// goes as one datagram, numbered in its link's order: with the streams
// from n1 to n2 refused, the marked messages all arrive, in order and
// once each, and the unmarked one after them does not.
func TestBestEffortElectionMessages(t *testing.T) {
	checkLeaks(t)
	fn := membershiptest.NewFaultNetwork(1, nil)
	ms := cluster(t, 2, func(c *Config) { c.Transport = listen(t, fn, c.Name, 0) })
	n1, n2 := ms[0], ms[1]
	fn.BlockStreams("n1", "n2")
	const count = 20
	for i := range count + 1 {
		m := core.Message{Type: core.MsgCoordinator, From: "n1", To: "n2", Coordinator: "n1", Phase: uint32(i), BestEffort: i < count}
		if err := n1.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	if !waitUntil(waitTimeout, func() bool { return len(n2.messages()) >= count && n1.Stats().SendFailed >= 1 }) {
		t.Fatalf("received %d of %d; n1 stats %+v", len(n2.messages()), count, n1.Stats())
	}
	for i, ev := range n2.messages() {
		if ev.Message.Phase != uint32(i) || i >= count {
			t.Fatalf("message %d has phase %d: order lost, or the unmarked one came by a refused stream", i, ev.Message.Phase)
		}
	}
	if s := n1.Stats(); s.Sent != count || s.SendFailed != 1 {
		t.Fatalf("n1 stats %+v: want %d sent by datagram and the stream refused", s, count)
	}
	if s := n2.Stats(); s.GapsSkipped != 0 {
		t.Fatalf("n2 stats %+v: want no gap", s)
	}
}

func listen(t *testing.T, fn *membershiptest.FaultNetwork, name string, port int) *membershiptest.FaultTransport {
	t.Helper()
	tr, err := fn.Listen(name, "127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestCrashAndLeaveSeenAsDown(t *testing.T) {
	checkLeaks(t)
	ms := cluster(t, 4, nil)
	ms[3].stop(t) // crash: no Leave
	for _, m := range ms[:3] {
		m.waitPeerEvents(t, "n4", "down:n4")
	}
	if err := ms[0].Send(core.Message{Type: core.MsgElection, From: "n1", To: "n4"}); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("Send to a dead member: %v", err)
	}
	if err := ms[2].Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		m.waitPeerEvents(t, "n3", "down:n3")
	}
	for _, mb := range ms[0].Members() {
		if alive := mb.Name == "n1" || mb.Name == "n2"; mb.Alive != alive {
			t.Errorf("member %+v: want alive %v", mb, alive)
		}
	}
}

// TestRestartSeenAsNewBoot restarts n2 under the same name and address
// before memberlist can declare it dead: only the new boot ID in its
// metadata tells the others, who must report it (a PeerUp with the new
// rating, no PeerDown) and talk to the new incarnation.
func TestRestartSeenAsNewBoot(t *testing.T) {
	checkLeaks(t)
	port := testport.Free(t)
	ms := cluster(t, 3, func(c *Config) { atPort(c, "n2", port) })
	n1, n2 := ms[0], ms[1]
	oldBoot := n2.BootID()
	n2.stop(t)

	cfg := testConfig("n2")
	cfg.BindPort, cfg.Rating, cfg.Seeds = port, 21, []string{n1.Addr()}
	n2b := start(t, cfg)
	for _, m := range []*member{n1, ms[2]} {
		m.waitPeerEvents(t, "n2", "up:n2/21") // a restart: the links start over, no PeerDown
	}
	if mb := n1.Members()[1]; mb.BootID != n2b.BootID() || mb.BootID == oldBoot {
		t.Fatalf("n1 sees n2 with boot %x; old %x, new %x", mb.BootID, oldBoot, n2b.BootID())
	}
	// The new incarnation's links start afresh in both directions.
	if err := n1.Send(core.Message{Type: core.MsgElection, From: "n1", To: "n2"}); err != nil {
		t.Fatal(err)
	}
	if err := n2b.Send(core.Message{Type: core.MsgAnswer, From: "n2", To: "n1"}); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(waitTimeout, func() bool { return len(n2b.messages()) == 1 && len(n1.messages()) == 1 }) {
		t.Fatalf("after restart: n2 got %v, n1 got %v", n2b.messages(), n1.messages())
	}
}

func TestSecretKeyAndLabelSeparateClusters(t *testing.T) {
	checkLeaks(t)
	key := func(b byte) []byte { k := make([]byte, 32); k[0] = b; return k }
	seedCfg := testConfig("seed")
	seedCfg.SecretKey, seedCfg.Label = key(1), "prod"
	seed := start(t, seedCfg)
	tests := []struct {
		name, label string
		key         []byte
		joins       bool
	}{
		{"wrong-key", "prod", key(2), false},
		{"no-key", "prod", nil, false},
		{"wrong-label", "test", key(1), false},
		{"same", "prod", key(1), true},
	}
	for _, tt := range tests {
		cfg := testConfig(tt.name)
		cfg.SecretKey, cfg.Label = tt.key, tt.label
		n := start(t, cfg)
		if _, err := n.Join(seed.Addr()); (err == nil) != tt.joins {
			t.Errorf("%s: Join error = %v, want joined %v", tt.name, err, tt.joins)
		}
	}
	seed.waitPeerEvents(t, "same", "up:same/0")
	if mbs := seed.Members(); len(mbs) != 2 || mbs[0].Name != "same" {
		t.Fatalf("seed members: %+v", mbs)
	}
}

// TestTagCollisionRefused: core.Tag("5") == core.Tag("05"), so each node
// refuses the other, and says so.
func TestTagCollisionRefused(t *testing.T) {
	checkLeaks(t)
	a := start(t, testConfig("5"))
	cfg := testConfig("05")
	cfg.Seeds = []string{a.Addr()}
	b := start(t, cfg)
	for _, m := range []*member{a, b} {
		if !waitUntil(waitTimeout, func() bool { return m.Stats().RefusedTagCollision == 1 }) {
			t.Fatalf("%s: stats %+v", m.LocalID(), m.Stats())
		}
		if mbs := m.Members(); len(mbs) != 2 || mbs[0].Refused+mbs[1].Refused != RefusedTagCollision {
			t.Fatalf("%s: members %+v", m.LocalID(), mbs)
		}
	}
	if err := a.Send(core.Message{Type: core.MsgElection, From: "5", To: "05"}); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("Send to a refused member: %v", err)
	}
	if evs := a.peerEvents("05"); len(evs) != 0 {
		t.Fatalf("events about a refused member: %v", evs)
	}
}

// TestPartitionHealsByRejoin cuts two nodes apart until each has declared
// the other dead and forgotten it; only the periodic re-join of the seeds
// brings them back together after the partition heals.
func TestPartitionHealsByRejoin(t *testing.T) {
	checkLeaks(t)
	fn := membershiptest.NewFaultNetwork(2, nil)
	var seedAddr string
	ms := cluster(t, 2, func(c *Config) {
		tr := listen(t, fn, c.Name, 0)
		c.Transport, c.RejoinInterval = tr, 200*time.Millisecond
		if seedAddr == "" {
			seedAddr = tr.Addr()
		}
		c.Seeds = []string{seedAddr}
	})
	fn.Partition([]string{"n1"}, []string{"n2"})
	ms[0].waitPeerEvents(t, "n2", "down:n2")
	ms[1].waitPeerEvents(t, "n1", "down:n1")
	forgotten := func() bool { return len(ms[0].Members()) == 1 && len(ms[1].Members()) == 1 }
	if !waitUntil(waitTimeout, forgotten) {
		t.Fatalf("dead members never forgotten: %+v", ms[0].Members())
	}
	fn.Heal()
	ms[0].waitPeerEvents(t, "n2", "down:n2", "up:n2/20")
	ms[1].waitPeerEvents(t, "n1", "down:n1", "up:n1/10")
	if s := ms[1].Stats(); s.Rejoins == 0 || s.RejoinFailures == 0 {
		t.Fatalf("n2 stats: %+v; want re-joins, some failed during the partition", s)
	}
	if p, _ := fn.Dropped(); p == 0 {
		t.Fatal("the partition dropped no packets")
	}
}

// A member that joins through a low-rated seed introduces itself to the
// highest-rated voter it learns of (the coordinator of a settled bully
// cluster), which then knows it at once instead of after gossip rounds.
// Gossip, probes and periodic push-pull are off here, so nothing else
// could tell n2 about n3.
func TestJoinIntroducesToTopVoter(t *testing.T) {
	checkLeaks(t)
	quiet := func(c *Config) {
		c.Memberlist = func(mc *memberlist.Config) {
			fastTimings(mc)
			mc.GossipInterval, mc.ProbeInterval, mc.PushPullInterval = time.Hour, time.Hour, 0
		}
	}
	c1, c2, c3 := testConfig("n1"), testConfig("n2"), testConfig("n3")
	for _, c := range []*Config{&c1, &c2, &c3} {
		quiet(c)
	}
	c1.Rating, c2.Rating, c3.Rating = 10, 50, 20
	n1 := start(t, c1)
	c2.Seeds = []string{n1.Addr()}
	n2 := start(t, c2)
	n1.waitPeerEvents(t, "n2", "up:n2/50")
	c3.Seeds = []string{n1.Addr()}
	start(t, c3)
	n2.waitPeerEvents(t, "n3", "up:n3/20")
}

// sendBothWays sends a from one member and b from the other, each
// addressed to the other, and checks that each arrives first and intact.
func sendBothWays(t *testing.T, from *member, a core.Message, other *member, b core.Message) {
	t.Helper()
	if err := from.Send(a); err != nil {
		t.Fatal(err)
	}
	if err := other.Send(b); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    *member
		want core.Message
	}{{other, a}, {from, b}} {
		if !waitUntil(waitTimeout, func() bool { return len(c.m.messages()) > 0 }) {
			t.Fatalf("%s received nothing", c.m.LocalID())
		}
		if got := c.m.messages()[0].Message; !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s received %+v, want %+v", c.m.LocalID(), got, c.want)
		}
	}
}
