package election

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// The node's roster gives back its spare room once the view has not
// changed for rosterClipAfter, once, and again after the next change.
func TestRosterClippedOnceViewSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Transport = stub("self")
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.flush()
		up := func(id string) {
			e.handle(&Event{Kind: EventPeerUp, Peer: core.Peer{ID: id, Rating: 1}})
			e.flush()
		}
		for i := range 20 {
			up("m" + strconv.Itoa(i))
		}
		<-time.After(rosterClipAfter - time.Millisecond)
		e.flush()
		if e.clipped {
			t.Fatalf("clipped %v after the last change, before rosterClipAfter", rosterClipAfter-time.Millisecond)
		}
		<-time.After(time.Millisecond)
		e.flush()
		if !e.clipped {
			t.Fatalf("not clipped %v after the last change", rosterClipAfter)
		}
		up("late")
		if e.clipped {
			t.Fatal("still marked clipped after a new member")
		}
		if got := len(e.Status().Members); got != 22 {
			t.Fatalf("Status lists %d members, want 22", got)
		}
		<-time.After(rosterClipAfter)
		e.flush()
		if !e.clipped {
			t.Fatal("not clipped again after the next change had settled")
		}
	})
}
