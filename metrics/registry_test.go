package metrics

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

// fakeTransport returns fixed membership.Stats.
type fakeTransport struct{ s membership.Stats }

func (f fakeTransport) Stats() membership.Stats { return f.s }

// TestLintClean: every series New registers, with transport stats and
// memberlist metrics attached, has HELP and the node label, exists before
// anything happened (coordinator_info: once a coordinator is known), and
// passes promlint.
func TestLintClean(t *testing.T) {
	reg := prometheus.NewRegistry()
	sink := NewMemberlistSink()
	r, err := New(reg, WithNode("n1"), WithTransportStats(fakeTransport{}), WithMemberlist(sink, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	families := gather(t, reg)
	for _, want := range issueMetrics {
		// coordinator_info has a series only while a coordinator is known.
		if families[want] == nil && want != "coordelect_coordinator_info" {
			t.Errorf("%s is not exported before the first event", want)
		}
	}
	for name, f := range families {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, NodeLabel) != "n1" {
				t.Errorf("%s: a series without node=\"n1\"", name)
			}
		}
	}
	expect(t, "initial state sleep", testutil.ToFloat64(r.state.WithLabelValues("sleep")), 1)
	expect(t, "coordinator_info series", float64(testutil.CollectAndCount(r.coordinatorInfo)), 0)
	r.Record(election.Update{Leader: election.Leadership{Coordinator: "n2", Term: 1 << 32}, LeaderChanged: true})
	lint(t, reg)
}

// lint fails the test on every promlint problem of g's metrics.
func lint(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// issueMetrics are the names the docs and the dashboard rely on.
var issueMetrics = []string{
	"coordelect_term", "coordelect_is_coordinator", "coordelect_coordinator_info", "coordelect_state",
	"coordelect_messages_sent_total", "coordelect_messages_received_total", "coordelect_messages_dropped_total",
	"coordelect_elections_total", "coordelect_election_duration_seconds", "coordelect_leader_changes_total",
	"coordelect_members", "coordelect_heartbeat_misses_total",
	// The epoch exact, and the overlaps a scrape cannot see.
	"coordelect_term_epoch", "coordelect_leader_deposed_total",
}

// TestLabelValuesPreinitialised: every label value the code knows exists
// at zero (one-hot state: sleep at 1), so rate() and absent() behave from
// the first scrape.
func TestLabelValuesPreinitialised(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	f := gather(t, reg)
	want := map[string][]string{
		"coordelect_messages_sent_total":     msgTypeNames(),
		"coordelect_messages_received_total": msgTypeNames(),
		"coordelect_messages_dropped_total":  ElectorDropReasons(),
		"coordelect_elections_total":         {"started", "won", "lost", "restarted"},
		"coordelect_members":                 {"alive", "dead"},
	}
	for _, s := range core.States() {
		want["coordelect_state"] = append(want["coordelect_state"], s.String())
	}
	for name, values := range want {
		got := labelValues(f[name])
		slices.Sort(got)
		slices.Sort(values)
		if !slices.Equal(got, values) {
			t.Errorf("%s: label values %q, want %q", name, got, values)
		}
	}
}

func msgTypeNames() []string {
	var out []string
	for _, t := range core.MsgTypes() {
		out = append(out, t.String())
	}
	return out
}

// TestTwoNodesOneRegistry: WithNode keeps two nodes' series apart in one
// registry; without it the second New fails and registers nothing.
func TestTwoNodesOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := New(reg, WithNode("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(reg, WithNode("b"))
	if err != nil {
		t.Fatal(err)
	}
	a.Record(election.Update{Term: 7, TermChanged: true,
		Leader: election.Leadership{Coordinator: "a", Term: 7, IsSelf: true}, LeaderChanged: true})
	b.Record(election.Update{Term: 9, TermChanged: true})
	terms := map[string]float64{}
	for _, m := range gather(t, reg)["coordelect_term"].GetMetric() {
		terms[labelValue(m, NodeLabel)] = m.GetGauge().GetValue()
	}
	if terms["a"] != 7 || terms["b"] != 9 || len(terms) != 2 {
		t.Errorf("coordelect_term by node = %v, want a=7 b=9", terms)
	}
	count := len(gather(t, reg))
	if _, err := New(reg); err == nil {
		t.Fatal("a third Recorder without WithNode registered on the same registry")
	}
	if got := len(gather(t, reg)); got != count {
		t.Errorf("a failed New left families behind: %d, want %d", got, count)
	}
	a.Unregister()
	a.Unregister()
	if _, err := New(reg, WithNode("a")); err != nil {
		t.Errorf("New after Unregister: %v", err)
	}
}

// TestTransportStats: the membership layer's receive-side drops join
// coordelect_messages_dropped_total under reasons of their own, beside the
// elector's, and the rest of its counts appear as coordelect_transport_*.
func TestTransportStats(t *testing.T) {
	var s membership.Stats
	s.Dropped[membership.DropMalformed] = 3
	s.Dropped[membership.DropUnknownSender] = 2
	s.SendQueueFull, s.Rejoins, s.GapsSkipped = 4, 5, 6
	reg := prometheus.NewRegistry()
	r, err := New(reg, WithTransportStats(fakeTransport{s}))
	if err != nil {
		t.Fatal(err)
	}
	u := election.Update{SendFailed: 2}
	u.Dropped[core.DropStaleTerm] = 1
	r.Record(u)
	f := gather(t, reg)
	dropped := map[string]float64{}
	for _, m := range f["coordelect_messages_dropped_total"].GetMetric() {
		dropped[labelValue(m, "reason")] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"stale_term": 1, "send_failed": 2, "malformed": 3, "unknown_sender": 2, "duplicate": 0}
	for reason, v := range want {
		if got, ok := dropped[reason]; !ok || got != v {
			t.Errorf("dropped{reason=%q} = %v (present %v), want %v", reason, got, ok, v)
		}
	}
	for name, v := range map[string]float64{
		"coordelect_transport_rejoins_total": 5, "coordelect_transport_gaps_skipped_total": 6,
	} {
		if got := f[name].GetMetric()[0].GetCounter().GetValue(); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	for _, m := range f["coordelect_transport_send_failures_total"].GetMetric() {
		if labelValue(m, "reason") == "queue_full" && m.GetCounter().GetValue() != 4 {
			t.Errorf("send_failures{queue_full} = %v, want 4", m.GetCounter().GetValue())
		}
	}
}

// TestDropReasonsDisjoint: the elector's and the transport's drop reasons
// share one family, so they must never share a value.
func TestDropReasonsDisjoint(t *testing.T) {
	for _, r := range membership.DropReasons() {
		if slices.Contains(ElectorDropReasons(), r.String()) {
			t.Errorf("drop reason %q is both the elector's and the transport's", r)
		}
	}
}

// TestOptionErrors: invalid options fail New with a message naming them.
func TestOptionErrors(t *testing.T) {
	cases := map[string][]Option{
		`WithNode("")`:             {WithNode("")},
		"WithDurationBuckets()":    {WithDurationBuckets()},
		"strictly increasing":      {WithDurationBuckets(0.1, 0.1)},
		`WithMemberlist(sink, "")`: {WithMemberlist(NewMemberlistSink(), "")},
	}
	for want, opts := range cases {
		_, err := New(prometheus.NewRegistry(), opts...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%s) = %v, want an error mentioning %q", want, err, want)
		}
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	reg := prometheus.NewRegistry()
	r, err := New(reg, WithDurationBuckets(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	r.Record(election.Update{ElectionEnded: true, ElectionDuration: 1500 * time.Millisecond})
	if b := histogram(t, r.duration).GetBucket(); len(b) != 3 || b[1].GetCumulativeCount() != 1 {
		t.Errorf("custom buckets: %v", b)
	}
}

// TestSplitBrainVisible: without the quorum guard, a partition leaves a
// coordinator on each side, and the sum of coordelect_is_coordinator over
// the nodes (what the split-brain alert computes) is 2.
func TestSplitBrainVisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 3, testLatency, nil)
		first := c.waitAgreed(time.Second, "c", 0)
		c.net.Partition([]string{"a", "b"}, []string{"c"})
		c.waitAgreed(time.Second, "b", first, "a", "b")
		synctest.Wait()
		sum := 0.0
		for _, id := range c.ids {
			sum += testutil.ToFloat64(c.nodes[id].rec.isCoordinator)
		}
		expect(t, "nodes claiming coordinator", sum, 2)
	})
}

func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, f := range mfs {
		out[f.GetName()] = f
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func labelValues(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			out = append(out, l.GetValue())
		}
	}
	return out
}

