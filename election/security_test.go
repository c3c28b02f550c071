package election_test

import (
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
)

// A cluster with a key and a label. Would-be members with the highest
// rating but no key, or the key under another label, each lead only
// themselves: they never appear among the cluster's members, and the
// cluster keeps its coordinator and term. (Another key:
// TestMemberlistWrongKeyCannotJoin; a plaintext frame without the key:
// membership's TestPlaintextFrameIgnored.)
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
