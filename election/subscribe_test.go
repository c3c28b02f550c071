package election_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
)

// TestSubscriptionClose: closing one subscription closes its channel at
// once and leaves the others (and Observe channels) delivering; Close is
// idempotent, also after Run has returned; no goroutine is left (synctest
// fails the test on a leaked one).
func TestSubscriptionClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := electiontest.NewNetwork()
		var electors []*election.Elector
		for i, id := range []string{"a", "b"} {
			e, err := election.New(election.Config{Transport: net.MustJoin(election.Identity{Name: id, Rating: int64(i)})})
			if err != nil {
				t.Fatal(err)
			}
			electors = append(electors, e)
		}
		a := electors[0]
		stopped, kept, plain := a.Subscribe(), a.Subscribe(), a.Observe()
		stopped.Close()
		if v, ok := <-stopped.C; ok {
			t.Fatalf("closed subscription delivered %v", v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, len(electors))
		for _, e := range electors {
			go func() { done <- e.Run(ctx) }()
		}
		for _, ch := range []<-chan election.Leadership{kept.C, plain} {
			for l := range ch {
				if l.Coordinator == "b" {
					break
				}
			}
		}
		stopped.Close() // again: nothing happens
		kept.Close()
		if _, ok := <-kept.C; ok {
			t.Error("subscription open after Close")
		}
		cancel()
		for range electors {
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		}
		for range plain {
		} // closed by Run
		late := a.Subscribe()
		if l, ok := <-late.C; !ok || l.Known() {
			t.Errorf("subscription after Run: %v, %v; want the final Leadership{}", l, ok)
		}
		late.Close()
		late.Close()
	})
}

// TestSubscriberSeesStatus: a subscriber that wakes on a Leadership finds
// Status, IsLeader and the fencing check agreeing with it: the snapshot and
// the lease are in place before the Leadership is published.
func TestSubscriberSeesStatus(t *testing.T) {
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			e, err := election.New(election.Config{Transport: electiontest.NewNetwork().MustJoin(election.Identity{Name: "1"})})
			if err != nil {
				t.Fatal(err)
			}
			sub := e.Subscribe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- e.Run(ctx) }()
			for l := range sub.C {
				if !l.IsSelf {
					continue
				}
				if st := e.Status(); st.Coordinator != "1" || st.Term != l.Term {
					t.Errorf("subscriber woke on %v; Status says %q at term %d", l, st.Coordinator, st.Term)
				}
				if !e.IsLeader() || e.Check(l.Term) != nil {
					t.Errorf("subscriber woke on %v; IsLeader %v, Check %v", l, e.IsLeader(), e.Check(l.Term))
				}
				break
			}
			sub.Close()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
}
