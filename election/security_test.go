package election_test

import (
	"errors"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

// A cluster with a key and a label. A would-be member with no key cannot
// start: its seeds' first join fails with a *membership.KeyMismatchError.
// One with the key under another label cannot join (the seeds drop its
// streams) and never leads: it holds its election for want of the voters
// it expects. Neither appears among the cluster's members, and the
// cluster keeps its coordinator and term. (Another key:
// TestMemberlistWrongKeyCannotJoin; a plaintext frame without the key:
// membership's TestPlaintextFrameIgnored.)
func TestMemberlistNoKeyOrOtherLabelCannotInfluence(t *testing.T) {
	c := newRealCluster(t, func(cfg *election.Config) { cfg.ExpectWindow = time.Second })
	c.key, c.label = []byte("0123456789abcdef"), "prod"
	all := c.startN(2)
	_, term := c.await(all, "n2", 0, 15*time.Second)
	key := c.key
	c.key = nil
	var km *membership.KeyMismatchError
	if _, err := c.tryStart("n8", 99, false); !errors.As(err, &km) {
		t.Fatalf("starting a member without the key: %v, want a *membership.KeyMismatchError", err)
	}
	c.key, c.label = key, "staging"
	n9 := c.start("n9", 99, false)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); <-tick.C {
		if n9.el.IsLeader() {
			t.Fatal("a member under another label leads")
		}
	}
	if h := n9.el.Status().Hold; h.Reason != core.HoldExpect {
		t.Errorf("n9: Status().Hold = %+v, want expect", h)
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
