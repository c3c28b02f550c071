package metrics

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

const testLatency = 2 * time.Millisecond

// TestRecorderScriptedElection drives three real Electors over the
// in-memory network, each with a Recorder on a registry of its own, through
// an initial election, a crash of the coordinator and the membership
// layer's verdict, and checks every metric against what the nodes report.
func TestRecorderScriptedElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 3, testLatency, nil)
		first := c.waitAgreed(time.Second, "c", 0)
		synctest.Wait() // every loop is idle: counts are final
		checkLeadership(t, c, "c", first, map[string]core.State{"a": core.StateLost, "b": core.StateLost, "c": core.StateCoordinator})
		checkMessageTotals(t, c)
		for _, id := range c.ids {
			r := c.nodes[id].rec
			expect(t, id+" leader changes", testutil.ToFloat64(r.leaderChanges), 1)
			expect(t, id+" members alive", testutil.ToFloat64(r.alive), 3)
			expect(t, id+" members dead", testutil.ToFloat64(r.dead), 0)
			expect(t, id+" heartbeat misses", testutil.ToFloat64(r.heartbeatMisses), 0)
			if s := testutil.ToFloat64(r.elections.WithLabelValues("started")); s < 1 {
				t.Errorf("%s: elections_total{started} = %v, want >= 1", id, s)
			}
		}
		expect(t, "c won", testutil.ToFloat64(c.nodes["c"].rec.elections.WithLabelValues("won")), 1)
		expect(t, "a lost", testutil.ToFloat64(c.nodes["a"].rec.elections.WithLabelValues("lost")), 1)
		before := histogram(t, c.nodes["a"].rec.duration)

		// The coordinator crashes; the survivors' heartbeat detector fires
		// after K*H and b wins in a new term. memberlist's verdict follows.
		c.crash("c")
		second := c.waitAgreed(time.Second, "b", first)
		c.net.AnnounceDown("c")
		c.eventually(time.Second, func() bool {
			return c.nodes["a"].e.Status().AliveMembers() == 2 && c.nodes["b"].e.Status().AliveMembers() == 2
		})
		synctest.Wait()
		checkLeadership(t, c, "b", second, map[string]core.State{"a": core.StateLost, "b": core.StateCoordinator})
		checkMessageTotals(t, c)
		for _, id := range c.ids {
			r := c.nodes[id].rec
			expect(t, id+" leader changes", testutil.ToFloat64(r.leaderChanges), 2)
			expect(t, id+" members alive", testutil.ToFloat64(r.alive), 2)
			expect(t, id+" members dead", testutil.ToFloat64(r.dead), 1)
			if m := testutil.ToFloat64(r.heartbeatMisses); m < election.DefaultHeartbeatMisses {
				t.Errorf("%s: heartbeat misses = %v, want >= K = %d", id, m, election.DefaultHeartbeatMisses)
			}
		}
		expect(t, "b won", testutil.ToFloat64(c.nodes["b"].rec.elections.WithLabelValues("won")), 1)
		after := histogram(t, c.nodes["a"].rec.duration)
		checkFailoverDuration(t, before, after)
		for _, id := range c.ids {
			lint(t, c.nodes[id].reg)
		}
	})
}

// TestRecorderDeposed: a coordinator that learns of a newer coordinator
// while it still leads (two coordinators met after a partition, quorum
// guard off) counts it in coordelect_leader_deposed_total. A preemption or
// a resignation hands off (the old coordinator stops before the new one
// starts) and counts nothing, nor do the nodes that only followed.
func TestRecorderDeposed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 3, testLatency, nil)
		first := c.waitAgreed(time.Second, "c", 0)
		if err := c.nodes["a"].e.SetRating(10); err != nil {
			t.Fatal(err)
		}
		second := c.waitAgreed(time.Second, "a", first)
		synctest.Wait()
		for id := range c.nodes {
			expect(t, id+" deposed after a's preemption", testutil.ToFloat64(c.nodes[id].rec.deposed), 0)
			expect(t, id+" term epoch", testutil.ToFloat64(c.nodes[id].rec.termEpoch), float64(core.Term(second).Epoch()))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.nodes["a"].e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		third := c.waitAgreed(time.Second, "c", second)
		synctest.Wait()
		for id := range c.nodes {
			expect(t, id+" deposed after a's resignation", testutil.ToFloat64(c.nodes[id].rec.deposed), 0)
		}
		// c, cut off, keeps leading (no guard) while a and b elect a (the
		// highest rated) in a newer term; at the heal c hears a's term
		// while it still leads.
		c.net.Partition([]string{"c"}, []string{"a", "b"})
		<-time.After(time.Second)
		c.net.Heal()
		c.waitAgreed(2*time.Second, "a", third)
		synctest.Wait()
		for id, want := range map[string]float64{"a": 0, "b": 0, "c": 1} {
			expect(t, id+" deposed after the heal", testutil.ToFloat64(c.nodes[id].rec.deposed), want)
		}
		for _, id := range c.ids {
			lint(t, c.nodes[id].reg)
		}
	})
}

