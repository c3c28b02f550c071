package election_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/fencing"
	"github.com/coordelect/coordelect/membership"
)

// ackDropper is a member's Transport that loses the heartbeat
// acknowledgements it sends while drop is set; everything else, the
// node's optional interfaces included, is the node's.
type ackDropper struct {
	*membership.Node
	drop *atomic.Bool
}

func (a ackDropper) Send(m core.Message) error {
	if m.Type == core.MsgHeartbeatAck && a.drop.Load() {
		return nil
	}
	return a.Node.Send(m)
}

// realSpanMonitor samples every member of a real cluster every
// millisecond until stopped: a member that IsLeader (read before and
// after the rest of the sample) with no live span (its loop's, of its
// term, not cancelled) is a gap; so, measured apart, is one whose span's
// OnStartedLeading does not run yet. A gap counts as an instant of the
// target when it lasts longer than a tick.
type realSpanMonitor struct {
	nodes []*realNode
	log   *spanLog
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	// Read after done is closed.
	gaps, cbGaps   int           // gaps longer than a tick
	worst, cbWorst time.Duration // the longest gaps
	samples        int
}

func watchSpans(nodes []*realNode, log *spanLog) *realSpanMonitor {
	m := &realSpanMonitor{nodes: nodes, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *realSpanMonitor) run() {
	defer close(m.done)
	since := make([]time.Time, len(m.nodes)) // of the gap in progress, per member
	cbSince := make([]time.Time, len(m.nodes))
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		m.samples++
		for i, n := range m.nodes {
			bad, cbBad := m.sample(n)
			m.episode(bad, &since[i], &m.worst, &m.gaps)
			m.episode(cbBad, &cbSince[i], &m.cbWorst, &m.cbGaps)
		}
	}
}

// sample reports whether n leads with no live span, and whether it leads
// with no OnStartedLeading running for its span.
func (m *realSpanMonitor) sample(n *realNode) (bad, cbBad bool) {
	before := n.el.IsLeader()
	sp, ctx, live := election.LeadingSpan(n.el)
	cancelled := live && ctx.Err() != nil
	_, term, _ := n.el.Leader()
	m.log.mu.Lock()
	running, working := m.log.running[n.name]
	m.log.mu.Unlock()
	if !before || !n.el.IsLeader() {
		return false, false
	}
	bad = !live || cancelled || sp.Term != term
	return bad, bad || !working || running != sp
}

// episode follows one kind of gap of one member: since is when the gap in
// progress began (zero: none).
func (m *realSpanMonitor) episode(bad bool, since *time.Time, worst *time.Duration, count *int) {
	switch {
	case bad && since.IsZero():
		*since = time.Now()
	case !bad && !since.IsZero():
		d := time.Since(*since)
		*worst = max(*worst, d)
		if d > election.DefaultTick {
			*count++
		}
		*since = time.Time{}
	}
}

// halt stops the monitor and waits for it; it may be called again.
func (m *realSpanMonitor) halt() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

// TestMemberlistSpansThroughLapses is TestSpansThroughLapses on real
// memberlist: five guarded members on loopback, the heartbeat
// acknowledgements lost for 50 to 300 ms, and after each such outage one
// that ends as soon as the lease has lapsed, until 20 outages have ended
// the leader's span (lapses). At no sampled instant does a member that
// IsLeader go without a live span for longer than a tick; each span gets
// its own Claim and OnStartedLeading with the next Number of its term.
func TestMemberlistSpansThroughLapses(t *testing.T) {
	if testing.Short() {
		t.Skip("20 lease lapses on real memberlist: about 15 s")
	}
	const wantLapses, maxOutages = 20, 80
	var drop atomic.Bool
	fence := &fencing.Memory{}
	log := newSpanLog()
	c := newRealCluster(t, func(cfg *election.Config) { cfg.QuorumSize = 5 })
	c.ec.Wrap = func(n *membership.Node) election.Transport { return ackDropper{Node: n, drop: &drop} }
	var nodes []*realNode
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("n%d", i)
		c.mut = func(cfg *election.Config) {
			cfg.QuorumSize = 5
			cfg.Callbacks = log.callbacks(name, fence)
		}
		nodes = append(nodes, c.start(name, int64(i), false))
	}
	all := names("n", 1, 5)
	c.await(all, "n5", 0, 15*time.Second)
	mon := watchSpans(nodes, log)
	defer mon.halt()

	leader := func() (*realNode, election.Span) {
		t.Helper()
		var n *realNode
		var sp election.Span
		electiontest.Eventually(t, 10*time.Second, func() bool {
			id, _, ok := electiontest.Agree(c.ec.Electors(all...)...)
			if !ok || !c.nodes[id].el.IsLeader() {
				return false
			}
			n = c.nodes[id]
			var live bool
			sp, _, live = election.LeadingSpan(n.el)
			return live
		}, func() string { return c.describe(all) })
		return n, sp
	}
	// outage loses the acks until over returns true, and reports whether
	// the leader's span ended.
	outage := func(over func(n *realNode, term uint64) bool) bool {
		n, sp := leader()
		drop.Store(true)
		poll := time.NewTicker(time.Millisecond)
		for !over(n, sp.Term) {
			<-poll.C
		}
		poll.Stop()
		drop.Store(false)
		leader()
		now, _, live := election.LeadingSpan(n.el)
		<-time.After(2 * lease) // a fresh lease for the next outage
		return !live || now != sp
	}
	drops := ackDrops()
	lapses, outages, set := 0, 0, 0
	for ; lapses < wantLapses && outages < maxOutages; outages++ {
		var over func(*realNode, uint64) bool
		if outages%2 == 0 {
			end := time.Now().Add(drops[set%len(drops)])
			set++
			over = func(*realNode, uint64) bool { return !time.Now().Before(end) }
		} else {
			over = func(n *realNode, term uint64) bool { return n.el.Check(term) != nil }
		}
		if outage(over) {
			lapses++
		}
	}
	mon.halt()
	if err := c.ec.Close(); err != nil { // every callback has returned
		t.Log(err)
	}
	spans, again := log.check(t)
	t.Logf("%d outages, %d lapses; %d spans (%d again in a term already led); %d samples: "+
		"led with no live span longer than a tick %d times (longest %v); "+
		"led before the span's OnStartedLeading ran, longer than a tick %d times (longest %v)",
		outages, lapses, spans, again, mon.samples, mon.gaps, mon.worst, mon.cbGaps, mon.cbWorst)
	if lapses < wantLapses {
		t.Errorf("%d lapses in %d outages, want %d", lapses, outages, wantLapses)
	}
	if mon.gaps > 0 {
		t.Errorf("a member led with no live span for longer than a tick %d times (longest %v)", mon.gaps, mon.worst)
	}
}
