package metrics

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/electiontest"
)

// testNode is one Elector with its own registry and Recorder.
type testNode struct {
	id  string
	e   *election.Elector
	reg *prometheus.Registry
	rec *Recorder
}

// testCluster runs Electors "a", "b", ... (rated 1, 2, ...: the last
// leads) on one in-memory network (electiontest.Cluster), each reporting
// to a Recorder on a registry of its own. It works inside a synctest
// bubble and in real time.
type testCluster struct {
	t     *testing.T
	ec    *electiontest.Cluster
	net   *electiontest.Network
	nodes map[string]*testNode
	ids   []string
}

func newTestCluster(t *testing.T, n int, latency time.Duration, opts func(id string) []Option) *testCluster {
	t.Helper()
	c := &testCluster{t: t, ec: electiontest.NewCluster(), nodes: make(map[string]*testNode)}
	c.net = c.ec.Net
	c.net.SetLatency(latency)
	c.ec.Config = func(id election.Identity, cfg *election.Config) { cfg.Recorder = c.nodes[id.Name].rec }
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
	n := &testNode{id: id, reg: prometheus.NewRegistry()}
	var err error
	if n.rec, err = New(n.reg, opts...); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = n // c.ec.Config reads it
	m, err := c.ec.Start(election.Identity{Name: id, Rating: rating})
	if err != nil {
		c.t.Fatal(err)
	}
	n.e = m.Elector
}

// crash kills id: the network loses it and its Run returns.
func (c *testCluster) crash(id string) {
	c.t.Helper()
	if err := c.ec.Crash(id); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id].rec.Unregister()
	delete(c.nodes, id)
	c.ids = slices.DeleteFunc(c.ids, func(s string) bool { return s == id })
}

func (c *testCluster) stop() {
	if err := c.ec.Close(); err != nil {
		c.t.Error(err)
	}
	for _, n := range c.nodes {
		n.rec.Unregister()
	}
	c.nodes = nil
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
		var l string
		var ok bool
		l, term, ok = electiontest.Agree(c.ec.Members(ids...)...)
		return ok && l == want && term > after
	})
	return term
}

// eventually polls cond every millisecond until it holds, failing the
// test after within.
func (c *testCluster) eventually(within time.Duration, cond func() bool) {
	c.t.Helper()
	electiontest.Eventually(c.t, within, cond, c.describe)
}

func (c *testCluster) describe() string { return electiontest.Describe(c.ec.Members(c.ids...)...) }
