package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	gometrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/bench/internal/failover"
	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/electiontest"
	"github.com/coordelect/coordelect/membership"
	"github.com/coordelect/coordelect/membership/clustertest"
)

// benchCluster is the cluster the benchmarks measure: n members named
// 1..n with ratings 1..n, each a membership.Node on its own 127.0.0.1 port
// with an election.Elector on top, as an embedding service runs them
// (default configurations, no metrics registry, no web page), run by the
// tests' harness, clustertest.Cluster. Its methods are called
// from one goroutine.
type benchCluster struct {
	opts  benchOptions
	log   hclog.Logger // progress, on stderr
	ml    *clustertest.Cluster
	nodes []*benchNode
	// changes is the last waitAgreement's record of leadership changes.
	changes changeLog
	// taken is the membership counters of the survivors when the last
	// round took the coordinator out (memberStats).
	taken [4]uint64
	// sentAtTakeOut is the messages sent when it was taken out.
	sentAtTakeOut sentCounts
	// labels: each member's goroutines carry pprof labels role and node
	// (coordbench idle -cpuprofile).
	labels bool
	// rng draws the members a starting member joins (-seed).
	rng *rand.Rand
	// started: the start is over (logProgress stops logging);
	// stopProgress ends logProgress.
	started      atomic.Bool
	stopProgress func()
	// bindAddr is the address members bind to: 127.0.0.1, or a shard's
	// network namespace's address.
	bindAddr string
	// health is -health's sink, nil without it; stopHealth ends its log.
	health     *healthSink
	stopHealth func()
}

// benchNode is one member across its restarts.
type benchNode struct {
	name   string
	rating int64
	port   int           // memberlist's port, kept across restarts
	count  *benchCounter // survives restarts: counts only grow
	mem    *membership.Node
	el     *election.Elector
	member *clustertest.Member // nil while stopped
	// log is the member's logger with -stalllog (off until a stall), kept
	// across restarts; nil without.
	log hclog.Logger
	// seeds, when set, are the members b joins (a shard's, from its
	// parent), instead of a draw among this process's members.
	seeds []string
}

// benchCounter is the Recorder of one node: the counts the benchmarks read,
// updated by the elector's loop and read by the bench goroutine.
type benchCounter struct {
	sent    [core.NumMsgTypes]atomic.Uint64 // messages sent, by type
	started atomic.Uint64                   // elections started
	misses  atomic.Uint64                   // heartbeat intervals missed
	// recv and dropped count the messages the node accepted, by type, and
	// ignored, by core.DropReason; sendFailed those the transport
	// refused. Only a stalled wait reads them (dissent).
	recv       [core.NumMsgTypes]atomic.Uint64
	dropped    [core.NumDropReasons]atomic.Uint64
	sendFailed atomic.Uint64
}

func (c *benchCounter) Record(u election.Update) {
	for t, n := range u.Sent {
		if n > 0 {
			c.sent[t].Add(n)
		}
	}
	for t, n := range u.Received {
		if n > 0 {
			c.recv[t].Add(n)
		}
	}
	for r, n := range u.Dropped {
		if n > 0 {
			c.dropped[r].Add(n)
		}
	}
	c.started.Add(u.ElectionsStarted)
	c.misses.Add(u.HeartbeatMisses)
	c.sendFailed.Add(u.SendFailed)
}

// String lists the node's nonzero counts, e.g. "sent election=3 recv
// coordinator=1 dropped order=2".
func (c *benchCounter) String() string {
	var parts []string
	add := func(what string, n uint64) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", what, n))
		}
	}
	for t := range c.sent {
		add("sent_"+core.MsgType(t).String(), c.sent[t].Load())
	}
	for t := range c.recv {
		add("recv_"+core.MsgType(t).String(), c.recv[t].Load())
	}
	for r := range c.dropped {
		add("dropped_"+core.DropReason(r).String(), c.dropped[r].Load())
	}
	add("send_failed", c.sendFailed.Load())
	add("elections", c.started.Load())
	return strings.Join(parts, " ")
}

