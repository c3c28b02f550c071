package election_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
)

// TestMain checks for goroutines leaked by tests that run outside a
// synctest bubble (the bubble itself fails a test that leaks).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Timings of the test clusters: the defaults, with a 2ms one-way latency.
const (
	latency   = 2 * time.Millisecond
	heartbeat = election.DefaultHeartbeatInterval
	detection = heartbeat * election.DefaultHeartbeatMisses // K*H
)

// spec describes one member of a test cluster.
type spec struct {
	id       string
	rating   int64
	nonVoter bool
	alg      core.Algorithm
}

// running returns specs with every member running alg.
func running(alg core.Algorithm, specs []spec) []spec {
	for i := range specs {
		specs[i].alg = alg
	}
	return specs
}

// voters returns n voters "a", "b", ... rated 1, 2, ...: the last leads.
func voters(n int) []spec {
	out := make([]spec, n)
	for i := range out {
		out[i] = spec{id: string(rune('a' + i)), rating: int64(i + 1)}
	}
	return out
}

// cluster is a set of Electors on one in-memory network
// (electiontest.Cluster), inside a synctest bubble, with what the tests
// observe of each: its callbacks and what it recorded.
type cluster struct {
	t       *testing.T
	ec      *electiontest.Cluster
	net     *electiontest.Network
	members map[string]*member
	specs   map[string]spec
}

// member is one running Elector with what the test observes of it.
type member struct {
	*electiontest.Member
	id  string
	e   *election.Elector
	cb  *callbackLog
	rec *countingRecorder
}

func newCluster(t *testing.T, specs []spec, tune func(*election.Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, ec: electiontest.NewCluster(), members: make(map[string]*member), specs: make(map[string]spec)}
	c.net = c.ec.Net
	c.net.SetLatency(latency)
	c.ec.Config = func(id election.Identity, cfg *election.Config) {
		m := c.members[id.Name]
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: c.t.Output(), Level: hclog.Info})
		cfg.Recorder, cfg.Callbacks = m.rec, m.cb.callbacks()
		if tune != nil {
			tune(cfg)
		}
	}
	for _, s := range specs {
		c.specs[s.id] = s
		c.start(s.id)
	}
	t.Cleanup(c.stopAll)
	return c
}

// start joins the network as id and runs a new Elector for it.
func (c *cluster) start(id string) *member {
	c.t.Helper()
	s := c.specs[id]
	m := &member{id: id, cb: &callbackLog{}, rec: newCountingRecorder()}
	c.members[id] = m // c.ec.Config reads it
	em, err := c.ec.Start(election.Identity{Name: s.id, Rating: s.rating, NonVoter: s.nonVoter, Algorithm: s.alg})
	if err != nil {
		delete(c.members, id)
		c.t.Fatal(err)
	}
	m.Member, m.e = em, em.Elector
	return m
}

// crash kills id's process: the network loses it and its Run ends with
// ErrTransportClosed. Nobody is told until announceDown.
func (c *cluster) crash(id string) {
	c.t.Helper()
	if err := c.ec.Crash(id); err != nil {
		c.t.Fatal(err)
	}
	delete(c.members, id)
}

// stopAll closes every Elector and checks that Run returned.
func (c *cluster) stopAll() {
	if err := c.ec.Close(); err != nil {
		c.t.Error(err)
	}
	clear(c.members)
}

// agreed reports the coordinator and term that every listed member
// reports, or "" if they differ, or if the number of members that say they
// lead is not exactly one.
func (c *cluster) agreed(ids ...string) (string, uint64) {
	if len(ids) == 0 {
		ids = c.ids()
	}
	leader, term, ok := electiontest.Agree(c.ec.Members(ids...)...)
	if m, in := c.members[leader]; !ok || !in || !m.e.IsLeader() {
		return "", 0
	}
	return leader, term
}

func (c *cluster) ids() []string { return slices.Collect(maps.Keys(c.members)) }

// waitAgreed waits until the listed members (default all) agree on want
// in a term above after, and returns the term and how long it took.
func (c *cluster) waitAgreed(within time.Duration, want string, after uint64, ids ...string) (uint64, time.Duration) {
	c.t.Helper()
	var term uint64
	took := electiontest.Eventually(c.t, within, func() bool {
		var l string
		l, term = c.agreed(ids...)
		return l == want && term > after
	}, c.describe)
	return term, took
}

// describe prints what every member reports, for failure messages.
func (c *cluster) describe() string { return electiontest.Describe(c.ec.Members(c.ids()...)...) }

// callbackLog records the callbacks of one Elector.
type callbackLog struct {
	mu     sync.Mutex
	events []string
	ctxs   []context.Context
	// block makes OnStartedLeading wait for its context, as a leader's
	// work loop would.
	block bool
}

func (l *callbackLog) callbacks() election.Callbacks {
	return election.Callbacks{
		OnStartedLeading: func(ctx context.Context, term uint64) {
			l.add("started "+core.Term(term).String(), ctx)
			if l.block {
				<-ctx.Done()
			}
		},
		OnStoppedLeading: func(uint64) { l.add("stopped", nil) },
		OnNewLeader:      func(x election.Leadership) { l.add("leader "+x.String(), nil) },
	}
}

func (l *callbackLog) add(ev string, ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	if ctx != nil {
		l.ctxs = append(l.ctxs, ctx)
	}
}

func (l *callbackLog) snapshot() ([]string, []context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...), append([]context.Context(nil), l.ctxs...)
}
