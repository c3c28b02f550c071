package electiontest

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
)

// TestClusterLifecycle: three members agree on the highest-rated; after
// its crash, and the news of it, the other two agree on the next; Close
// stops the rest cleanly.
func TestClusterLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCluster()
		c.Net.SetLatency(time.Millisecond)
		tuned := 0
		c.Config = func(id election.Identity, cfg *election.Config) { tuned++ }
		for i, name := range []string{"a", "b", "c"} {
			if _, err := c.Start(election.Identity{Name: name, Rating: int64(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Start(election.Identity{Name: "a"}); err == nil {
			t.Fatal("a second member a started")
		}
		if tuned != 3 || !slices.Equal(c.Names(), []string{"a", "b", "c"}) {
			t.Fatalf("Config called %d times, names %v; want 3, [a b c]", tuned, c.Names())
		}
		var term uint64
		Eventually(t, time.Second, func() bool {
			l, tm, ok := Agree(c.Members()...)
			term = tm
			return ok && l == "c"
		}, func() string { return Describe(c.Members()...) })
		if err := c.Crash("c"); err != nil {
			t.Fatal(err)
		}
		if c.Member("c") != nil || len(c.Members()) != 2 {
			t.Fatalf("after the crash: members %v", c.Names())
		}
		c.Net.AnnounceDown("c")
		Eventually(t, time.Second, func() bool {
			l, tm, ok := Agree(c.Members("a", "b")...)
			return ok && l == "b" && tm > term
		}, func() string { return Describe(c.Members()...) })
		b := c.Member("b")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Wait(); err != nil || !b.Elector.Status().Stopped {
			t.Fatalf("b after Close: Run = %v, stopped %v", err, b.Elector.Status().Stopped)
		}
	})
}

// TestMemberStop: Stop ends Run through its context; Wait then returns the
// same result again.
func TestMemberStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewNetwork()
		tr, err := net.Join(election.Identity{Name: "a", Rating: 1})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Run("a", election.Config{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Stop(); err != nil {
			t.Fatalf("Stop = %v", err)
		}
		select {
		case <-m.Done():
		default:
			t.Fatal("Done not closed after Stop")
		}
		if err := m.Wait(); err != nil {
			t.Fatalf("Wait after Stop = %v", err)
		}
		net.Close()
	})
}

// TestAgreeNeedsEveryone: no members, or one without a coordinator, is no
// agreement.
func TestAgreeNeedsEveryone(t *testing.T) {
	if _, _, ok := Agree(); ok {
		t.Fatal("Agree() of no members is ok")
	}
	synctest.Test(t, func(t *testing.T) {
		net := NewNetwork()
		tr, err := net.Join(election.Identity{Name: "a", Rating: 1})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Run("a", election.Config{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := Agree(m); ok { // before its start-up delay ends
			t.Fatal("a member that has not elected anyone agrees")
		}
		net.Crash("a")
		if err := m.Wait(); !errors.Is(err, election.ErrTransportClosed) {
			t.Fatalf("Run after crash = %v", err)
		}
		m.Halt()
	})
}
