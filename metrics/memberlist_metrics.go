package metrics

import (
	"errors"

	gometrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// sampleKind is the go-metrics call a sample came from.
type sampleKind uint8

const (
	gaugeSample sampleKind = iota
	counterSample
	sampleSample
)

// memberlistDurationBuckets cover a gossip round (well under a
// millisecond on a LAN) to a probe that waits out the indirect probes (up
// to the probe interval: 1 s LAN, 5 s WAN).
var memberlistDurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// The label values memberlist uses, created at zero.
var (
	memberlistNodeStates = []string{"alive", "suspect", "dead", "left"}
	memberlistStateMsgs  = []string{"alive", "suspect", "dead"}
	memberlistProtocols  = []string{"udp", "tcp"}
)

// memberlistMetrics are one node's memberlist collectors.
type memberlistMetrics struct {
	health         prometheus.Gauge
	probe          prometheus.Histogram
	gossip         prometheus.Histogram
	pushPull       prometheus.Histogram
	degraded       *prometheus.CounterVec
	stateMsgs      *prometheus.CounterVec
	tcpAccepts     prometheus.Counter
	tcpConnects    prometheus.Counter
	sentBytes      *prometheus.CounterVec
	udpReceived    prometheus.Counter
	nodes          *prometheus.GaugeVec
	broadcastQueue prometheus.Gauge
	remoteState    prometheus.Gauge
}

func mlName(name string) string { return namespace + "_memberlist_" + name }

func newMemberlistMetrics() *memberlistMetrics {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: mlName(name), Help: help})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: mlName(name), Help: help})
	}
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: mlName(name), Help: help, Buckets: memberlistDurationBuckets})
	}
	counterVec := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: mlName(name), Help: help}, []string{label})
	}
	return &memberlistMetrics{
		health: gauge("health_score", "memberlist's awareness (Lifeguard) health score: 0 is healthy; "+
			"it grows to AwarenessMaxMultiplier-1 as this node's own probes fail, and scales its timeouts."),
		probe:    hist("probe_duration_seconds", "Duration of one memberlist failure-detection probe of a peer."),
		gossip:   hist("gossip_duration_seconds", "Duration of one memberlist gossip round."),
		pushPull: hist("push_pull_duration_seconds", "Duration of one memberlist full state sync (push/pull) with a peer."),
		degraded: counterVec("degraded_total", "memberlist degradations: probe (a probe interval stretched by a "+
			"poor health score), timeout (a suspect declared dead without enough confirmations).", "kind"),
		stateMsgs: counterVec("state_messages_total",
			"memberlist state messages (alive, suspect, dead) this node processed.", "type"),
		tcpAccepts:  counter("tcp_accepts_total", "TCP connections memberlist accepted."),
		tcpConnects: counter("tcp_connects_total", "TCP connections memberlist opened."),
		sentBytes:   counterVec("sent_bytes_total", "Bytes memberlist sent, by protocol.", "protocol"),
		udpReceived: counter("udp_received_bytes_total", "Bytes memberlist received over UDP."),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mlName("nodes"),
			Help: "Nodes in this node's memberlist view by state, as of its last push/pull."}, []string{"state"}),
		broadcastQueue: gauge("broadcast_queue_depth", "Broadcasts queued in memberlist at the last check."),
		remoteState: gauge("push_pull_remote_state_bytes", "Size of the encrypted state this node received in its "+
			"last push/pull; memberlist reports it only when gossip is encrypted (SecretKey or Keyring set)."),
	}
}

func (m *memberlistMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.health, m.probe, m.gossip, m.pushPull, m.degraded, m.stateMsgs, m.tcpAccepts,
		m.tcpConnects, m.sentBytes, m.udpReceived, m.nodes, m.broadcastQueue, m.remoteState,
	}
}

// register registers every collector on reg, with every label value at
// zero; on error it unregisters what it registered.
func (m *memberlistMetrics) register(reg prometheus.Registerer) error {
	for i, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors()[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	m.degraded.WithLabelValues("probe")
	m.degraded.WithLabelValues("timeout")
	for _, v := range memberlistStateMsgs {
		m.stateMsgs.WithLabelValues(v)
	}
	for _, v := range memberlistProtocols {
		m.sentBytes.WithLabelValues(v)
	}
	for _, v := range memberlistNodeStates {
		m.nodes.WithLabelValues(v)
	}
	return nil
}

func (m *memberlistMetrics) unregister(reg prometheus.Registerer) {
	for _, c := range m.collectors() {
		reg.Unregister(c)
	}
}

// errUnknownKey is returned by record for keys it does not export.
var errUnknownKey = errors.New("unknown memberlist key")

// record applies one sample. key is memberlist's, possibly behind a
// go-metrics service or host prefix; timers arrive in milliseconds.
func (m *memberlistMetrics) record(k sampleKind, key []string, val float32, labels []gometrics.Label) error {
	for len(key) > 0 && key[0] != "memberlist" {
		key = key[1:]
	}
	v := float64(val)
	if len(key) < 2 || k == counterSample && v < 0 {
		return errUnknownKey // a counter cannot go down
	}
	switch key[1] {
	case "health":
		m.health.Set(v)
	case "probeNode":
		m.probe.Observe(v / 1000)
	case "gossip":
		m.gossip.Observe(v / 1000)
	case "pushPullNode":
		m.pushPull.Observe(v / 1000)
	case "queue":
		m.broadcastQueue.Set(v)
	default:
		return m.recordSub(key, v, labels)
	}
	return nil
}

// recordSub handles the keys of three parts (memberlist.group.name).
func (m *memberlistMetrics) recordSub(key []string, v float64, labels []gometrics.Label) error {
	if len(key) < 3 {
		return errUnknownKey
	}
	switch key[1] + "." + key[2] {
	case "degraded.probe", "degraded.timeout":
		m.degraded.WithLabelValues(key[2]).Add(v)
	case "msg.alive", "msg.suspect", "msg.dead":
		m.stateMsgs.WithLabelValues(key[2]).Add(v)
	case "tcp.accept":
		m.tcpAccepts.Add(v)
	case "tcp.connect":
		m.tcpConnects.Add(v)
	case "tcp.sent", "udp.sent":
		m.sentBytes.WithLabelValues(key[1]).Add(v)
	case "udp.received":
		m.udpReceived.Add(v)
	case "size.local":
		// Not exported: memberlist v0.7.0 (net.go, sendLocalState) reports
		// bytes 1..5 of its push/pull buffer, the start of the msgpack
		// header, not a size (about 2.2e9 on every node).
		return errUnknownKey
	case "size.remote":
		m.remoteState.Set(v)
	case "node.instances":
		return m.recordNodes(v, labels)
	default:
		return errUnknownKey
	}
	return nil
}

func (m *memberlistMetrics) recordNodes(v float64, labels []gometrics.Label) error {
	for _, l := range labels {
		if l.Name == "node_state" {
			m.nodes.WithLabelValues(l.Value).Set(v)
			return nil
		}
	}
	return errUnknownKey
}