// newBenchCluster names the nodes; start starts them.
func newBenchCluster(o benchOptions, logger hclog.Logger) *benchCluster {
	c := &benchCluster{opts: o, log: logger, ml: clustertest.New(nil), rng: rand.New(rand.NewPCG(o.seed, 19)), bindAddr: "127.0.0.1"}
	for i := range o.n {
		c.nodes = append(c.nodes, &benchNode{name: strconv.Itoa(i + 1), rating: int64(i + 1), count: &benchCounter{}})
	}
	return c
}

// start starts the members one after the other, highest rating first,
// each joining up to three started ones, and waits until every one reports
// the top-rated node as coordinator. In this order a starting member finds
// the coordinator in place and follows it: no election (started the other
// way round, each member would displace the one before it).
func (c *benchCluster) start(ctx context.Context) error {
	c.stopProgress = c.logProgress(10 * time.Second)
	if c.opts.health > 0 {
		sink, err := installHealthSink()
		if err != nil {
			return err
		}
		c.health, c.stopHealth = sink, logHealth(c.log, sink, c.opts.health)
	}
	defer c.started.Store(true)
	// Starting the members may take its pauses and -timeout more: a
	// member's start joins its seeds, up to memberlist's TCP timeout each,
	// which in a storm of elections adds up without end otherwise.
	t0, budget := time.Now(), c.opts.timeout+c.startPauses()
	for i, b := range slices.Backward(c.nodes) {
		i = len(c.nodes) - 1 - i
		if err := c.startNode(b, !c.opts.bare); err != nil {
			c.stop()
			return err
		}
		if took := time.Since(t0); took > budget && i+1 < len(c.nodes) {
			c.stop()
			return fmt.Errorf("%d of %d members started in %v, more than their pauses and -timeout (%v)",
				i+1, len(c.nodes), took.Round(time.Second), budget)
		}
		if err := failover.Pause(ctx, c.opts.startPause(i+1)); err != nil {
			c.stop()
			return fmt.Errorf("starting node %s of %d: %w", b.name, len(c.nodes), err)
		}
		if (i+1)%10 == 0 && i+1 < len(c.nodes) {
			sent := c.sent()
			c.log.Info("starting", "nodes", i+1, "of", len(c.nodes), "elections", c.electionsStarted(),
				"starters", c.starters(), "messages", sent.election(), "by_type", sent.String())
		}
	}
	if c.opts.bare {
		c.log.Info("started without electors", "nodes", len(c.nodes))
		return nil
	}
	if _, err := c.waitAgreement(ctx, c.top().name, ""); err != nil {
		c.stop()
		return err
	}
	sent := c.sent()
	c.log.Info("started", "nodes", len(c.nodes), "elections", c.electionsStarted(),
		"messages", sent.election(), "by_type", sent.String())
	return nil
}

// startPauses is the sum of the pauses between member starts.
func (c *benchCluster) startPauses() time.Duration {
	var d time.Duration
	for k := 1; k <= len(c.nodes); k++ {
		d += c.opts.startPause(k)
	}
	return d
}

// top is the node with the highest rating: the coordinator of a settled
// cluster.
func (c *benchCluster) top() *benchNode { return c.nodes[len(c.nodes)-1] }

// seeds returns up to three running members other than b to join, drawn
// at random: each join is a push-pull of the whole member list with each
// seed, so a fixed few seeds (or the latest members started) would carry
// every join of a large cluster. The member also joins the top-rated
// voter it learns of (membership.New's introduction).
func (c *benchCluster) seeds(b *benchNode) []string {
	if b.seeds != nil {
		return b.seeds
	}
	var up []*benchNode
	for _, o := range c.nodes {
		if o != b && o.mem != nil {
			up = append(up, o)
		}
	}
	var out []string
	for len(out) < 3 && len(up) > 0 {
		i := c.rng.IntN(len(up))
		out = append(out, up[i].mem.Addr())
		up[i] = up[len(up)-1]
		up = up[:len(up)-1]
	}
	return out
}

// nonVoter reports whether b is outside the -voters top-rated members.
func (c *benchCluster) nonVoter(b *benchNode) bool {
	return c.opts.voters > 0 && b.rating <= int64(len(c.nodes)-c.opts.voters)
}

// startNode starts b's member and elector on b's port (a free one the
// first time). With elector false only the member runs (memory baseline).
func (c *benchCluster) startNode(b *benchNode, elector bool) (err error) {
	if c.labels {
		role := "follower"
		if b == c.top() {
			role = "coordinator"
		}
		// Goroutines started below inherit the labels.
		pprof.Do(context.Background(), pprof.Labels("role", role, "node", b.name), func(context.Context) {
			err = c.startNodeLabelled(b, elector)
		})
		return err
	}
	return c.startNodeLabelled(b, elector)
}

