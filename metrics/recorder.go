package metrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

const namespace = "coordelect"

// resultNames are the values of the result label of
// coordelect_elections_total, in the order count adds them.
var resultNames = [...]string{"started", "won", "lost", "restarted"}

const numResults = len(resultNames)

// NodeLabel is the constant label WithNode adds to every series.
const NodeLabel = "node"

// DefaultDurationBuckets are the buckets of
// coordelect_election_duration_seconds: from 10 ms (a failover with the
// default timings on a LAN takes a few hundred) to 30 s (memberlist's
// slowest dead-node verdict).
var DefaultDurationBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30}

// Recorder records one Elector's metrics in Prometheus collectors; it
// implements election.Recorder. Its methods are safe for concurrent use,
// although an Elector calls them from its loop goroutine only.
type Recorder struct {
	reg        prometheus.Registerer
	registered []prometheus.Collector
	detach     func() // stops memberlist routing; nil without WithMemberlist

	term            prometheus.Gauge
	termEpoch       prometheus.Gauge
	isCoordinator   prometheus.Gauge
	deposed         prometheus.Counter
	coordinatorInfo *prometheus.GaugeVec
	state           *prometheus.GaugeVec
	sent            *prometheus.CounterVec
	received        *prometheus.CounterVec
	dropped         *droppedCollector
	elections       *prometheus.CounterVec
	started         *prometheus.CounterVec
	duration        prometheus.Histogram
	leaderChanges   prometheus.Counter
	members         *prometheus.GaugeVec
	heartbeatMisses prometheus.Counter
	quorumLease     prometheus.Gauge
	sittingOut      prometheus.Gauge

	// The children of the labelled counters, looked up once.
	sentBy, receivedBy [core.NumMsgTypes]prometheus.Counter
	droppedBy          [core.NumDropReasons]prometheus.Counter
	sendFailed         prometheus.Counter
	electionsBy        [numResults]prometheus.Counter
	startedBy          [core.NumElectionCauses]prometheus.Counter
	alive, dead        prometheus.Gauge

	// named are the coordelect_named_* families (named.go).
	named *namedMetrics

	mu          sync.Mutex
	coordinator string // the coordinator_info label value set to 1, or ""
	current     core.State
}

var _ election.Recorder = (*Recorder)(nil)

// New registers the coordelect metrics on reg and returns the Recorder that
// updates them. Every labelled series exists from the start (at zero), and
// the node starts in state sleep. It fails if reg is nil, an option is
// invalid, or a collector cannot be registered (for example a second
// Recorder on the same Registerer without a distinct WithNode); then
// nothing stays registered.
func New(reg prometheus.Registerer, opts ...Option) (*Recorder, error) {
	if reg == nil {
		return nil, errors.New("metrics: New: nil Registerer")
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.node != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{NodeLabel: o.node}, reg)
	}
	r := newRecorder(o)
	r.reg = reg
	if err := r.register(o); err != nil {
		r.Unregister()
		return nil, err
	}
	r.initialise()
	return r, nil
}

