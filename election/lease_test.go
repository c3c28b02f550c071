package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// validLeaders lists the members whose Check succeeds for the term they
// report leading in, at this instant.
func validLeaders(c *cluster) []string {
	var out []string
	for id, m := range c.members {
		if l, term, ok := m.e.Leader(); ok && l == id && m.e.Check(term) == nil {
			out = append(out, fmt.Sprintf("%s@%s", id, core.Term(term)))
		}
	}
	return out
}

// watchOverlap checks every millisecond of bubble time, until stop is
// closed, that at most one member's leadership is valid.
func watchOverlap(t *testing.T, c *cluster, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := validLeaders(c); len(v) > 1 {
				t.Errorf("two valid leaderships at once: %v%s", v, c.describe())
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	return &wg
}

// TestLeaseNoOverlap: with the quorum guard, at no millisecond do two
// members hold a valid leadership (Check), through a partition of the
// leader, its heal (the leader takes the role back by preemption), a
// resign and a rating raise.
func TestLeaseNoOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(5), withQuorum(5))
		term, _ := c.waitAgreed(guardedStart, "e", 0)
		stop := make(chan struct{})
		wg := watchOverlap(t, c, stop)

		c.net.Partition([]string{"e"}, []string{"a", "b", "c", "d"})
		term, _ = c.waitAgreed(2*time.Second, "d", term, "a", "b", "c", "d")
		c.net.Heal()
		term, _ = c.waitAgreed(2*time.Second, "e", term)
		if err := c.members["e"].e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		term, _ = c.waitAgreed(2*time.Second, "d", term)
		if err := c.members["b"].e.SetRating(100); err != nil {
			t.Fatal(err)
		}
		c.waitAgreed(2*time.Second, "b", term)
		close(stop)
		wg.Wait()
	})
}

// TestLeaseStalledLoop: a leader whose loop stalls (a GC pause, a starved
// or stopped process) loses its leadership by the clock: Check fails at
// the lease end although its loop has not run since, and the others elect
// a successor only after that instant.
func TestLeaseStalledLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(5), withQuorum(5))
		term, _ := c.waitAgreed(guardedStart, "e", 0)
		e := c.members["e"]
		deadline, ok := e.e.LeaseDeadline(term)
		if !ok {
			t.Fatal("no lease deadline for the leader")
		}
		stop := make(chan struct{})
		wg := watchOverlap(t, c, stop)

		gate := make(chan struct{})
		var once sync.Once
		open := func() { once.Do(func() { e.rec.gate.Store(nil); close(gate) }) }
		t.Cleanup(open)         // before the cluster's: Close waits for the loop
		e.rec.gate.Store(&gate) // the leader's loop blocks in its next metrics call
		stalled := time.Now()
		electiontest.Eventually(t, time.Second, func() bool { return e.e.Check(term) != nil }, c.describe)
		if expired := time.Since(stalled); expired > 2*lease {
			t.Errorf("Check still passed %v into the stall", expired)
		}
		if err := e.e.Check(term); !errors.Is(err, election.ErrLeaseExpired) {
			t.Errorf("Check after the lease = %v, want ErrLeaseExpired", err)
		}
		if time.Now().Before(deadline) {
			t.Errorf("lease ended before the deadline it published (%v)", deadline)
		}
		c.waitAgreed(2*time.Second, "d", term, "a", "b", "c", "d")
		open()
		c.waitAgreed(2*time.Second, "e", term)
		close(stop)
		wg.Wait()
	})
}

// TestHandoffWaitsForLeaderWork: a leader that gives the role up (resign,
// or a preemption by a member raised above it) has its context cancelled
// at once, and its successor starts leading only after the old leader's
// OnStartedLeading has returned.
func TestHandoffWaitsForLeaderWork(t *testing.T) {
	for _, how := range []string{"resign", "preempt", "transfer"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var log []string
				note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
				c := newCluster(t, voters(3), func(cfg *election.Config) {
					id := cfg.Transport.Identity().Name
					cfg.Callbacks.OnStartedLeading = func(ctx context.Context, term uint64) {
						note("start " + id)
						<-ctx.Done()
						<-time.After(30 * time.Millisecond) // the work takes a while to stop
						note("end " + id)
					}
				})
				term, _ := c.waitAgreed(time.Second, "c", 0)
				var err error
				want := "b"
				switch how {
				case "resign":
					err = c.members["c"].e.Resign(context.Background())
				case "preempt":
					want = "a"
					err = c.members["a"].e.SetRating(10)
				case "transfer":
					want = "a"
					err = c.members["c"].e.TransferTo(context.Background(), "a")
				}
				if err != nil {
					t.Fatal(err)
				}
				c.waitAgreed(2*time.Second, want, term)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				wantLog := []string{"start c", "end c", "start " + want}
				if fmt.Sprint(log) != fmt.Sprint(wantLog) {
					t.Errorf("callbacks %q, want %q", log, wantLog)
				}
			})
		})
	}
}

