package election_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/testport"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/membership/clustertest"
	"github.com/coordelect/coordelect/membership/membershiptest"
)

// These tests run the Elector over real memberlist nodes on 127.0.0.1 (a
// FaultNetwork wraps memberlist's own transport, for partitions). Real
// networks have real clocks, so they wait by polling with a deadline.

// realNode is one member of a realCluster.
type realNode struct {
	name   string
	rating int64
	mem    *membership.Node
	el     *election.Elector
}

// realCluster is clustertest.Cluster over a FaultNetwork, with
// what these tests vary from member to member.
type realCluster struct {
	t     *testing.T
	ec    *clustertest.Cluster
	net   *membershiptest.FaultNetwork
	nodes map[string]*realNode
	seeds []string
	key   []byte
	label string
	alg   core.Algorithm // every member's (Identity.Algorithm)
	mut   func(*election.Config)
	memb  func(*membership.Config) // tunes each node's membership, when set
	log   hclog.Logger             // every member's parent logger (testLog)
}

// testLog is the members' parent logger: nil (nothing logged), or, when
// COORDELECT_TEST_LOG names a file, a debug logger that appends to it,
// each line stamped with the test's name and the time to the microsecond
// (Ack round trips can be read off such a log).
func testLog(t *testing.T) hclog.Logger {
	path := os.Getenv("COORDELECT_TEST_LOG")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("COORDELECT_TEST_LOG: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: f,
		TimeFormat: "15:04:05.000000"})
}

