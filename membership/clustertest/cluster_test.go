package clustertest

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/membership/membershiptest"
)

// TestMain fails the package if a test leaves goroutines behind
// (memberlist's, the Electors').
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newCluster returns a cluster that its test's end closes, and then fails
// the test if goroutines other than those running at its start are still
// alive after 10 s (memberlist lets probes and connection handlers finish
// after Shutdown).
func newCluster(t *testing.T, net *membershiptest.FaultNetwork) *Cluster {
	ignore := goleak.IgnoreCurrent()
	c := New(net)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
			err := goleak.Find(ignore)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutines left behind: %v", err)
				return
			}
		}
	})
	return c
}

// start starts members n1..nk rated 1..k on c, each joining those before.
func start(t *testing.T, c *Cluster, k int) []string {
	t.Helper()
	var names, seeds []string
	for i := 1; i <= k; i++ {
		mc := membership.DefaultConfig()
		mc.Name, mc.Rating, mc.Profile, mc.Seeds = fmt.Sprintf("n%d", i), int64(i), membership.ProfileLocal, seeds
		m, err := c.Start(mc, election.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		names, seeds = append(names, mc.Name), append(seeds, m.Node.Addr())
	}
	return names
}

// agreeOn waits until the named members agree on want in a term above
// after, and returns the term.
func agreeOn(t *testing.T, c *Cluster, want string, after uint64, names ...string) uint64 {
	t.Helper()
	var term uint64
	electiontest.Eventually(t, 15*time.Second, func() bool {
		l, tm, ok := electiontest.Agree(c.Electors(names...)...)
		term = tm
		return ok && l == want && tm > after
	}, func() string { return electiontest.Describe(c.Electors()...) })
	return term
}

// TestClusterCrashAndLeave: four members over a FaultNetwork agree on
// n4; after n4 leaves gracefully (hand-off) the others agree on n3; after
// n3's crash the two left agree on n2. Close stops them.
func TestClusterCrashAndLeave(t *testing.T) {
	c := newCluster(t, membershiptest.NewFaultNetwork(1, nil))
	names := start(t, c, 4)
	if got := c.Names(); len(got) != 4 || got[3] != "n4" || c.Member("n4").Node.Addr() == "" {
		t.Fatalf("Names() = %v", got)
	}
	term := agreeOn(t, c, "n4", 0, names...)
	if err := c.Leave("n4", time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Member("n4") != nil {
		t.Fatal("n4 is still a member after Leave")
	}
	term = agreeOn(t, c, "n3", term, "n1", "n2", "n3")
	if err := c.Crash("n3"); err != nil {
		t.Fatal(err)
	}
	agreeOn(t, c, "n2", term, "n1", "n2")
}

// TestJoinWithoutElector: a member may run its node alone (the memory
// benchmark's baseline) and get its Elector later.
func TestJoinWithoutElector(t *testing.T) {
	c := newCluster(t, nil)
	mc := membership.DefaultConfig()
	mc.Name, mc.Rating, mc.Profile = "solo", 1, membership.ProfileLocal
	m, err := c.Join(mc)
	if err != nil {
		t.Fatal(err)
	}
	if m.Member != nil || len(c.Electors()) != 0 {
		t.Fatal("an Elector runs before Elect")
	}
	if err := c.Elect(m, election.Config{QuorumSize: 1}); err != nil {
		t.Fatal(err)
	}
	agreeOn(t, c, "solo", 0, "solo")
}