func newRecorder(o options) *Recorder {
	r := &Recorder{
		term: prometheus.NewGauge(gaugeOpts("term",
			"Highest election term this node has seen: epoch<<32 | the winning node's tag. "+
				"Unique per coordinator; it only grows.")),
		termEpoch: prometheus.NewGauge(gaugeOpts("term_epoch",
			"The epoch of coordelect_term (its high 32 bits): the number of the election that made it. "+
				"Exact as a float64, unlike the term above 2^53.")),
		isCoordinator: prometheus.NewGauge(gaugeOpts("is_coordinator",
			"1 while this node is the coordinator, else 0.")),
		deposed: prometheus.NewCounter(counterOpts("leader_deposed_total",
			"Times this node, while it led, learned of a coordinator in a higher term: "+
				"both led at once, for at least a message delay (a preemption, a healed partition).")),
		coordinatorInfo: prometheus.NewGaugeVec(gaugeOpts("coordinator_info",
			"1 for the coordinator this node currently follows (itself when it leads); "+
				"no series while it knows none."), []string{"coordinator"}),
		state: prometheus.NewGaugeVec(gaugeOpts("state",
			"1 for the node's current election state, 0 for the others."), []string{"state"}),
		sent: prometheus.NewCounterVec(counterOpts("messages_sent_total",
			"Election messages handed to the transport, by message type."), []string{"type"}),
		received: prometheus.NewCounterVec(counterOpts("messages_received_total",
			"Election messages accepted by the state machine, by message type."), []string{"type"}),
		dropped: newDroppedCollector(o.transport),
		elections: prometheus.NewCounterVec(counterOpts("elections_total",
			"Election events on this node: started (or joined), won, lost, restarted after a timeout."),
			[]string{"result"}),
		started: prometheus.NewCounterVec(counterOpts("elections_started_total",
			"Elections this node started, by cause: startup, silence (its detector gave up on the coordinator's heartbeats), "+
				"down (membership reported the coordinator down), handoff, leaderless, challenge (another member's "+
				"election message), restart (an election ran out of time), preempt."),
			[]string{"cause"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "election_duration_seconds",
			Help: "Time this node went without an agreed coordinator, from detecting the need " +
				"for an election to knowing a coordinator again.",
			Buckets: o.buckets,
		}),
		leaderChanges: prometheus.NewCounter(counterOpts("leader_changes_total",
			"Changes of the coordinator this node reports, to a new coordinator or a new term.")),
		members: prometheus.NewGaugeVec(gaugeOpts("members",
			"Members this node knows, itself included, by liveness (alive or dead)."), []string{"state"}),
		heartbeatMisses: prometheus.NewCounter(counterOpts("heartbeat_misses_total",
			"Heartbeat intervals this node, as a follower, spent without hearing its coordinator.")),
		quorumLease: prometheus.NewGauge(gaugeOpts("quorum_lease_seconds",
			"The quorum lease this node asks its voters for while it is coordinator with the quorum guard: "+
				"QuorumLease, or longer while its heartbeat round trips are slow (QuorumLeaseMax); 0 otherwise. "+
				"A failover after its crash waits this long for the voters' promises.")),
		sittingOut: prometheus.NewGauge(gaugeOpts("sitting_out",
			"1 while this ring member, with the quorum guard, stays out of elections because it found it "+
				"cannot reach a majority of QuorumSize (its hops or pre-vote went unanswered); 0 otherwise.")),
		named: newNamedMetrics(o.electionLabels),
	}
	return r
}

func gaugeOpts(name, help string) prometheus.GaugeOpts {
	return prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}
}

func counterOpts(name, help string) prometheus.CounterOpts {
	return prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}
}

// register registers every collector on r.reg, then the optional ones.
func (r *Recorder) register(o options) error {
	cs := []prometheus.Collector{
		r.term, r.termEpoch, r.isCoordinator, r.deposed, r.coordinatorInfo, r.state, r.sent, r.received,
		r.dropped, r.elections, r.started, r.duration, r.leaderChanges, r.members, r.heartbeatMisses, r.quorumLease,
		r.sittingOut,
	}
	cs = append(cs, r.named.collectors()...)
	if o.transport != nil {
		cs = append(cs, newTransportCollector(o.transport))
	}
	for _, c := range cs {
		if err := r.reg.Register(c); err != nil {
			return fmt.Errorf("metrics: New: %w", err)
		}
		r.registered = append(r.registered, c)
	}
	if o.sink != nil {
		detach, err := o.sink.Attach(o.sinkNode, r.reg)
		if err != nil {
			return fmt.Errorf("metrics: New: %w", err)
		}
		r.detach = detach
	}
	return nil
}

// initialise creates every known label value at zero and caches the
// children that are updated per message.
func (r *Recorder) initialise() {
	for _, t := range core.MsgTypes() {
		r.sentBy[t] = r.sent.WithLabelValues(t.String())
		r.receivedBy[t] = r.received.WithLabelValues(t.String())
	}
	for i, res := range resultNames {
		r.electionsBy[i] = r.elections.WithLabelValues(res)
	}
	for c := range core.ElectionCause(core.NumElectionCauses) {
		r.startedBy[c] = r.started.WithLabelValues(c.String())
	}
	r.dropped.initialise()
	for reason := range core.DropReason(core.NumDropReasons) {
		r.droppedBy[reason] = r.dropped.byReason[reason.String()]
	}
	r.sendFailed = r.dropped.byReason[election.DropSendFailed]
	r.alive = r.members.WithLabelValues("alive")
	r.dead = r.members.WithLabelValues("dead")
	for _, s := range core.States() {
		r.state.WithLabelValues(s.String())
	}
	r.setState(core.StateSleep)
}

// Unregister removes the Recorder's collectors from its Registerer and
// stops routing memberlist metrics to it, so that a node restarted in the
// same process can register again. The Recorder keeps working but is no
// longer exported. It is safe to call more than once.
func (r *Recorder) Unregister() {
	r.mu.Lock()
	cs, detach := r.registered, r.detach
	r.registered, r.detach = nil, nil
	r.mu.Unlock()
	for _, c := range cs {
		r.reg.Unregister(c)
	}
	if detach != nil {
		detach()
	}
}

