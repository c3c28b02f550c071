package metrics

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// dashboardVars are the values the test gives the dashboard's variables:
// every job and instance, and windows that cover the test's short history.
var dashboardVars = map[string]string{
	"job": ".*", "instance": ".*", "window": "10m", "__rate_interval": "1m",
}

// TestAgainstPrometheus runs a real Prometheus server (Debian's
// prometheus package) on 127.0.0.1 scraping a three-node cluster in this
// process: real Electors on the in-memory network, each Recorder on its
// own registry served on its own /metrics with a node label, and beside
// each a real memberlist instance on loopback whose metrics reach the same
// registry through the MemberlistSink. Once the nodes are scraped, the
// test partitions the coordinator away without the quorum guard and
// checks, through Prometheus's HTTP API, that the rules load and evaluate,
// that the split-brain alert's expression returns the two coordinators
// and the alert goes pending, that the term conflict alert stays silent,
// and that every dashboard query returns data.
func TestAgainstPrometheus(t *testing.T) {
	bin := requireBinary(t, "prometheus")
	start := time.Now()
	sink, err := globalSink()
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCluster(t, 3, time.Millisecond, func(id string) []Option {
		return []Option{WithNode(id), WithMemberlist(sink, "prom-"+id)}
	})
	joinMemberlists(t, c.ids)
	first := c.waitAgreed(5*time.Second, "c", 0)
	p := startPrometheus(t, bin, serveMetrics(t, c))
	t.Logf("prometheus ready %v after the test began", time.Since(start).Round(time.Millisecond))
	waitScraped(t, p, len(c.ids))

	split := time.Now()
	c.net.Partition([]string{"a", "b"}, []string{"c"})
	c.waitAgreed(5*time.Second, "b", first, "a", "b")
	rules := checkSplitBrain(t, p)
	t.Logf("split brain seen by Prometheus %v after the partition", time.Since(split).Round(time.Millisecond))
	checkAlertExprs(t, p, rules)
	checkPanels(t, p)

	// The heal: one of the two coordinators hears of the other's higher
	// term while it still leads, and the overlap alert fires for it. What
	// follows can depose one more (the top-rated c takes the role back and
	// b, still leading, may hear of c's new term before c's hand-off
	// request): the alert must fire for exactly the nodes the counters
	// name.
	t.Logf("before the heal:\n%s", c.describe())
	healed := time.Now()
	c.net.Heal()
	deposed := func() []string {
		var ids []string
		for _, id := range c.ids {
			if testutil.ToFloat64(c.nodes[id].rec.deposed) > 0 {
				ids = append(ids, id)
			}
		}
		return ids
	}
	c.eventually(5*time.Second, func() bool { return len(deposed()) > 0 })
	checkOverlapFires(t, p, deposed)
	t.Logf("deposed after the heal: %v", deposed())
	t.Logf("overlap alert firing %v after the heal", time.Since(healed).Round(time.Millisecond))
	t.Logf("test took %v", time.Since(start).Round(time.Millisecond))
}