func (c *benchCluster) startNodeLabelled(b *benchNode, elector bool) error {
	mc := membership.DefaultConfig()
	mc.Name, mc.Rating, mc.Algorithm = b.name, b.rating, c.opts.alg
	mc.NonVoter = c.nonVoter(b)
	mc.BindAddr, mc.BindPort = c.bindAddr, b.port
	mc.Profile = c.opts.profile
	compress, labelled := c.opts.compress, c.health != nil
	mc.Memberlist = func(ml *memberlist.Config) {
		ml.EnableCompression = ml.EnableCompression && compress
		if labelled {
			ml.MetricLabels = append(ml.MetricLabels, gometrics.Label{Name: healthNodeLabel, Value: b.name})
		}
	}
	mc.Seeds = c.seeds(b)
	switch {
	case b.rating > int64(c.opts.n-c.opts.logTop): // -logtop
		if b.log == nil {
			b.log = hclog.New(&hclog.LoggerOptions{Name: "node-" + b.name, Level: hclog.Info, Output: os.Stderr, TimeFormat: "15:04:05.000"})
		}
		mc.Logger = b.log
	case c.opts.stallLog:
		if b.log == nil {
			b.log = hclog.New(&hclog.LoggerOptions{Name: "node-" + b.name, Level: hclog.Off, Output: os.Stderr})
		}
		mc.Logger = b.log
	}
	m, err := c.ml.Join(mc)
	if err != nil {
		return err
	}
	b.member, b.mem = m, m.Node
	if b.port == 0 {
		_, port, _ := net.SplitHostPort(b.mem.Addr())
		b.port, _ = strconv.Atoi(port)
	}
	if !elector {
		if c.opts.bare {
			// Nobody runs an elector on it: read its events as an
			// elector would, or they queue without bound (the memory
			// bench starts the electors later, on the queued events).
			go func(events <-chan election.Event) {
				for range events {
				}
			}(m.Node.Events())
		}
		return nil
	}
	return c.startElector(b)
}

// startElector runs an elector with the default configuration on b's member.
func (c *benchCluster) startElector(b *benchNode) error {
	err := c.ml.Elect(b.member, election.Config{Recorder: b.count, QuorumSize: c.opts.quorum, Logger: b.log})
	if err != nil {
		b.member, b.mem = nil, nil
		return err
	}
	b.el = b.member.Elector
	return nil
}

// crash stops b the way a crash looks to the others: the elector stops
// without a hand-off, memberlist shuts down without leaving.
func (c *benchCluster) crash(b *benchNode) error {
	if b.member == nil {
		return nil
	}
	err := c.ml.Crash(b.name)
	b.member, b.el, b.mem = nil, nil, nil
	if c.health != nil {
		c.health.forget(b.name)
	}
	return err
}

// leave stops b gracefully: the elector (a follower here) stops, the
// member tells the cluster it leaves.
func (c *benchCluster) leave(b *benchNode) error {
	err := c.ml.Leave(b.name, time.Second)
	b.member, b.el, b.mem = nil, nil, nil
	return err
}

// stop crashes every running node at once (the cluster is going away):
// a node's Close waits for its sends in flight, up to memberlist's TCP
// timeout each, so closing 100 nodes of a cluster in an election storm
// one after the other took minutes.
func (c *benchCluster) stop() {
	if c.stopProgress != nil {
		c.stopProgress()
		c.stopProgress = nil
	}
	if c.stopHealth != nil {
		c.stopHealth()
		c.stopHealth = nil
	}
	var names []string
	for _, b := range c.nodes {
		if b.member != nil {
			names = append(names, b.name)
		}
	}
	_ = c.ml.Crash(names...)
	for _, b := range c.nodes {
		b.member, b.el, b.mem = nil, nil, nil
		if c.health != nil {
			c.health.forget(b.name)
		}
	}
}

// running returns the nodes whose elector runs.
func (c *benchCluster) running() []*benchNode {
	var out []*benchNode
	for _, b := range c.nodes {
		if b.el != nil {
			out = append(out, b)
		}
	}
	return out
}