// TestTransferToRefuses: unknown members, non-voters and followers.
func TestTransferToRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		specs := append(voters(2), spec{id: "z", rating: 9, nonVoter: true})
		c := newCluster(t, specs, nil)
		c.waitAgreed(time.Second, "b", 0)
		b := c.members["b"].e
		for _, id := range []string{"nobody", "z", "b"} {
			if err := b.TransferTo(context.Background(), id); err == nil {
				t.Errorf("TransferTo(%q) = nil, want an error", id)
			}
		}
		if err := c.members["a"].e.TransferTo(context.Background(), "b"); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("TransferTo on a follower = %v, want ErrNotLeader", err)
		}
	})
}

// TestClaimGatesLeadership: OnStartedLeading runs only after Claim has
// succeeded (it is retried), so a fence advanced by Claim refuses the
// writes of every older term before the new leader writes anything.
func TestClaimGatesLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		fence, attempts := uint64(0), 0
		var writes []string
		write := func(id string, term uint64) {
			mu.Lock()
			defer mu.Unlock()
			if term < fence {
				writes = append(writes, "refused "+id)
				return
			}
			writes = append(writes, "ok "+id)
		}
		c := newCluster(t, voters(3), func(cfg *election.Config) {
			id := cfg.Transport.Identity().Name
			cfg.Callbacks.Claim = func(ctx context.Context, term uint64) error {
				mu.Lock()
				defer mu.Unlock()
				if attempts++; attempts%3 != 0 {
					return errors.New("store unavailable")
				}
				fence = max(fence, term)
				return nil
			}
			cfg.Callbacks.OnStartedLeading = func(ctx context.Context, term uint64) {
				write(id, term)
				<-ctx.Done()
				write(id, term) // a late write of a deposed leader
			}
		})
		term, _ := c.waitAgreed(time.Second, "c", 0)
		electiontest.Eventually(t, time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(writes) == 1 }, c.describe)
		if err := c.members["c"].e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.waitAgreed(2*time.Second, "b", term)
		electiontest.Eventually(t, time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(writes) == 3 }, c.describe)
		mu.Lock()
		defer mu.Unlock()
		if want := "[ok c ok c ok b]"; fmt.Sprint(writes) != want && fmt.Sprint(writes) != "[ok c refused c ok b]" {
			t.Errorf("writes %v, want %s (c's late write before b claims) or c's late write refused", writes, want)
		}
		if attempts < 6 {
			t.Errorf("%d Claim attempts, want retries (every third succeeds)", attempts)
		}
	})
}

// TestVerifyLeader: a leader with its majority confirms at once; one cut
// off from it does not.
func TestVerifyLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, voters(3), withQuorum(3))
		c.waitAgreed(guardedStart, "c", 0)
		leader := c.members["c"].e
		start := time.Now()
		if err := leader.VerifyLeader(context.Background()); err != nil {
			t.Fatalf("VerifyLeader = %v", err)
		}
		if d := time.Since(start); d > 4*latency {
			t.Errorf("VerifyLeader took %v, want one round trip", d)
		}
		if err := c.members["a"].e.VerifyLeader(context.Background()); !errors.Is(err, election.ErrNotLeader) {
			t.Errorf("VerifyLeader on a follower = %v, want ErrNotLeader", err)
		}
		c.net.Partition([]string{"c"}, []string{"a", "b"})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := leader.VerifyLeader(ctx); err == nil {
			t.Error("VerifyLeader of a cut-off leader = nil")
		}
	})
}

// TestCallbacksOncePerTerm: OnNewLeader hears each (coordinator, term)
// once, however often a follower loses and finds it again; OnStoppedLeading
// gets the term that ended.
func TestCallbacksOncePerTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		var stopped []uint64
		c := newCluster(t, voters(3), func(cfg *election.Config) {
			id := cfg.Transport.Identity().Name
			cfg.Callbacks.OnNewLeader = func(l election.Leadership) {
				mu.Lock()
				seen[id+" "+l.String()]++
				mu.Unlock()
			}
			cfg.Callbacks.OnStoppedLeading = func(term uint64) {
				mu.Lock()
				stopped = append(stopped, term)
				mu.Unlock()
			}
		})
		term, _ := c.waitAgreed(time.Second, "c", 0)
		// a loses c's heartbeats for a while, then hears them again.
		c.net.SetDrop(func(m core.Message) bool { return m.To == "a" && m.Type == core.MsgHeartbeat })
		<-time.After(2 * detection)
		c.net.SetDrop(nil)
		c.waitAgreed(2*time.Second, "c", 0)
		if err := c.members["c"].e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.waitAgreed(2*time.Second, "b", term)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for k, n := range seen {
			if n != 1 {
				t.Errorf("OnNewLeader %s called %d times", k, n)
			}
		}
		if len(stopped) != 1 || stopped[0] != term {
			t.Errorf("OnStoppedLeading terms %v, want [%v]", stopped, term)
		}
	})
}