// TestSetTermEpoch: the epoch gauge is exact where the term gauge, a
// float64, is not.
func TestSetTermEpoch(t *testing.T) {
	r, err := New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	term := uint64(core.MakeTerm(1<<31+3, 0xffffffff))
	r.Record(election.Update{Term: term, TermChanged: true})
	expect(t, "term epoch", testutil.ToFloat64(r.termEpoch), 1<<31+3)
	if got := testutil.ToFloat64(r.term); got == float64(term) && uint64(got) == term {
		t.Errorf("term gauge %v holds %d exactly; the case is meant to show a term a float64 rounds", got, term)
	}
}

// checkLeadership checks the leadership gauges of every node: term,
// is_coordinator, a single coordinator_info series, the one-hot state.
func checkLeadership(t *testing.T, c *testCluster, leader string, term uint64, states map[string]core.State) {
	t.Helper()
	for _, id := range c.ids {
		r := c.nodes[id].rec
		expect(t, id+" term", testutil.ToFloat64(r.term), float64(term))
		expect(t, id+" term epoch", testutil.ToFloat64(r.termEpoch), float64(core.Term(term).Epoch()))
		expect(t, id+" deposed", testutil.ToFloat64(r.deposed), 0) // none led beside another
		want := 0.0
		if id == leader {
			want = 1
		}
		expect(t, id+" is_coordinator", testutil.ToFloat64(r.isCoordinator), want)
		if n := testutil.CollectAndCount(r.coordinatorInfo); n != 1 {
			t.Errorf("%s: %d coordinator_info series, want 1 (the old coordinator's deleted)", id, n)
		}
		expect(t, id+" coordinator_info", testutil.ToFloat64(r.coordinatorInfo.WithLabelValues(leader)), 1)
		sum := 0.0
		for _, s := range core.States() {
			v := testutil.ToFloat64(r.state.WithLabelValues(s.String()))
			sum += v
			if s == states[id] && v != 1 {
				t.Errorf("%s: state{%v} = %v, want 1", id, s, v)
			}
		}
		expect(t, id+" sum of state", sum, 1)
	}
}

// checkMessageTotals checks that the messages the nodes counted as sent
// are the ones the network accepted, type by type, and that no node
// received more of a type than the network delivered in all.
func checkMessageTotals(t *testing.T, c *testCluster) {
	t.Helper()
	stats := c.net.Stats()
	var sentNow uint64
	for _, typ := range core.MsgTypes() {
		var sent, received float64
		for _, id := range c.ids {
			sent += testutil.ToFloat64(c.nodes[id].rec.sentBy[typ])
			received += testutil.ToFloat64(c.nodes[id].rec.receivedBy[typ])
		}
		sentNow += uint64(sent)
		if received > float64(stats.Delivered) {
			t.Errorf("received %v %v messages, the network delivered %d in all", received, typ, stats.Delivered)
		}
	}
	// Crashed nodes take their counts with them; the survivors' sends are
	// a part of the network's total.
	if sentNow == 0 || sentNow > stats.SentTotal() {
		t.Errorf("nodes counted %d messages sent, the network accepted %d", sentNow, stats.SentTotal())
	}
	if len(c.ids) == 3 {
		for _, typ := range core.MsgTypes() {
			var sent float64
			for _, id := range c.ids {
				sent += testutil.ToFloat64(c.nodes[id].rec.sentBy[typ])
			}
			expect(t, "sent "+typ.String(), sent, float64(stats.Sent[typ]))
		}
	}
}

// checkFailoverDuration: a follower goes without a coordinator from the
// moment its heartbeat detector fires until b's announcement: b asks the
// crashed c and, at once, a whether it hears c; a's grant (it does not)
// lets b declare without waiting AnswerTimeout, and a hears it a latency
// later.
func checkFailoverDuration(t *testing.T, before, after *dto.Histogram) {
	t.Helper()
	if n := after.GetSampleCount() - before.GetSampleCount(); n != 1 {
		t.Fatalf("election_duration_seconds: %d new observations, want 1", n)
	}
	d := time.Duration((after.GetSampleSum() - before.GetSampleSum()) * float64(time.Second))
	low := 2 * testLatency // b's pre-vote to a and a's grant
	high := election.DefaultAnswerTimeout + election.DefaultHeartbeatInterval + 4*testLatency
	t.Logf("failover as a follower saw it: %v", d)
	if d < low || d > high {
		t.Errorf("failover took %v, want between a round trip (%v) and %v", d, low, high)
	}
}

func histogram(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

func expect(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestSittingOut: coordelect_sitting_out follows the Update's flag, and
// stays as it is while the Update says nothing of it.
func TestSittingOut(t *testing.T) {
	r, err := New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "sitting out at start", testutil.ToFloat64(r.sittingOut), 0)
	r.Record(election.Update{SittingOut: true, SittingOutChanged: true})
	expect(t, "sitting out", testutil.ToFloat64(r.sittingOut), 1)
	r.Record(election.Update{TermChanged: true, Term: 5})
	expect(t, "sitting out, unchanged", testutil.ToFloat64(r.sittingOut), 1)
	r.Record(election.Update{SittingOutChanged: true})
	expect(t, "back in", testutil.ToFloat64(r.sittingOut), 0)
}