// agreed reports whether every running node reports the same coordinator
// and term, and names it.
func (c *benchCluster) agreed() (string, bool) {
	coord, _, ok := electiontest.Agree(c.ml.Electors()...)
	return coord, ok
}

// reports summarises who the running nodes report as coordinator, e.g.
// "50: 37 nodes (cand 0, lost 37), none: 13 nodes (cand 13, lost 0)".
func (c *benchCluster) reports() string {
	type tally struct{ nodes, cand, lost int }
	by := map[string]*tally{}
	for _, b := range c.running() {
		id, _, _ := b.el.Leader()
		if id == "" {
			id = "none"
		}
		if by[id] == nil {
			by[id] = &tally{}
		}
		t := by[id]
		t.nodes++
		switch b.el.Status().State {
		case core.StateCandidate:
			t.cand++
		case core.StateLost:
			t.lost++
		}
	}
	var parts []string
	for id, t := range by {
		parts = append(parts, fmt.Sprintf("%s: %d nodes (cand %d, lost %d)", id, t.nodes, t.cand, t.lost))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ") + "; received frames dropped: " + c.drops()
}

// drops sums the running members' dropped frames by reason, e.g.
// "unknown_sender=3 queue_full=0".
func (c *benchCluster) drops() string {
	var sum [membership.NumDropReasons]uint64
	for _, b := range c.running() {
		st := b.mem.Stats()
		for r, k := range st.Dropped {
			sum[r] += k
		}
	}
	var parts []string
	for r, k := range sum {
		parts = append(parts, fmt.Sprintf("%s=%d", membership.DropReason(r), k))
	}
	return strings.Join(parts, " ")
}

// waitAgreement polls until every running node reports the same
// coordinator; want, if not empty, must be that coordinator, and not, if
// not empty, must not be. It returns when that happened, or an error after
// the -timeout. A poll reads each node's leadership once and allocates
// nothing, so that polling 1,000 members every millisecond does not take
// the CPU the members need.
func (c *benchCluster) waitAgreement(ctx context.Context, want, not string) (time.Time, error) {
	c.changes.reset(len(c.nodes))
	start := time.Now()
	next := start.Add(stuckEvery)
	defer c.quietLogs()
	return failover.Poller(ctx, c.opts.timeout, func(now time.Time) bool {
		coord, ok := c.changes.look(c.nodes, now)
		if ok && (want == "" || coord == want) && (not == "" || coord != not) {
			return true
		}
		if now.After(next) {
			next = now.Add(stuckEvery)
			c.log.Warn("still no agreement", "waited", now.Sub(start).Round(time.Millisecond), "want", want, "not", not,
				"reports", c.reports(), "dissent", c.dissent(want))
		}
		return false
	}, func() string { return fmt.Sprintf("no agreement (want %q; %s)", want, c.reports()) })
}

// quietLogs turns the members' loggers (-stalllog) off again, but for
// -logtop's.
func (c *benchCluster) quietLogs() {
	for _, b := range c.nodes {
		if b.log != nil && b.rating <= int64(c.opts.n-c.opts.logTop) {
			b.log.SetLevel(hclog.Off)
		}
	}
}

// stuckEvery is how often a wait for an agreement that has not come logs
// who disagrees (dissent): a failover at n = 1,000 agrees within a second,
// so a wait of this long is a stall worth a diagnosis.
const stuckEvery = 20 * time.Second

// dissent describes up to 5 running nodes that do not report want (or,
// with want empty, the coordinator most nodes report), with what their
// Status says and whether they hold that coordinator alive, and the
// wanted node's own Status: what a stalled agreement needs read.
func (c *benchCluster) dissent(want string) string {
	run := c.running()
	if want == "" {
		count := map[string]int{}
		for _, b := range run {
			id, _, _ := b.el.Leader()
			count[id]++
			if count[id] > count[want] {
				want = id
			}
		}
	}
	wb, _ := c.node(want)
	describe := func(b *benchNode) string {
		st := b.el.Status()
		alive := "absent"
		for _, m := range st.Members {
			if m.ID == want {
				alive = fmt.Sprintf("alive=%t", m.Alive)
			}
		}
		mv := "not listed"
		for _, m := range b.mem.Members() {
			if m.Name == want {
				mv = fmt.Sprintf("alive=%t boot_current=%t refused=%q", m.Alive, wb != nil && wb.mem != nil && m.BootID == wb.mem.BootID(), m.Refused)
			}
		}
		ms := b.mem.Stats()
		if b.log != nil && !b.log.IsDebug() {
			b.log.SetLevel(hclog.Debug)
			c.log.Warn("member logs at debug level until the agreement", "node", b.name)
		}
		return fmt.Sprintf("%s{state %s coord %q term %s electing %t members %d/%d; elector's view of %s: %s; membership's: %s; counts: %s; membership: dropped %v send_failed=%d queue_full=%d abandoned=%d gaps=%d}",
			b.name, st.State, st.Coordinator, core.Term(st.Term), st.Electing, st.AliveMembers(), len(st.Members), want, alive, mv,
			b.count, ms.Dropped, ms.SendFailed, ms.SendQueueFull, ms.SendAbandoned, ms.GapsSkipped)
	}
	var parts []string
	n := 0
	for _, b := range run {
		if b.name == want {
			parts = append(parts, "wanted "+describe(b))
			continue
		}
		if id, _, _ := b.el.Leader(); id != want {
			if n++; n <= 5 {
				parts = append(parts, describe(b))
			}
		}
	}
	return fmt.Sprintf("%d of %d dissent: %s", n, len(run), strings.Join(parts, "; "))
}

// changeLog records, during one waitAgreement, when each node last changed
// the leadership it reports: the last one to change is the node the
// agreement waited for. Its slices are indexed like benchCluster.nodes.
type changeLog struct {
	seen  []bool
	ids   []string
	terms []uint64
	at    []time.Time
	names []string
	// prev is what each node reported before its last change.
	prev []string
}

func (l *changeLog) reset(n int) {
	l.seen, l.ids, l.terms = make([]bool, n), make([]string, n), make([]uint64, n)
	l.at, l.names, l.prev = make([]time.Time, n), make([]string, n), make([]string, n)
}

// look reads the running nodes' leadership, records the changes, and
// reports whether they all report the same coordinator and term, and
// which.
func (l *changeLog) look(nodes []*benchNode, now time.Time) (coord string, agreed bool) {
	agreed = true
	var term uint64
	first := true
	for i, b := range nodes {
		if b.el == nil {
			continue
		}
		id, tm, has := b.el.Leader()
		if !has || !first && (id != coord || tm != term) {
			agreed = false
		}
		if first {
			coord, term, first = id, tm, false
		}
		if l.seen[i] && (l.ids[i] != id || l.terms[i] != tm) {
			l.at[i], l.names[i] = now, b.name
			l.prev[i] = fmt.Sprintf("%q/%s", l.ids[i], core.Term(l.terms[i]))
		}
		l.seen[i], l.ids[i], l.terms[i] = true, id, tm
	}
	return coord, agreed && !first
}

// last names the node that changed last, when, and what it reported
// before (coordinator/term).
func (l *changeLog) last() (name string, at time.Time, before string) {
	for i, t := range l.at {
		if t.After(at) {
			name, at, before = l.names[i], t, l.prev[i]
		}
	}
	return name, at, before
}

// memberStats sums the membership counters of the running nodes other
// than except (may be nil) that say where election messages were held up.
func (c *benchCluster) memberStats(except *benchNode) (reordered, gaps, dropped, sendFailed uint64) {
	for _, b := range c.running() {
		if b == except {
			continue
		}
		st := b.mem.Stats()
		reordered, gaps, sendFailed = reordered+st.Reordered, gaps+st.GapsSkipped, sendFailed+st.SendFailed
		for _, d := range st.Dropped {
			dropped += d
		}
	}
	return reordered, gaps, dropped, sendFailed
}

// sentCounts is a count of messages by type.
type sentCounts [core.NumMsgTypes]uint64

// election sums the election traffic (heartbeats excluded).
func (m sentCounts) election() uint64 {
	var s uint64
	for t, k := range m {
		if core.MsgType(t).ElectionTraffic() {
			s += k
		}
	}
	return s
}

// minus returns m - o.
func (m sentCounts) minus(o sentCounts) sentCounts {
	for t := range m {
		m[t] -= o[t]
	}
	return m
}

// plus returns m + o.
func (m sentCounts) plus(o sentCounts) sentCounts {
	for t := range m {
		m[t] += o[t]
	}
	return m
}

// String lists the election traffic by type, e.g. "election=4 coordinator=3".
func (m sentCounts) String() string {
	var parts []string
	for t, k := range m {
		if core.MsgType(t).ElectionTraffic() && k > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", core.MsgType(t), k))
		}
	}
	return strings.Join(parts, " ")
}

