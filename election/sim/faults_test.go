package sim

import (
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Memberlist's dead-node news reaches every member, not only those with a
// working link to the dead node: a node cut off from the crashing node
// must not hold it alive for ever.
func TestCrashReachesViewsAcrossACut(t *testing.T) {
	s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true, ViewDelayMs: 20, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("5")
	// Cut 1 off from 3 both ways without touching the views, then crash 3.
	if err := s.BlockQuiet("3", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.BlockQuiet("1", "3"); err != nil {
		t.Fatal(err)
	}
	if !s.Node("1").Alive("3") {
		t.Fatal("a quiet block changed 1's view of 3")
	}
	if err := s.Crash("3"); err != nil {
		t.Fatal(err)
	}
	s.RunFor(30)
	if s.Node("1").Alive("3") {
		t.Error("node 1, cut off from 3, still holds 3 alive after 3 crashed and the view delay passed")
	}
}

// A one-way block shows in both nodes' views (memberlist's probe needs
// the round trip) and restarts the checker's partition clock: the lease
// may outlive the block by its length.
func TestBlockUpdatesViewsAndPartitionClock(t *testing.T) {
	s, err := New(Config{Members: members(5), Mode: core.View, HeartbeatDetector: true, ViewDelayMs: 10, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Bootstrap("5")
	s.RunFor(100)
	if err := s.Block("5", "1"); err != nil {
		t.Fatal(err)
	}
	if s.Checker().splitAt != 100 {
		t.Errorf("partition clock at %d after a block at 100", s.Checker().splitAt)
	}
	s.RunFor(20)
	if s.Node("1").Alive("5") || s.Node("5").Alive("1") {
		t.Errorf("views after block 5 -> 1: 1 holds 5 alive %v, 5 holds 1 alive %v; want both dead",
			s.Node("1").Alive("5"), s.Node("5").Alive("1"))
	}
	if !s.Node("2").Alive("5") {
		t.Error("a bystander's view changed")
	}
}
