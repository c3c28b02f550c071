package membership

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"go.uber.org/goleak"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait on the real network; generous for -race
// on two cores, while the tuned timings below make the usual case fast.
const waitTimeout = 10 * time.Second

// fastTimings tightens the "local" profile: a crash is declared in well
// under a second and the dead are forgotten after two.
func fastTimings(mc *memberlist.Config) {
	mc.ProbeInterval = 100 * time.Millisecond
	mc.ProbeTimeout = 80 * time.Millisecond
	mc.SuspicionMult = 2
	mc.GossipInterval = 20 * time.Millisecond
	mc.PushPullInterval = 500 * time.Millisecond
	mc.TCPTimeout = 500 * time.Millisecond
	mc.GossipToTheDeadTime = 2 * time.Second
}

// testConfig is a loopback config with fast timings; set
// MEMBERSHIP_TEST_LOG=debug to see the nodes' logs.
func testConfig(name string) Config {
	c := DefaultConfig()
	c.Name = name
	c.BindAddr, c.BindPort = "127.0.0.1", 0
	c.Profile = ProfileLocal
	c.RejoinInterval = NoRejoin
	c.ReorderTimeout = time.Second
	c.Memberlist = fastTimings
	if lvl := os.Getenv("MEMBERSHIP_TEST_LOG"); lvl != "" {
		c.Logger = hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.LevelFromString(lvl)})
	}
	return c
}

// atPort binds the member called name to port, one from testport.Free
// for a member the test restarts at its address.
func atPort(c *Config, name string, port int) {
	if c.Name == name {
		c.BindPort = port
	}
}

// checkLeaks fails t if goroutines other than those running now are still
// alive after the test's other cleanups (register it first). memberlist
// lets a connection handler finish after Shutdown, so it polls.
func checkLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		var err error
		waitUntil(waitTimeout, func() bool { err = goleak.Find(ignore); return err == nil })
		if err != nil {
			t.Error(err)
		}
	})
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// member is a Node under test with a goroutine recording its events.
type member struct {
	*Node
	mu     sync.Mutex
	events []election.Event
	done   chan struct{}
}

// start creates a node from cfg, closing it at the end of the test.
func start(t *testing.T, cfg Config) *member {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.Name, err)
	}
	m := &member{Node: n, done: make(chan struct{})}
	go m.record()
	t.Cleanup(func() { m.stop(t) })
	return m
}

func (m *member) record() {
	defer close(m.done)
	for ev := range m.Events() {
		m.mu.Lock()
		m.events = append(m.events, ev)
		m.mu.Unlock()
	}
}

// stop closes the node and waits for Events to close.
func (m *member) stop(t *testing.T) {
	if err := m.Close(); err != nil {
		t.Errorf("Close(%s): %v", m.LocalID(), err)
	}
	select {
	case <-m.done:
	case <-time.After(waitTimeout):
		t.Errorf("%s: Events not closed after Close", m.LocalID())
	}
}

// peerEvents renders the membership events about peer, in order, e.g.
// ["up/10", "rating/25", "down"].
func (m *member) peerEvents(peer string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, ev := range m.events {
		if ev.Kind == election.EventMessage || ev.Peer.ID != peer {
			continue
		}
		out = append(out, render([]election.Event{ev}))
	}
	return out
}

// messages returns the messages received so far.
func (m *member) messages() []election.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []election.Event
	for _, ev := range m.events {
		if ev.Kind == election.EventMessage {
			out = append(out, ev)
		}
	}
	return out
}

// waitPeerEvents waits until the events about peer end with want.
func (m *member) waitPeerEvents(t *testing.T, peer string, want ...string) {
	t.Helper()
	if !waitUntil(waitTimeout, func() bool {
		got := m.peerEvents(peer)
		return len(got) >= len(want) && slices.Equal(got[len(got)-len(want):], want)
	}) {
		t.Fatalf("%s: events about %s = %v, want them to end with %v", m.LocalID(), peer, m.peerEvents(peer), want)
	}
}

// cluster starts nodes named n1..nk, each joining n1, with ratings 10, 20...
func cluster(t *testing.T, k int, change func(*Config)) []*member {
	t.Helper()
	var ms []*member
	for i := range k {
		cfg := testConfig(fmt.Sprintf("n%d", i+1))
		cfg.Rating = int64(10 * (i + 1))
		if i > 0 {
			cfg.Seeds = []string{ms[0].Addr()}
		}
		if change != nil {
			change(&cfg)
		}
		ms = append(ms, start(t, cfg))
	}
	for _, m := range ms {
		for _, p := range ms {
			if p != m {
				up := core.Peer{ID: p.LocalID(), Rating: p.cfg.Rating, NonVoter: p.cfg.NonVoter}
				m.waitPeerEvents(t, p.LocalID(), render([]election.Event{{Kind: election.EventPeerUp, Peer: up}}))
			}
		}
	}
	return ms
}