func newRealCluster(t *testing.T, mut func(*election.Config)) *realCluster {
	net := membershiptest.NewFaultNetwork(1, nil)
	c := &realCluster{t: t, ec: clustertest.New(net), net: net, nodes: map[string]*realNode{}, mut: mut}
	c.log = testLog(t)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// A starved process (64 memberlists in one) ends its probes late.
		grace := max(5*time.Second, time.Duration(len(c.nodes))*200*time.Millisecond)
		_ = c.ec.Close()
		clear(c.nodes)
		// memberlist's Shutdown does not wait for probes in flight; give them
		// a bounded while to end, then report any goroutine left behind.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(grace); ; <-tick.C {
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

func (c *realCluster) start(name string, rating int64, nonVoter bool) *realNode {
	return c.startOn(name, rating, nonVoter, 0)
}

func (c *realCluster) startOn(name string, rating int64, nonVoter bool, port int) *realNode {
	c.t.Helper()
	n, err := c.tryStartOn(name, rating, nonVoter, port)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// tryStart starts a member and returns the error that starting it met.
func (c *realCluster) tryStart(name string, rating int64, nonVoter bool) (*realNode, error) {
	return c.tryStartOn(name, rating, nonVoter, 0)
}

func (c *realCluster) tryStartOn(name string, rating int64, nonVoter bool, port int) (*realNode, error) {
	mcfg := localMembership(name, rating, c.alg, c.seeds)
	mcfg.NonVoter, mcfg.BindPort, mcfg.SecretKey, mcfg.Label = nonVoter, port, c.key, c.label
	if c.memb != nil {
		c.memb(&mcfg)
	}
	cfg := election.DefaultConfig()
	if c.log != nil {
		cfg.Logger = c.log
		mcfg.Logger = c.log.Named(name)
	}
	if c.mut != nil {
		c.mut(&cfg)
	}
	m, err := c.ec.Start(mcfg, cfg)
	if err != nil {
		return nil, err
	}
	n := &realNode{name: name, rating: rating, mem: m.Node, el: m.Elector}
	c.nodes[name] = n
	c.seeds = append(c.seeds, m.Node.Addr())
	return n, nil
}

// localMembership is the membership configuration of these tests' members:
// memberlist's local profile on 127.0.0.1, rejoining every second.
func localMembership(name string, rating int64, alg core.Algorithm, seeds []string) membership.Config {
	mcfg := membership.DefaultConfig()
	mcfg.Name, mcfg.Rating, mcfg.Algorithm = name, rating, alg
	mcfg.BindAddr, mcfg.Profile = "127.0.0.1", membership.ProfileLocal
	mcfg.Seeds, mcfg.RejoinInterval = seeds, time.Second
	return mcfg
}

// stop ends a node: gracefully (cancel Run: hand-off, then leave) or as a
// crash (no hand-off, no leave: memberlist shut down under the others).
func (c *realCluster) stop(n *realNode, graceful bool) {
	if graceful {
		_ = c.ec.Leave(n.name, time.Second)
	} else {
		_ = c.ec.Crash(n.name)
	}
	delete(c.nodes, n.name)
}

// await polls until every listed node reports coordinator want (with a
// term above minTerm; want "" means: none reports a coordinator) and
// returns how long that took.
func (c *realCluster) await(names []string, want string, minTerm uint64, within time.Duration) (time.Duration, uint64) {
	c.t.Helper()
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	report := time.NewTicker(10 * time.Second) // a large cluster says how it is doing
	defer report.Stop()
	for {
		term, ok := c.agree(names, want, minTerm)
		if ok {
			return time.Since(start), term
		}
		select {
		case <-report.C:
			if len(names) > 20 {
				c.t.Logf("after %v: %s", time.Since(start).Round(time.Second), c.summary(names))
			}
		case <-tick.C:
		case <-deadline:
			c.t.Fatalf("after %v: %s do not agree on %q above term %d: %s", within, names, want, minTerm, c.describe(names))
		}
	}
}

func (c *realCluster) agree(names []string, want string, minTerm uint64) (uint64, bool) {
	var term uint64
	for i, name := range names {
		id, tm, ok := c.nodes[name].el.Leader()
		switch {
		case want == "" && ok:
			return 0, false
		case want == "":
			continue
		case !ok || id != want || tm <= minTerm || (i > 0 && tm != term):
			return 0, false
		}
		term = tm
	}
	return term, true
}

func (c *realCluster) describe(names []string) string {
	if len(names) > 20 {
		return c.summary(names)
	}
	out := ""
	for _, name := range names {
		nd := c.nodes[name]
		id, tm, ok := nd.el.Leader()
		out += fmt.Sprintf("%s->%s/%d/%v ", name, id, tm, ok)
	}
	// What each node saw, for a failure's diagnosis: its state, the members
	// memberlist admitted, and the frames membership dropped (by reason).
	for _, name := range names {
		nd := c.nodes[name]
		st, ms := nd.el.Status(), nd.mem.Stats()
		out += fmt.Sprintf("\n  %s: state %v term %d electing %v startup %+v members %d dropped %v refused tag/meta/name/incompat %d/%d/%d/%d rejoins %d",
			name, st.State, st.Term, st.Electing, st.Startup, len(nd.mem.Members()), ms.Dropped,
			ms.RefusedTagCollision, ms.RefusedBadMeta, ms.RefusedDuplicateName, ms.RefusedIncompatible, ms.Rejoins)
	}
	return out
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

func (c *realCluster) startN(n int) []string {
	for i := 1; i <= n; i++ {
		c.start(fmt.Sprintf("n%d", i), int64(i), false)
	}
	return names("n", 1, n)
}

func TestMemberlistCrashFailover(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := newRealCluster(t, nil)
			all := c.startN(n)
			top := fmt.Sprintf("n%d", n)
			_, term := c.await(all, top, 0, 15*time.Second)
			c.stop(c.nodes[top], false)
			took, _ := c.await(all[:n-1], fmt.Sprintf("n%d", n-1), term, 10*time.Second)
			t.Logf("n=%d: crash failover: every survivor agreed on n%d %v after the crash", n, n-1, took)
		})
	}
}

