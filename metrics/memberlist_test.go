package metrics

import (
	"io"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	gometrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// globalSink is the MemberlistSink this test binary installs as go-metrics'
// global sink, once: memberlist reports nowhere else.
var globalSink = sync.OnceValues(func() (*MemberlistSink, error) {
	s := NewMemberlistSink()
	return s, s.Install()
})

// memberlistKeys are the metrics memberlist v0.7.0 emits (grep
// "metrics\." in its source), with a value and the family they land in.
var memberlistKeys = []struct {
	kind   sampleKind
	key    []string
	labels []gometrics.Label
	family string
}{
	{gaugeSample, []string{"memberlist", "health", "score"}, nil, "coordelect_memberlist_health_score"},
	{sampleSample, []string{"memberlist", "probeNode"}, nil, "coordelect_memberlist_probe_duration_seconds"},
	{sampleSample, []string{"memberlist", "gossip"}, nil, "coordelect_memberlist_gossip_duration_seconds"},
	{sampleSample, []string{"memberlist", "pushPullNode"}, nil, "coordelect_memberlist_push_pull_duration_seconds"},
	{sampleSample, []string{"memberlist", "queue", "broadcasts"}, nil, "coordelect_memberlist_broadcast_queue_depth"},
	{counterSample, []string{"memberlist", "degraded", "probe"}, nil, "coordelect_memberlist_degraded_total"},
	{counterSample, []string{"memberlist", "degraded", "timeout"}, nil, "coordelect_memberlist_degraded_total"},
	{counterSample, []string{"memberlist", "msg", "alive"}, nil, "coordelect_memberlist_state_messages_total"},
	{counterSample, []string{"memberlist", "msg", "suspect"}, nil, "coordelect_memberlist_state_messages_total"},
	{counterSample, []string{"memberlist", "msg", "dead"}, nil, "coordelect_memberlist_state_messages_total"},
	{counterSample, []string{"memberlist", "tcp", "accept"}, nil, "coordelect_memberlist_tcp_accepts_total"},
	{counterSample, []string{"memberlist", "tcp", "connect"}, nil, "coordelect_memberlist_tcp_connects_total"},
	{counterSample, []string{"memberlist", "tcp", "sent"}, nil, "coordelect_memberlist_sent_bytes_total"},
	{counterSample, []string{"memberlist", "udp", "sent"}, nil, "coordelect_memberlist_sent_bytes_total"},
	{counterSample, []string{"memberlist", "udp", "received"}, nil, "coordelect_memberlist_udp_received_bytes_total"},
	{gaugeSample, []string{"memberlist", "node", "instances"}, []gometrics.Label{{Name: "node_state", Value: "suspect"}},
		"coordelect_memberlist_nodes"},
	{sampleSample, []string{"memberlist", "size", "remote"}, nil, "coordelect_memberlist_push_pull_remote_state_bytes"},
}

// TestMemberlistSinkRoutes: every key memberlist emits lands in its
// family on the registry of the node its label names (timers converted to
// seconds); other nodes' and unlabelled samples are counted as unrouted;
// a second Attach takes over; detach unregisters and stops the routing.
func TestMemberlistSinkRoutes(t *testing.T) {
	s := NewMemberlistSink()
	reg := prometheus.NewRegistry()
	detach, err := s.Attach("x", reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range memberlistKeys {
		labels := append(MemberlistLabels("x"), k.labels...)
		send(s, k.kind, k.key, 250, labels)
	}
	f := gather(t, reg)
	for _, k := range memberlistKeys {
		if sum := familySum(f[k.family]); sum == 0 {
			t.Errorf("%v: nothing in %s", k.key, k.family)
		}
	}
	if got := f["coordelect_memberlist_probe_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleSum(); got != 0.25 {
		t.Errorf("probe duration sum = %v s, want 0.25 (250 ms)", got)
	}
	lint(t, reg)
	send(s, gaugeSample, []string{"memberlist", "size", "local"}, 2.2e9, MemberlistLabels("x"))
	for name := range gather(t, reg) {
		if strings.Contains(name, "local_state") {
			t.Errorf("%s exported: memberlist's size.local is not a size", name)
		}
	}

	s.SetGaugeWithLabels([]string{"svc", "memberlist", "health", "score"}, 3, MemberlistLabels("x"))
	expect(t, "health behind a service prefix", familySum(gather(t, reg)["coordelect_memberlist_health_score"]), 3)
	s.IncrCounterWithLabels([]string{"memberlist", "tcp", "accept"}, -1, MemberlistLabels("x"))
	s.IncrCounterWithLabels([]string{"memberlist", "tcp", "accept"}, 1, MemberlistLabels("y"))
	s.IncrCounter([]string{"memberlist", "tcp", "accept"}, 1)
	expect(t, "tcp accepts", familySum(gather(t, reg)["coordelect_memberlist_tcp_accepts_total"]), 250)
	expect(t, "unrouted", float64(s.Unrouted()), 2)

	// A second Attach of x (a restart) takes the samples over; the first
	// detach then leaves its route alone.
	reg2 := prometheus.NewRegistry()
	detach2, err := s.Attach("x", reg2)
	if err != nil {
		t.Fatal(err)
	}
	detach()
	detach()
	if n := len(gather(t, reg)); n != 0 {
		t.Errorf("%d families left after detach", n)
	}
	s.IncrCounterWithLabels([]string{"memberlist", "tcp", "accept"}, 1, MemberlistLabels("x"))
	expect(t, "tcp accepts after a re-attach", familySum(gather(t, reg2)["coordelect_memberlist_tcp_accepts_total"]), 1)
	detach2()
	s.IncrCounterWithLabels([]string{"memberlist", "tcp", "accept"}, 1, MemberlistLabels("x"))
	expect(t, "unrouted after detach", float64(s.Unrouted()), 3)
}

func send(s *MemberlistSink, k sampleKind, key []string, v float32, labels []gometrics.Label) {
	switch k {
	case gaugeSample:
		s.SetGaugeWithLabels(key, v, labels)
	case counterSample:
		s.IncrCounterWithLabels(key, v, labels)
	default:
		s.AddSampleWithLabels(key, v, labels)
	}
}

// TestMemberlistSinkLive runs two real memberlist instances on loopback,
// labelled with ConfigureMemberlist, and checks that their probes, TCP
// connections and health score reach each node's own Recorder registry
// through go-metrics' global sink.
func TestMemberlistSinkLive(t *testing.T) {
	sink, err := globalSink()
	if err != nil {
		t.Fatal(err)
	}
	regs := map[string]*prometheus.Registry{}
	var addr string
	for _, name := range []string{"live-a", "live-b"} {
		regs[name] = prometheus.NewRegistry()
		r, err := New(regs[name], WithMemberlist(sink, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Unregister)
		ml := startMemberlist(t, name)
		if addr == "" {
			addr = ml.LocalNode().Address()
		} else if _, err := ml.Join([]string{addr}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for name, reg := range regs {
		for !memberlistActive(t, reg) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no probes or TCP connections recorded within 10s", name)
			}
			time.Sleep(50 * time.Millisecond) // real sockets: poll
		}
		lint(t, reg)
		// No size is absurd: memberlist v0.7.0's "size.local" is the start
		// of a msgpack header (2.2e9 read as a size), so it is not exported.
		for fname, f := range gather(t, reg) {
			if strings.HasSuffix(fname, "_bytes") && f.GetType() == dto.MetricType_GAUGE && familySum(f) > 1<<20 {
				t.Errorf("%s: %s = %v, far more than two members' state", name, fname, familySum(f))
			}
		}
	}
}

// memberlistActive reports whether reg shows probes and a TCP connection
// (the join's push/pull: connect on one side, accept on the other).
func memberlistActive(t *testing.T, reg prometheus.Gatherer) bool {
	f := gather(t, reg)
	probes := f["coordelect_memberlist_probe_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount()
	tcp := familySum(f["coordelect_memberlist_tcp_connects_total"]) + familySum(f["coordelect_memberlist_tcp_accepts_total"])
	return probes > 0 && tcp > 0 && f["coordelect_memberlist_health_score"] != nil
}

// startMemberlist starts a memberlist instance on 127.0.0.1 with the
// local profile and shuts it down when the test ends.
func startMemberlist(t *testing.T, name string) *memberlist.Memberlist {
	t.Helper()
	cfg := memberlist.DefaultLocalConfig()
	cfg.Name = name
	cfg.BindAddr, cfg.BindPort, cfg.AdvertisePort = "127.0.0.1", 0, 0
	cfg.Logger = log.New(io.Discard, "", 0)
	ConfigureMemberlist(name)(cfg)
	ml, err := memberlist.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	return ml
}

// familySum adds up a family's values (histograms: their sample counts);
// 0 for a missing family.
func familySum(f *dto.MetricFamily) float64 {
	sum := 0.0
	for _, m := range f.GetMetric() {
		sum += m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return sum
}

// MustInstallMemberlistSink installs a sink that go-metrics' global
// functions then report to (a sample with no node label is counted as
// unrouted by it); the test puts the binary's own sink back.
func TestMustInstallMemberlistSink(t *testing.T) {
	prev, err := globalSink()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := prev.Install(); err != nil {
			t.Fatal(err)
		}
	}()
	s := MustInstallMemberlistSink()
	gometrics.IncrCounter([]string{"memberlist", "tcp", "accept"}, 1)
	if got := s.Unrouted(); got == 0 {
		t.Fatal("the installed sink saw no unrouted sample; one was sent through go-metrics' global functions")
	}
}