// checkOverlapFires waits until CoordelectLeadershipOverlap fires (it has
// no `for`) for exactly the nodes deposed() names (read again at every
// poll: a second node may be deposed meanwhile).
func checkOverlapFires(t *testing.T, p *promServer, deposed func() []string) {
	t.Helper()
	err := poll(20*time.Second, func() error {
		rules, err := p.rules()
		if err != nil {
			return err
		}
		r := findRule(rules, "CoordelectLeadershipOverlap")
		if r == nil {
			return errors.New("rule CoordelectLeadershipOverlap not loaded")
		}
		s, err := p.query(r.Query)
		switch {
		case err != nil:
			return err
		case !sameNodes(s, deposed()):
			return fmt.Errorf("%s = %v, want the deposed nodes %v", r.Query, s, deposed())
		case r.State != "firing":
			return fmt.Errorf("CoordelectLeadershipOverlap is %s, want firing", r.State)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("overlap alert: %v\n%s", err, p.log())
	}
}

// joinMemberlists starts a memberlist instance "prom-<id>" per node and
// joins them.
func joinMemberlists(t *testing.T, ids []string) {
	t.Helper()
	var seed string
	for _, id := range ids {
		ml := startMemberlist(t, "prom-"+id)
		if seed == "" {
			seed = ml.LocalNode().Address()
		} else if _, err := ml.Join([]string{seed}); err != nil {
			t.Fatal(err)
		}
	}
}

// serveMetrics serves each node's registry on its own 127.0.0.1 port and
// returns the addresses.
func serveMetrics(t *testing.T, c *testCluster) []string {
	t.Helper()
	var targets []string
	for _, id := range c.ids {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(c.nodes[id].reg,
			promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close(); <-done })
		targets = append(targets, l.Addr().String())
	}
	return targets
}

// waitScraped waits until every target is up and has been scraped at
// least twice (so that rate() has two samples).
func waitScraped(t *testing.T, p *promServer, n int) {
	t.Helper()
	err := poll(30*time.Second, func() error {
		s, err := p.query(`count(count_over_time(coordelect_term{job="coordelect"}[1m]) >= 2) and count(up{job="coordelect"} == 1)`)
		if err != nil {
			return err
		}
		if len(s) != 1 || s[0].Value != float64(n) {
			return fmt.Errorf("scraped twice: %v, want %d targets", s, n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("targets not scraped: %v\n%s", err, p.log())
	}
}

// checkSplitBrain waits until Prometheus sees two coordinators: the
// split-brain rule's own expression returns the job with value 2 and the
// alert goes pending (its `for` is 30 s). It returns the loaded rules.
func checkSplitBrain(t *testing.T, p *promServer) []promRule {
	t.Helper()
	var rules []promRule
	err := poll(20*time.Second, func() error {
		var err error
		if rules, err = p.rules(); err != nil {
			return err
		}
		r := findRule(rules, "CoordelectSplitBrain")
		if r == nil {
			return errors.New("rule CoordelectSplitBrain not loaded")
		}
		s, err := p.query(r.Query)
		switch {
		case err != nil:
			return err
		case len(s) != 1 || s[0].Value != 2 || s[0].Metric["job"] != "coordelect":
			return fmt.Errorf("%s = %v, want {job=coordelect} 2", r.Query, s)
		case r.State != "pending" && r.State != "firing":
			return fmt.Errorf("CoordelectSplitBrain is %s, want pending", r.State)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func findRule(rules []promRule, name string) *promRule {
	for i := range rules {
		if rules[i].Name == name {
			return &rules[i]
		}
	}
	return nil
}

// checkAlertExprs checks that Prometheus loaded every alert of
// alerts.yml, evaluates each without error, and that during the split the
// disagreement alert's expression returns a result while the term
// conflict's does not (the two coordinators' terms differ).
func checkAlertExprs(t *testing.T, p *promServer, rules []promRule) {
	t.Helper()
	want := loadAlertExprs(t)
	var loaded []string
	for _, r := range rules {
		loaded = append(loaded, r.Name)
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("rule %s: health %q, last error %q", r.Name, r.Health, r.LastError)
		}
		s, err := p.query(r.Query)
		if err != nil {
			t.Errorf("rule %s: %s: %v", r.Name, r.Query, err)
			continue
		}
		t.Logf("alert %-34s %-8s %d series", r.Name, r.State, len(s))
		switch r.Name {
		case "CoordelectTermConflict":
			if len(s) != 0 {
				t.Errorf("term conflict during the split: %v", s)
			}
		case "CoordelectCoordinatorDisagreement":
			if len(s) != 1 || s[0].Value != 2 {
				t.Errorf("disagreement during the split = %v, want 2 coordinators", s)
			}
		}
	}
	for name := range want {
		if !slices.Contains(loaded, name) {
			t.Errorf("alert %s of %s not loaded by Prometheus (loaded %q)", name, alertsFile, loaded)
		}
	}
}

// checkPanels evaluates every dashboard query, with its variables
// substituted, until each returns at least one finite sample.
func checkPanels(t *testing.T, p *promServer) {
	t.Helper()
	exprs := loadDashboard(t).panelExprs()
	names := make([]string, 0, len(exprs))
	for name := range exprs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		expr, err := substitute(exprs[name])
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got []sample
		err = poll(10*time.Second, func() error {
			var err error
			if got, err = p.query(expr); err != nil {
				return err
			}
			if !slices.ContainsFunc(got, func(s sample) bool { return !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) }) {
				return fmt.Errorf("no finite sample in %v", got)
			}
			return nil
		})
		if err != nil {
			t.Errorf("panel %s: %s: %v", name, expr, err)
			continue
		}
		t.Logf("panel %-48s %d series", name, len(got))
	}
}

var dashboardVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

// substitute replaces the dashboard's variables with dashboardVars.
func substitute(expr string) (string, error) {
	var missing []string
	out := dashboardVar.ReplaceAllStringFunc(expr, func(v string) string {
		name := dashboardVar.FindStringSubmatch(v)[1]
		if val, ok := dashboardVars[name]; ok {
			return val
		}
		missing = append(missing, name)
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no test value for variables %q", missing)
	}
	return out, nil
}

// sameNodes reports whether the samples' node labels are exactly nodes.
func sameNodes(s []sample, nodes []string) bool {
	got := make([]string, 0, len(s))
	for _, x := range s {
		got = append(got, x.Metric["node"])
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(nodes))
	return slices.Equal(got, want)
}
