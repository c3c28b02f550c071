package election_test

import (
	"net"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

// A cluster with a key and a label. Would-be members with the highest
// rating but no key, or the key under another label, each lead only
// themselves: they never appear among the cluster's members, and the
// cluster keeps its coordinator and term. (Another key:
// TestMemberlistWrongKeyCannotJoin.)
func TestMemberlistNoKeyOrOtherLabelCannotInfluence(t *testing.T) {
	// The outsiders have seeds and never reach them: they lead themselves
	// once the start-up window passes.
	c := newRealCluster(t, func(cfg *election.Config) { cfg.ExpectWindow = time.Second })
	c.key, c.label = []byte("0123456789abcdef"), "prod"
	all := c.startN(2)
	_, term := c.await(all, "n2", 0, 15*time.Second)
	for _, in := range []struct {
		name, label string
		key         []byte
	}{{"n8", "prod", nil}, {"n9", "staging", c.key}} {
		c.key, c.label = in.key, in.label
		c.start(in.name, 99, false)
		c.await([]string{in.name}, in.name, 0, 15*time.Second) // alone, it leads itself
	}
	c.await(all, "n2", term-1, time.Second)
	if _, tm, _ := c.nodes["n1"].el.Leader(); tm != term {
		t.Fatalf("n1's term moved from %d to %d", term, tm)
	}
	for _, m := range c.nodes["n1"].mem.Members() {
		if m.Name == "n8" || m.Name == "n9" {
			t.Fatalf("an outsider joined: %+v", m)
		}
	}
}

// Without the key, a forged plaintext COORDINATOR sent straight to a
// member's UDP port never reaches membership: memberlist drops the packet
// before decrypting anything, so no coordelect counter moves and the
// member keeps its coordinator.
func TestMemberlistPlaintextPacketIgnored(t *testing.T) {
	c := newRealCluster(t, nil)
	c.key = []byte("0123456789abcdef")
	all := c.startN(2)
	_, term := c.await(all, "n2", 0, 15*time.Second)
	n1 := c.nodes["n1"]
	before := n1.mem.Stats()
	frame, err := membership.AppendFrame(nil, membership.Header{FromBoot: c.nodes["n2"].mem.BootID(), ToBoot: n1.mem.BootID()},
		core.Message{Type: core.MsgCoordinator, From: "n2", To: "n1", Coordinator: "n2", Term: core.MakeTerm(core.Term(term).Epoch()+5, core.Tag("n2"))})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", n1.mem.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const userMsg = 8 // memberlist's messageType for a user message (net.go)
	for range 10 {
		if _, err := conn.Write(append([]byte{userMsg}, frame...)); err != nil {
			t.Fatal(err)
		}
	}
	// Let heartbeats flow for a while: the forged term must not appear.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		c.await(all, "n2", term-1, time.Second)
		if _, tm, _ := n1.el.Leader(); tm != term {
			t.Fatalf("n1's term moved from %d to %d", term, tm)
		}
	}
	after := n1.mem.Stats()
	if after.Dropped != before.Dropped {
		t.Fatalf("membership saw the forged packets: drops %v -> %v", before.Dropped, after.Dropped)
	}
}
