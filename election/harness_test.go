package election_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// cluster is a set of Electors on one in-memory network, inside a
// synctest bubble.
type cluster struct {
	t       *testing.T
	net     *electiontest.Network
	tune    func(*election.Config)
	members map[string]*member
	specs   map[string]spec
}

// member is one running Elector with what the test observes of it.
type member struct {
	id     string
	e      *election.Elector
	tr     *electiontest.Transport
	cancel context.CancelFunc
	runErr chan error
	cb     *callbackLog
	rec    *countingRecorder
}

func newCluster(t *testing.T, specs []spec, tune func(*election.Config)) *cluster {
	t.Helper()
	c := &cluster{
		t: t, net: electiontest.NewNetwork(), tune: tune,
		members: make(map[string]*member), specs: make(map[string]spec),
	}
	c.net.SetLatency(latency)
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
	tr, err := c.net.Join(election.Identity{Name: s.id, Rating: s.rating, NonVoter: s.nonVoter, Algorithm: s.alg})
	if err != nil {
		c.t.Fatal(err)
	}
	m := &member{id: id, tr: tr, runErr: make(chan error, 1), cb: &callbackLog{}, rec: newCountingRecorder()}
	cfg := election.Config{
		Transport: tr,
		Logger:    hclog.New(&hclog.LoggerOptions{Output: c.t.Output(), Level: hclog.Info}),
		Recorder:  m.rec, Callbacks: m.cb.callbacks(),
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	if m.e, err = election.New(cfg); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.runErr <- m.e.Run(ctx) }()
	c.members[id] = m
	return m
}

// crash kills id's process: the network loses it and its Run ends with
// ErrTransportClosed. Nobody is told until announceDown.
func (c *cluster) crash(id string) {
	c.t.Helper()
	m := c.members[id]
	c.net.Crash(id)
	if err := <-m.runErr; !errors.Is(err, election.ErrTransportClosed) {
		c.t.Fatalf("%s: Run after crash = %v, want ErrTransportClosed", id, err)
	}
	m.cancel()
	delete(c.members, id)
}

// stopAll closes every Elector and checks that Run returned.
func (c *cluster) stopAll() {
	for id, m := range c.members {
		m.e.Close()
		m.cancel()
		if err := <-m.runErr; err != nil {
			c.t.Errorf("%s: Run = %v after Close", id, err)
		}
		delete(c.members, id)
	}
	c.net.Close()
}

// agreed reports the coordinator and term that every listed member
// reports, or "" if they differ, or if the number of members that say they
// lead is not exactly one.
func (c *cluster) agreed(ids ...string) (string, uint64) {
	if len(ids) == 0 {
		ids = c.ids()
	}
	var leader string
	var term uint64
	for i, id := range ids {
		l, tm, ok := c.members[id].e.Leader()
		if !ok || i > 0 && (l != leader || tm != term) {
			return "", 0
		}
		leader, term = l, tm
	}
	if m, ok := c.members[leader]; !ok || !m.e.IsLeader() {
		return "", 0
	}
	return leader, term
}

func (c *cluster) ids() []string {
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	return ids
}

// waitAgreed waits until the listed members (default all) agree on want
// in a term above after, and returns the term and how long it took.
func (c *cluster) waitAgreed(within time.Duration, want string, after uint64, ids ...string) (uint64, time.Duration) {
	c.t.Helper()
	var term uint64
	took := eventually(c.t, within, func() bool {
		var l string
		l, term = c.agreed(ids...)
		return l == want && term > after
	}, func() string { return c.describe() })
	return term, took
}

// describe prints what every member reports, for failure messages.
func (c *cluster) describe() string {
	var b strings.Builder
	for _, id := range c.ids() {
		st := c.members[id].e.Status()
		fmt.Fprintf(&b, "\n  %s: state=%v coordinator=%q term=%v electing=%v",
			id, st.State, st.Coordinator, core.Term(st.Term), st.Electing)
	}
	return b.String()
}

// eventually polls cond every millisecond of bubble time until it holds,
// failing the test after within; it returns how long it took.
func eventually(t *testing.T, within time.Duration, cond func() bool, why func() string) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("condition not met within %v:%s", within, why())
		}
	}
	return time.Since(start)
}

// always checks every millisecond of bubble time, for d, that check
// returns nil.
func always(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	holdEvery(t, time.Millisecond, d, check)
}

// holdEvery checks every period, for d, that check returns nil.
func holdEvery(t *testing.T, period, d time.Duration, check func() error) {
	t.Helper()
	tick := time.NewTicker(period)
	defer tick.Stop()
	end := time.After(d)
	for {
		if err := check(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-end:
			return
		}
	}
}

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
