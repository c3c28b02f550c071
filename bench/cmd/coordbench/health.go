package main

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	gometrics "github.com/hashicorp/go-metrics"
)

// healthSink is the process's go-metrics sink under -health: it sums what
// every memberlist instance of the process reports (memberlist has no
// per-instance sink), per key, over one window, and keeps each node's last
// health score. It is how the bench sees memberlist's failure detection
// degrade (suspicions, deaths, refutations, Lifeguard's health scores)
// before a round stalls.
type healthSink struct {
	mu     sync.Mutex
	counts map[string]float64 // counter key → sum in the window
	maxes  map[string]float32 // sample key → largest value in the window
	scores map[string]float32 // node → last health score
}

var _ gometrics.MetricSink = (*healthSink)(nil)

func newHealthSink() *healthSink {
	return &healthSink{counts: map[string]float64{}, maxes: map[string]float32{}, scores: map[string]float32{}}
}

func (s *healthSink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }

func (s *healthSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	if strings.Join(key, ".") != "memberlist.health.score" {
		return
	}
	node := ""
	for _, l := range labels {
		if l.Name == healthNodeLabel {
			node = l.Value
		}
	}
	s.mu.Lock()
	s.scores[node] = val
	s.mu.Unlock()
}

func (s *healthSink) EmitKey(key []string, val float32) {}

func (s *healthSink) IncrCounter(key []string, val float32) { s.IncrCounterWithLabels(key, val, nil) }

func (s *healthSink) IncrCounterWithLabels(key []string, val float32, _ []gometrics.Label) {
	k := strings.Join(key, ".")
	s.mu.Lock()
	s.counts[k] += float64(val)
	s.mu.Unlock()
}

func (s *healthSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }

func (s *healthSink) AddSampleWithLabels(key []string, val float32, _ []gometrics.Label) {
	k := strings.Join(key, ".")
	s.mu.Lock()
	s.counts[k+".n"]++
	if val > s.maxes[k] {
		s.maxes[k] = val
	}
	s.mu.Unlock()
}

// window returns the window's sums and maxima and starts a new window;
// scores are the nodes' last health scores (kept across windows).
func (s *healthSink) window() (counts map[string]float64, maxes map[string]float32, scored int, maxScore float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts, maxes = s.counts, s.maxes
	s.counts, s.maxes = map[string]float64{}, map[string]float32{}
	for _, v := range s.scores {
		if v > 0 {
			scored++
		}
		maxScore = max(maxScore, v)
	}
	return counts, maxes, scored, maxScore
}

// forget drops a stopped node's score.
func (s *healthSink) forget(node string) {
	s.mu.Lock()
	delete(s.scores, node)
	s.mu.Unlock()
}

// healthNodeLabel is the go-metrics label -health puts on every member's
// memberlist metrics (memberlist.Config.MetricLabels).
const healthNodeLabel = "node"

// installHealthSink makes a new healthSink go-metrics' global sink.
func installHealthSink() (*healthSink, error) {
	s := newHealthSink()
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics, cfg.TimerGranularity = false, false, time.Millisecond
	if _, err := gometrics.NewGlobal(cfg, s); err != nil {
		return nil, fmt.Errorf("-health: installing the go-metrics sink: %w", err)
	}
	return s, nil
}

// runtimeHealth reads the Go scheduler's latency and the GC's pauses.
type runtimeHealth struct {
	samples []metrics.Sample
	last    [2]*metrics.Float64Histogram
	cycles  uint64
}

func newRuntimeHealth() *runtimeHealth {
	r := &runtimeHealth{samples: []metrics.Sample{
		{Name: "/sched/latencies:seconds"},
		{Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}}
	r.read()
	return r
}

// read returns, for the time since the last read, the scheduler latency's
// 99th percentile and maximum (how long runnable goroutines waited for a
// thread) and the longest GC pause, each as a histogram bucket's upper
// bound, and the GC cycles completed.
func (r *runtimeHealth) read() (schedP99, schedMax, gcMax time.Duration, gcCycles uint64) {
	metrics.Read(r.samples)
	if v := r.samples[2].Value; v.Kind() == metrics.KindUint64 {
		gcCycles, r.cycles = v.Uint64()-r.cycles, v.Uint64()
	}
	var out [3]time.Duration
	for i, s := range r.samples[:2] {
		if s.Value.Kind() != metrics.KindFloat64Histogram {
			continue
		}
		h := s.Value.Float64Histogram()
		cur := &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
		prev := r.last[i]
		r.last[i] = cur
		if prev == nil {
			continue
		}
		var total uint64
		delta := make([]uint64, len(cur.Counts))
		for j := range cur.Counts {
			delta[j] = cur.Counts[j] - prev.Counts[j]
			total += delta[j]
		}
		p99, mx := histQuantile(cur.Buckets, delta, total, 0.99), histQuantile(cur.Buckets, delta, total, 1)
		if i == 0 {
			out[0], out[1] = p99, mx
		} else {
			out[2] = mx
		}
	}
	return out[0], out[1], out[2], gcCycles
}

// histQuantile is the upper bound of the bucket that holds quantile q of
// the counts (q = 1: the highest nonempty bucket).
func histQuantile(buckets []float64, counts []uint64, total uint64, q float64) time.Duration {
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for j, c := range counts {
		seen += c
		if seen >= want && c > 0 {
			ub := buckets[j+1]
			if math.IsInf(ub, 1) {
				ub = buckets[j]
			}
			return time.Duration(ub * float64(time.Second))
		}
	}
	return 0
}

// logHealth logs a line every d until stop is called: the scheduler's
// latency, the GC's pauses and cycles in the window, and what memberlist reported
// (messages about suspected, dead and alive members; Lifeguard's degraded
// probes and the nodes with a health score above 0; the longest probe and
// push-pull). A stall of a large cluster in one process starts there.
func logHealth(log hclog.Logger, sink *healthSink, d time.Duration) (stop func()) {
	done := make(chan struct{})
	rt := newRuntimeHealth()
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			p99, mx, gc, cycles := rt.read()
			c, m, scored, maxScore := sink.window()
			log.Info("health", "sched_p99", p99.Round(time.Microsecond), "sched_max", mx.Round(time.Microsecond), "gc_pause_max", gc.Round(time.Microsecond),
				"gc_cycles", cycles,
				"goroutines", runtime.NumGoroutine(),
				"suspect", c["memberlist.msg.suspect"], "dead", c["memberlist.msg.dead"], "alive", c["memberlist.msg.alive"],
				"degraded_probe", c["memberlist.degraded.probe"], "degraded_timeout", c["memberlist.degraded.timeout"],
				"scored_nodes", scored, "max_score", maxScore,
				"probes", c["memberlist.probeNode.n"], "probe_max_ms", m["memberlist.probeNode"],
				"pushpulls", c["memberlist.pushPullNode.n"], "pushpull_max_ms", m["memberlist.pushPullNode"],
				"gossip_max_ms", m["memberlist.gossip"], "broadcast_queue_max", m["memberlist.queue.broadcasts"],
				"tcp_connects", c["memberlist.tcp.connect"])
		}
	}()
	return func() { close(done) }
}