func TestMemberlistResignAndCancel(t *testing.T) {
	c := newRealCluster(t, nil)
	all := c.startN(4)
	_, term := c.await(all, "n4", 0, 15*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.nodes["n4"].el.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	_, term = c.await(all, "n3", term, 5*time.Second)
	t.Logf("resign: every node agreed on n3 %v after Resign was called", time.Since(start))
	start = time.Now()
	c.stop(c.nodes["n3"], true) // cancelling Run hands off (to n4, next by rating), then leaves
	c.await([]string{"n1", "n2", "n4"}, "n4", term, 5*time.Second)
	t.Logf("Run ctx cancelled: hand-off to n4 agreed %v later", time.Since(start))
}

func TestMemberlistRestartDisplaces(t *testing.T) {
	c := newRealCluster(t, nil)
	port := testport.Free(t)
	c.start("n1", 1, false)
	c.start("n2", 2, false)
	c.startOn("n3", 3, false, port)
	all := names("n", 1, 3)
	_, term := c.await(all, "n3", 0, 15*time.Second)
	c.stop(c.nodes["n3"], false)
	_, term = c.await(all[:2], "n2", term, 10*time.Second)
	// Same name and address, new boot ID. (memberlist lets a new address
	// reclaim a dead member's name only after DeadNodeReclaimTime.)
	c.startOn("n3", 3, false, port)
	took, _ := c.await(all, "n3", term, 15*time.Second)
	t.Logf("restart displacement: n3 back in charge %v after its restart", took)
}

func TestMemberlistRatingAndNonVoter(t *testing.T) {
	c := newRealCluster(t, nil)
	c.start("n1", 1, false)
	c.start("n2", 2, false)
	c.start("n9", 9, true) // rates highest but never stands
	all := []string{"n1", "n2", "n9"}
	_, term := c.await(all, "n2", 0, 15*time.Second)
	if err := c.nodes["n1"].el.SetRating(5); err != nil {
		t.Fatal(err)
	}
	c.await(all, "n1", term, 10*time.Second)
}

func TestMemberlistPartition(t *testing.T) {
	t.Run("without quorum guard", func(t *testing.T) {
		c := newRealCluster(t, nil)
		all := c.startN(5)
		_, term := c.await(all, "n5", 0, 15*time.Second)
		c.net.Partition(names("n", 1, 2), names("n", 3, 5))
		_, minority := c.await(names("n", 1, 2), "n2", term, 10*time.Second)
		c.await(names("n", 3, 5), "n5", term-1, time.Second)
		c.net.Heal()
		took, healed := c.await(all, "n5", term, 20*time.Second)
		if healed <= minority {
			t.Fatalf("after heal n5 leads in term %d, not above the minority's %d", healed, minority)
		}
		t.Logf("partition healed: one coordinator in a higher term %v after the heal", took)
	})
	t.Run("with quorum guard", func(t *testing.T) {
		c := newRealCluster(t, func(cfg *election.Config) { cfg.QuorumSize = 5 })
		all := c.startN(5)
		_, term := c.await(all, "n5", 0, 15*time.Second)
		c.net.Partition(names("n", 1, 2), names("n", 3, 5))
		c.await(names("n", 1, 2), "", 0, 10*time.Second)
		// The minority never reports a coordinator while cut off.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if _, ok := c.agree(names("n", 1, 2), "", 0); !ok {
				t.Fatalf("a minority node reports a coordinator: %s", c.describe(names("n", 1, 2)))
			}
			c.await(names("n", 3, 5), "n5", term-1, time.Second)
		}
		c.net.Heal()
		c.await(all, "n5", term-1, 20*time.Second)
	})
}

// A would-be member with another cluster's key cannot join and never
// leads: its seeds' first join fails with a *membership.KeyMismatchError
// naming Config.SecretKey, which is what starting it returns, and the
// cluster keeps its coordinator and term.
func TestMemberlistWrongKeyCannotJoin(t *testing.T) {
	c := newRealCluster(t, func(cfg *election.Config) { cfg.ExpectWindow = time.Second })
	c.key = []byte("0123456789abcdef")
	all := c.startN(2)
	_, term := c.await(all, "n2", 0, 15*time.Second)
	c.key = []byte("fedcba9876543210") // another cluster's key, highest rating
	_, err := c.tryStart("n9", 99, false)
	var km *membership.KeyMismatchError
	if !errors.As(err, &km) || !strings.Contains(err.Error(), "Config.SecretKey") {
		t.Fatalf("starting a member with another key: %v, want a *membership.KeyMismatchError naming Config.SecretKey", err)
	}
	c.await(all, "n2", term-1, time.Second)
	if _, tm, _ := c.nodes["n1"].el.Leader(); tm != term {
		t.Fatalf("n1's term moved from %d to %d", term, tm)
	}
	for _, m := range c.nodes["n1"].mem.Members() {
		if m.Name == "n9" {
			t.Fatalf("a node with the wrong key joined: %+v", m)
		}
	}
}

// A member whose seeds are all dead never leads on its own, however long
// past the start-up window (here 5 windows): it holds, and its Status says
// that it waits for the voters it expects.
func TestMemberlistDeadSeedsNeverLead(t *testing.T) {
	c := newRealCluster(t, func(cfg *election.Config) { cfg.ExpectWindow = time.Second })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.seeds = []string{dead.Addr().String()}
	_ = dead.Close() // nobody listens there any more
	n := c.start("n1", 1, false)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); <-tick.C {
		if n.el.IsLeader() {
			t.Fatalf("a member that never reached a seed leads: %+v", n.el.Status())
		}
	}
	h := n.el.Status().Hold
	if h.Reason != core.HoldExpect || h.Voters != 1 || h.Need != 2 {
		t.Fatalf("Status().Hold = %+v, want expect, 1 of 2 voters", h)
	}
}