// Record updates the metrics with what changed in an Update:
// coordelect_state, _term, _term_epoch, _is_coordinator,
// _coordinator_info, _leader_deposed_total, _leader_changes_total,
// _members, _quorum_lease_seconds and _sitting_out where the Update says they are new; the message, election and
// heartbeat-miss counters by its counts; _election_duration_seconds when an
// election ended.
//
// An Update of a named election (Update.Election other than "" and
// election.DefaultName) updates its coordelect_named_* series and adds
// its messages to the coordelect_messages_*_total counters; the other
// families are the unnamed election's (named.go).
func (r *Recorder) Record(u election.Update) {
	r.mu.Lock()
	r.named.record(u.Election, &u)
	r.mu.Unlock()
	if u.Election != "" && u.Election != election.DefaultName {
		r.countMessages(&u)
		return
	}
	if u.StateChanged {
		r.setState(u.State)
	}
	if u.TermChanged {
		r.setTerm(u.Term)
	}
	if u.LeaderChanged {
		r.setLeader(u.Leader)
		if u.Leader.Known() {
			r.leaderChanges.Inc()
		}
	}
	if u.MembersChanged {
		r.alive.Set(float64(u.Alive))
		r.dead.Set(float64(max(u.Known-u.Alive, 0)))
	}
	if u.LeaseChanged {
		r.quorumLease.Set(u.Lease.Seconds())
	}
	if u.SittingOutChanged {
		v := 0.0
		if u.SittingOut {
			v = 1
		}
		r.sittingOut.Set(v)
	}
	r.count(&u)
	if u.ElectionEnded {
		r.duration.Observe(u.ElectionDuration.Seconds())
	}
}

// setState sets the one-hot coordelect_state gauge.
func (r *Recorder) setState(s core.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.WithLabelValues(r.current.String()).Set(0)
	r.state.WithLabelValues(s.String()).Set(1)
	r.current = s
}

// setTerm sets coordelect_term and coordelect_term_epoch. A gauge holds a
// float64: the term is exact below 2^53 (epochs below 2^21), the epoch
// always.
func (r *Recorder) setTerm(term uint64) {
	r.term.Set(float64(term))
	r.termEpoch.Set(float64(core.Term(term).Epoch()))
}

// setLeader sets coordelect_is_coordinator and moves
// coordelect_coordinator_info to the new coordinator, deleting the old
// coordinator's series (none while no coordinator is known).
func (r *Recorder) setLeader(l election.Leadership) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.IsSelf {
		r.isCoordinator.Set(1)
	} else {
		r.isCoordinator.Set(0)
	}
	if l.Coordinator == r.coordinator {
		return
	}
	if r.coordinator != "" {
		r.coordinatorInfo.DeleteLabelValues(r.coordinator)
	}
	r.coordinator = l.Coordinator
	if l.Coordinator != "" {
		r.coordinatorInfo.WithLabelValues(l.Coordinator).Set(1)
	}
}

// count adds an Update's counts to coordelect_messages_sent_total{type},
// _messages_received_total{type}, _messages_dropped_total{reason},
// _elections_total{result}, _elections_started_total{cause} and
// _heartbeat_misses_total.
func (r *Recorder) count(u *election.Update) {
	r.countMessages(u)
	for i, n := range [numResults]uint64{u.ElectionsStarted, u.ElectionsWon, u.ElectionsLost, u.ElectionsRestarted} {
		add(r.electionsBy[i], n)
	}
	if u.Cause < core.NumElectionCauses {
		add(r.startedBy[u.Cause], u.ElectionsStarted)
	}
	add(r.heartbeatMisses, u.HeartbeatMisses)
	add(r.deposed, u.Deposed) // counted by the core (core.Counters.Deposed)
}

// add adds n to c unless it is 0 (a message type without a series has a
// nil c, and never a count).
func add(c prometheus.Counter, n uint64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// countMessages adds an Update's message counts to
// coordelect_messages_sent_total{type}, _messages_received_total{type}
// and _messages_dropped_total{reason}.
func (r *Recorder) countMessages(u *election.Update) {
	for t := range u.Sent {
		add(r.sentBy[t], u.Sent[t])
		add(r.receivedBy[t], u.Received[t])
	}
	for reason, n := range u.Dropped {
		add(r.droppedBy[reason], n)
	}
	add(r.sendFailed, u.SendFailed)
}