// TestElectionCauses: the elections an Update counts as started are
// counted under the cause it names, every cause's series exists from the
// start, and their sum is elections_total{result="started"}.
func TestElectionCauses(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cause core.ElectionCause
		n     uint64
	}{{core.CauseStartup, 1}, {core.CauseSilence, 2}, {core.CauseDown, 1}, {core.CauseSilence, 1}} {
		var u election.Update
		u.ElectionsStarted, u.Cause = c.n, c.cause
		r.Record(u)
	}
	f := gather(t, reg)
	got := map[string]float64{}
	sum := 0.0
	for _, m := range f["coordelect_elections_started_total"].GetMetric() {
		got[labelValue(m, "cause")] = m.GetCounter().GetValue()
		sum += m.GetCounter().GetValue()
	}
	if len(got) != int(core.NumElectionCauses) {
		t.Errorf("%d cause series, want %d: %v", len(got), core.NumElectionCauses, got)
	}
	for cause, v := range map[string]float64{"startup": 1, "silence": 3, "down": 1, "handoff": 0, "preempt": 0} {
		if got[cause] != v {
			t.Errorf("elections_started_total{cause=%q} = %v, want %v", cause, got[cause], v)
		}
	}
	for _, m := range f["coordelect_elections_total"].GetMetric() {
		if labelValue(m, "result") == "started" && m.GetCounter().GetValue() != sum {
			t.Errorf("elections_total{started} = %v, the causes sum to %v", m.GetCounter().GetValue(), sum)
		}
	}
}
