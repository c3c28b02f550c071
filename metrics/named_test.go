package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// TestNamedSeries: every election has coordelect_named_* series under its
// name, up to the cap; the names beyond share election="_other", whose
// is_coordinator counts the names led; coordelect_named_led counts every
// name led; an ended election's series go and free its label value; a
// named election's messages count in the unlabelled message counters,
// and its other news leaves the unnamed election's families alone.
func TestNamedSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := New(reg, WithElectionLabels(2))
	if err != nil {
		t.Fatal(err)
	}
	term := uint64(core.MakeTerm(3, core.Tag("me")))
	lead := func(name string, self bool) {
		r.Record(election.Update{Election: name, Term: term, TermChanged: true, LeaderChanged: true,
			Leader:   election.Leadership{Coordinator: "me", Term: term, IsSelf: self},
			Counters: core.Counters{ElectionsStarted: 1, ElectionsWon: 1}})
	}
	lead("", false) // the unnamed election: election="default"
	lead("a", true)
	lead("b", true) // beyond the cap of 2
	lead("c", true)
	expect(t, "led", testutil.ToFloat64(r.named.led), 3)
	expect(t, "running", testutil.ToFloat64(r.named.running), 4)
	expect(t, "a is_coordinator", testutil.ToFloat64(r.named.isCoordinator.WithLabelValues("a")), 1)
	expect(t, "_other is_coordinator", testutil.ToFloat64(r.named.isCoordinator.WithLabelValues(OtherElections)), 2)
	expect(t, "_other elections won", testutil.ToFloat64(r.named.elections.WithLabelValues(OtherElections, "won")), 2)
	expect(t, "a term epoch", testutil.ToFloat64(r.named.termEpoch.WithLabelValues("a")), 3)
	expect(t, "default coordinator_info", testutil.ToFloat64(r.named.coordinatorInfo.WithLabelValues("default", "me")), 1)
	expect(t, "the unnamed election's is_coordinator", testutil.ToFloat64(r.isCoordinator), 0)
	r.Record(election.Update{Election: "a", Sent: [core.NumMsgTypes]uint64{core.MsgHeartbeat: 5}})
	expect(t, "heartbeats sent, every election", testutil.ToFloat64(r.sentBy[core.MsgHeartbeat]), 5)
	expect(t, "the unnamed election's leader changes", testutil.ToFloat64(r.leaderChanges), 1)

	r.Record(election.Update{Election: "a", Ended: true, LeaderChanged: true})
	expect(t, "led after a ended", testutil.ToFloat64(r.named.led), 2)
	expect(t, "a's series", float64(testutil.CollectAndCount(r.named.isCoordinator)), 2) // default, _other
	lead("d", false)                                                                     // takes a's label value
	expect(t, "d is_coordinator", testutil.ToFloat64(r.named.isCoordinator.WithLabelValues("d")), 0)
	r.Record(election.Update{Election: "b", Ended: true, LeaderChanged: true})
	expect(t, "_other is_coordinator after b ended", testutil.ToFloat64(r.named.isCoordinator.WithLabelValues(OtherElections)), 1)
	lint(t, reg)
	if _, err := New(prometheus.NewRegistry(), WithElectionLabels(-1)); err == nil {
		t.Error("WithElectionLabels(-1) accepted")
	}
}
