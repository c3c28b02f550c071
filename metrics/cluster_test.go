package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// testNode is one Elector with its own registry and Recorder.
type testNode struct {
	id     string
	e      *election.Elector
	reg    *prometheus.Registry
	rec    *Recorder
	cancel context.CancelFunc
	runErr chan error
}

// testCluster runs Electors "a", "b", ... (rated 1, 2, ...: the last
// leads) on one in-memory network, each reporting to a Recorder on a
// registry of its own. It works inside a synctest bubble and in real time.
type testCluster struct {
	t     *testing.T
	net   *electiontest.Network
	nodes map[string]*testNode
	ids   []string
}

func newTestCluster(t *testing.T, n int, latency time.Duration, opts func(id string) []Option) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: electiontest.NewNetwork(), nodes: make(map[string]*testNode)}
	c.net.SetLatency(latency)
	for i := range n {
		id := string(rune('a' + i))
		c.ids = append(c.ids, id)
		var o []Option
		if opts != nil {
			o = opts(id)
		}
		c.start(id, int64(i+1), o)
	}
	t.Cleanup(c.stop)
	return c
}

func (c *testCluster) start(id string, rating int64, opts []Option) {
	c.t.Helper()
	tr, err := c.net.Join(election.Identity{Name: id, Rating: rating})
	if err != nil {
		c.t.Fatal(err)
	}
	n := &testNode{id: id, reg: prometheus.NewRegistry(), runErr: make(chan error, 1)}
	if n.rec, err = New(n.reg, opts...); err != nil {
		c.t.Fatal(err)
	}
	if n.e, err = election.New(election.Config{Transport: tr, Recorder: n.rec}); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.runErr <- n.e.Run(ctx) }()
	c.nodes[id] = n
}

// crash kills id: the network loses it and its Run returns.
func (c *testCluster) crash(id string) {
	c.t.Helper()
	n := c.nodes[id]
	c.net.Crash(id)
	if err := <-n.runErr; !errors.Is(err, election.ErrTransportClosed) {
		c.t.Fatalf("%s: Run after crash = %v, want ErrTransportClosed", id, err)
	}
	n.cancel()
	n.rec.Unregister()
	delete(c.nodes, id)
	c.ids = slices.DeleteFunc(c.ids, func(s string) bool { return s == id })
}

func (c *testCluster) stop() {
	for id, n := range c.nodes {
		n.e.Close()
		n.cancel()
		if err := <-n.runErr; err != nil {
			c.t.Errorf("%s: Run = %v after Close", id, err)
		}
		n.rec.Unregister()
	}
	c.nodes = nil
	c.net.Close()
}

// waitAgreed waits until every listed node (default all) reports want as
// coordinator in a term above after, and returns that term.
func (c *testCluster) waitAgreed(within time.Duration, want string, after uint64, ids ...string) uint64 {
	c.t.Helper()
	if len(ids) == 0 {
		ids = c.ids
	}
	var term uint64
	c.eventually(within, func() bool {
		term = 0
		for _, id := range ids {
			l, tm, ok := c.nodes[id].e.Leader()
			if !ok || l != want || tm <= after || term != 0 && tm != term {
				return false
			}
			term = tm
		}
		return true
	})
	return term
}

// eventually polls cond every millisecond until it holds, failing the
// test after within.
func (c *testCluster) eventually(within time.Duration, cond func() bool) {
	c.t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			c.t.Fatalf("condition not met within %v:%s", within, c.describe())
		}
	}
}

func (c *testCluster) describe() string {
	var b strings.Builder
	for _, id := range c.ids {
		st := c.nodes[id].e.Status()
		fmt.Fprintf(&b, "\n  %s: state=%v coordinator=%q term=%v electing=%v",
			id, st.State, st.Coordinator, core.Term(st.Term), st.Electing)
	}
	return b.String()
}
