package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// Named elections (election.Elector.Election) have series of their own,
// the coordelect_named_* families, labelled by the election's name, the
// unnamed election included (election="default"). The older families
// (coordelect_term, _is_coordinator, _state, ...) stay the unnamed
// election's, unlabelled, as before named elections existed, but for the
// message counters (coordelect_messages_*_total), which count the
// messages of every election this member runs.
//
// The label values are capped (WithElectionLabels, default
// DefaultElectionLabels): a name takes a value of its own if fewer than
// the cap hold one when its first Update comes, and keeps it until it
// ends; the others share OtherElections, whose series sum theirs
// (_is_coordinator counts the names this member leads among them, and
// they have no _term_epoch or _coordinator_info).

// ElectionLabel is the label of the coordelect_named_* series.
const ElectionLabel = "election"

// OtherElections is the election label value of the names beyond the cap
// (WithElectionLabels).
const OtherElections = "_other"

// DefaultElectionLabels is how many names get an election label value of
// their own by default.
const DefaultElectionLabels = 100

// WithElectionLabels caps the election label values of the
// coordelect_named_* series at n names (n >= 0; 0: every name is
// OtherElections). Default DefaultElectionLabels.
func WithElectionLabels(n int) Option {
	return func(o *options) { o.electionLabels, o.electionLabelsSet = n, true }
}

// namedMetrics are the coordelect_named_* families and what they need to
// know of each name.
type namedMetrics struct {
	isCoordinator   *prometheus.GaugeVec
	termEpoch       *prometheus.GaugeVec
	coordinatorInfo *prometheus.GaugeVec
	elections       *prometheus.CounterVec
	leaderChanges   *prometheus.CounterVec
	led             prometheus.Gauge
	running         prometheus.Gauge

	max      int              // election label values of their own, at most
	labelled int              // names that hold one
	names    map[string]*name // the names that have not ended
}

// name is what the Recorder keeps of one election.
type name struct {
	label       string // its own name, or OtherElections
	leading     bool
	coordinator string // the coordinator_info value set to 1, or ""
}

func newNamedMetrics(max int) *namedMetrics {
	return &namedMetrics{
		isCoordinator: prometheus.NewGaugeVec(gaugeOpts("named_is_coordinator",
			"1 while this member leads the election, else 0; for election=_other, how many of the names beyond "+
				"the label cap it leads."), []string{ElectionLabel}),
		termEpoch: prometheus.NewGaugeVec(gaugeOpts("named_term_epoch",
			"The epoch of the election's highest term this member has seen (the number of the election that made it)."),
			[]string{ElectionLabel}),
		coordinatorInfo: prometheus.NewGaugeVec(gaugeOpts("named_coordinator_info",
			"1 for the coordinator this member follows in the election (itself when it leads); no series while it knows none."),
			[]string{ElectionLabel, "coordinator"}),
		elections: prometheus.NewCounterVec(counterOpts("named_elections_total",
			"Election events of the election on this member: started (or joined), won, lost, restarted after a timeout."),
			[]string{ElectionLabel, "result"}),
		leaderChanges: prometheus.NewCounterVec(counterOpts("named_leader_changes_total",
			"Changes of the coordinator this member reports for the election, to a new coordinator or a new term."),
			[]string{ElectionLabel}),
		led: prometheus.NewGauge(gaugeOpts("named_led",
			"How many elections this member leads, the unnamed one included: the leaders per member.")),
		running: prometheus.NewGauge(gaugeOpts("named_running",
			"How many elections this member runs, the unnamed one included.")),
		max:   max,
		names: make(map[string]*name),
	}
}

func (n *namedMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{n.isCoordinator, n.termEpoch, n.coordinatorInfo, n.elections, n.leaderChanges, n.led, n.running}
}

// record takes an Update of the election called id ("" is the unnamed
// one); r.mu is held.
func (n *namedMetrics) record(id string, u *election.Update) {
	if id == "" {
		id = election.DefaultName
	}
	x := n.names[id]
	if x == nil {
		if u.Ended {
			return
		}
		x = &name{label: OtherElections}
		if n.labelled < n.max {
			x.label = id
			n.labelled++
			n.isCoordinator.WithLabelValues(id).Set(0)
			n.leaderChanges.WithLabelValues(id)
			for _, res := range resultNames {
				n.elections.WithLabelValues(id, res)
			}
		}
		n.names[id] = x
		n.running.Inc()
	}
	own := x.label != OtherElections
	if u.LeaderChanged {
		n.setLeader(x, u.Leader, own)
	}
	if u.TermChanged && own {
		n.termEpoch.WithLabelValues(x.label).Set(float64(core.Term(u.Term).Epoch()))
	}
	for i, k := range [numResults]uint64{u.ElectionsStarted, u.ElectionsWon, u.ElectionsLost, u.ElectionsRestarted} {
		if k > 0 {
			n.elections.WithLabelValues(x.label, resultNames[i]).Add(float64(k))
		}
	}
	if u.Ended {
		n.end(id, x, own)
	}
}

// setLeader follows the election's leadership.
func (n *namedMetrics) setLeader(x *name, l election.Leadership, own bool) {
	if l.IsSelf != x.leading {
		d := 1.0
		if !l.IsSelf {
			d = -1
		}
		n.led.Add(d)
		if own {
			n.isCoordinator.WithLabelValues(x.label).Set(max(d, 0))
		} else {
			n.isCoordinator.WithLabelValues(x.label).Add(d)
		}
		x.leading = l.IsSelf
	}
	if l.Known() {
		n.leaderChanges.WithLabelValues(x.label).Inc()
	}
	if !own || l.Coordinator == x.coordinator {
		return
	}
	if x.coordinator != "" {
		n.coordinatorInfo.DeleteLabelValues(x.label, x.coordinator)
	}
	x.coordinator = l.Coordinator
	if l.Coordinator != "" {
		n.coordinatorInfo.WithLabelValues(x.label, l.Coordinator).Set(1)
	}
}

// end forgets an election that ended: its own series go, and its label
// value is free for a name that starts later.
func (n *namedMetrics) end(id string, x *name, own bool) {
	n.setLeader(x, election.Leadership{}, own)
	delete(n.names, id)
	n.running.Dec()
	if !own {
		return
	}
	n.labelled--
	n.isCoordinator.DeleteLabelValues(x.label)
	n.termEpoch.DeleteLabelValues(x.label)
	n.leaderChanges.DeleteLabelValues(x.label)
	for _, res := range resultNames {
		n.elections.DeleteLabelValues(x.label, res)
	}
}
