package metrics

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// MemberlistLabel is the go-metrics label ConfigureMemberlist puts on every
// metric a memberlist instance emits; MemberlistSink routes by its value.
const MemberlistLabel = "coordelect_node"

// MemberlistLabels returns the go-metrics labels that identify node's
// memberlist instance to a MemberlistSink (memberlist.Config.MetricLabels).
func MemberlistLabels(node string) []gometrics.Label {
	return []gometrics.Label{{Name: MemberlistLabel, Value: node}}
}

// ConfigureMemberlist returns a function that adds MemberlistLabels(node)
// to a memberlist configuration; it fits membership.Config.Memberlist:
//
//	cfg.Memberlist = metrics.ConfigureMemberlist(cfg.Name)
//
// (compose it with your own function if you already tune memberlist there).
func ConfigureMemberlist(node string) func(*memberlist.Config) {
	return func(c *memberlist.Config) {
		c.MetricLabels = append(c.MetricLabels, MemberlistLabels(node)...)
	}
}

// MemberlistSink is a go-metrics sink that turns memberlist's metrics into
// Prometheus collectors, one set per node, each registered on that node's
// Registerer (see Attach and WithMemberlist).
//
// memberlist v0.7.0 reports through go-metrics' process-wide global sink;
// it has no per-instance sink. So a process installs one MemberlistSink as
// that global (Install, once), every memberlist instance labels its metrics
// with its node name (ConfigureMemberlist), and the sink routes each sample
// to the collectors of the node it names, without the routing label.
// Samples of unknown nodes, or from other go-metrics users, are dropped
// (counted by Unrouted). It is safe for concurrent use.
type MemberlistSink struct {
	mu       sync.RWMutex
	nodes    map[string]*memberlistMetrics
	unrouted atomic.Uint64
}

var _ gometrics.MetricSink = (*MemberlistSink)(nil)

// NewMemberlistSink returns a sink with no node attached.
func NewMemberlistSink() *MemberlistSink {
	return &MemberlistSink{nodes: make(map[string]*memberlistMetrics)}
}

// GoMetricsConfig is the go-metrics configuration Install uses: no
// service or host prefix or label, no runtime metrics (they would start a
// goroutine), timers in milliseconds (the sink converts them to seconds).
// Use it if you install the sink yourself, e.g. in a gometrics.FanoutSink
// beside your own sinks.
func GoMetricsConfig() *gometrics.Config {
	c := gometrics.DefaultConfig("")
	c.HostName = ""
	c.EnableHostname = false
	c.EnableRuntimeMetrics = false
	c.TimerGranularity = time.Millisecond
	return c
}

// MustInstallMemberlistSink returns a new MemberlistSink installed as
// go-metrics' global sink (Install), for a main package. It panics if
// go-metrics refuses it, which it does only for a configuration it cannot
// use: GoMetricsConfig is fixed, so that is a defect, not a condition to
// handle.
func MustInstallMemberlistSink() *MemberlistSink {
	s := NewMemberlistSink()
	if err := s.Install(); err != nil {
		panic(err)
	}
	return s
}

// Install makes s go-metrics' global sink, with GoMetricsConfig. It
// replaces whatever sink the process had: call it once, early, from main.
func (s *MemberlistSink) Install() error {
	if _, err := gometrics.NewGlobal(GoMetricsConfig(), s); err != nil {
		return fmt.Errorf("metrics: installing the memberlist sink: %w", err)
	}
	return nil
}

// Attach registers the coordelect_memberlist_* collectors of node on reg
// and routes node's samples to them. If node is already attached, the new
// collectors take over its samples (a node restarted in the same process
// whose old Recorder was not unregistered). detach unregisters the
// collectors and, unless a later Attach took over, stops the routing; it
// is idempotent.
func (s *MemberlistSink) Attach(node string, reg prometheus.Registerer) (detach func(), err error) {
	if node == "" {
		return nil, fmt.Errorf("metrics: MemberlistSink.Attach: empty node name")
	}
	m := newMemberlistMetrics()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := m.register(reg); err != nil {
		return nil, fmt.Errorf("metrics: MemberlistSink.Attach(%q): %w", node, err)
	}
	s.nodes[node] = m
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.nodes[node] == m {
				delete(s.nodes, node)
			}
			s.mu.Unlock()
			m.unregister(reg)
		})
	}, nil
}

// Unrouted counts samples that named no attached node.
func (s *MemberlistSink) Unrouted() uint64 { return s.unrouted.Load() }

// route finds the node a sample belongs to and the labels left once the
// routing label is removed.
func (s *MemberlistSink) route(labels []gometrics.Label) (*memberlistMetrics, []gometrics.Label) {
	for i, l := range labels {
		if l.Name != MemberlistLabel {
			continue
		}
		s.mu.RLock()
		m := s.nodes[l.Value]
		s.mu.RUnlock()
		if m == nil {
			break
		}
		rest := make([]gometrics.Label, 0, len(labels)-1)
		return m, append(append(rest, labels[:i]...), labels[i+1:]...)
	}
	s.unrouted.Add(1)
	return nil, nil
}

func (s *MemberlistSink) record(k sampleKind, key []string, val float32, labels []gometrics.Label) {
	if m, rest := s.route(labels); m != nil {
		_ = m.record(k, key, val, rest) // keys memberlist does not emit are ignored
	}
}

// SetGauge records an unlabelled gauge: no node to route it to.
func (s *MemberlistSink) SetGauge(key []string, val float32) { s.record(gaugeSample, key, val, nil) }

// SetGaugeWithLabels records a gauge.
func (s *MemberlistSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.record(gaugeSample, key, val, labels)
}

// EmitKey is not used by memberlist; it is ignored.
func (s *MemberlistSink) EmitKey([]string, float32) {}

// IncrCounter records an unlabelled counter: no node to route it to.
func (s *MemberlistSink) IncrCounter(key []string, val float32) {
	s.record(counterSample, key, val, nil)
}

// IncrCounterWithLabels records a counter increment.
func (s *MemberlistSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.record(counterSample, key, val, labels)
}

// AddSample records an unlabelled sample: no node to route it to.
func (s *MemberlistSink) AddSample(key []string, val float32) { s.record(sampleSample, key, val, nil) }

// AddSampleWithLabels records a sample (a timer in milliseconds, or a size).
func (s *MemberlistSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.record(sampleSample, key, val, labels)
}