// sent sums the messages every node has sent, by type.
func (c *benchCluster) sent() sentCounts {
	var s sentCounts
	for _, b := range c.nodes {
		for t := range s {
			s[t] += b.count.sent[t].Load()
		}
	}
	return s
}

// electionsStarted sums the elections every node has started.
func (c *benchCluster) electionsStarted() uint64 {
	var s uint64
	for _, b := range c.nodes {
		s += b.count.started.Load()
	}
	return s
}

// heartbeatMisses sums the heartbeat intervals every follower missed.
func (c *benchCluster) heartbeatMisses() uint64 {
	var s uint64
	for _, b := range c.nodes {
		s += b.count.misses.Load()
	}
	return s
}

// starters summarises which members started elections: how many, and the
// ratings of the highest and the lowest (the newest, during start).
func (c *benchCluster) starters() string {
	k, lo, hi := 0, int64(0), int64(0)
	for _, b := range c.nodes {
		if b.count.started.Load() > 0 {
			if k == 0 || b.rating < lo {
				lo = b.rating
			}
			hi = max(hi, b.rating)
			k++
		}
	}
	return fmt.Sprintf("%d (ratings %d-%d)", k, lo, hi)
}

// logProgress logs, every d of the start, the elections and messages so
// far (all types, heartbeats included), so that a start that stalls (a
// large cluster) shows what it is sending. It reads only the nodes'
// atomic counters. With -stalldump FILE it also writes, once, every
// goroutine's stack to FILE in the second the cluster's heartbeats fall
// below a quarter of the highest rate they had (at least 100 a second), at any
// time until the returned function is called: the moment a large start,
// or a round of a large cluster, stalls.
func (c *benchCluster) logProgress(d time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		sec := time.NewTicker(time.Second)
		defer sec.Stop()
		var last, peak uint64
		dumped := c.opts.stallDump == ""
		for {
			select {
			case <-done:
				return
			case <-sec.C:
				hb := c.sent()[core.MsgHeartbeat]
				rate := hb - last
				last = hb
				peak = max(peak, rate)
				if peak >= 100 && !dumped && rate < peak/4 {
					dumped = true
					c.dumpGoroutines(rate)
				}
			case <-t.C:
				if c.started.Load() {
					continue
				}
				var all []string
				for ty, k := range c.sent() {
					if k > 0 {
						all = append(all, fmt.Sprintf("%s=%d", core.MsgType(ty), k))
					}
				}
				c.log.Info("progress", "elections", c.electionsStarted(), "starters", c.starters(),
					"sent", strings.Join(all, " "))
			}
		}
	}()
	return func() { close(done) }
}

// dumpGoroutines writes every goroutine's stack to -stalldump.
func (c *benchCluster) dumpGoroutines(rate uint64) {
	f, err := os.Create(c.opts.stallDump)
	if err == nil {
		err = pprof.Lookup("goroutine").WriteTo(f, 2)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	c.log.Warn("the cluster's heartbeats fell", "per_second", rate, "elections", c.electionsStarted(), "sent", c.sent().String(), "goroutines", c.opts.stallDump, "error", err)
}

// What idle reads of a cluster in this process (idleCluster).

func (c *benchCluster) topName() string { return c.top().name }

// sentByNode is every member's messages sent, by type, by name.
func (c *benchCluster) sentByNode() (map[string][core.NumMsgTypes]uint64, error) {
	out := make(map[string][core.NumMsgTypes]uint64, len(c.nodes))
	for _, b := range c.nodes {
		out[b.name] = b.count.load()
	}
	return out, nil
}

// cpu is the CPU time this process has used.
func (c *benchCluster) cpu() (time.Duration, error) { return processCPU(), nil }

// memory reads this process's live heap after two collections, its
// goroutine stacks and goroutines.
func (c *benchCluster) memory() (heap, stacks uint64, goroutines int, err error) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine(), nil
}
