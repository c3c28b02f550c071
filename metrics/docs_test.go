package metrics

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/coordelect/coordelect/election"
)

// The operator-facing files this package's tests check.
const (
	dashboardFile = "../docs/grafana/coordelect.json"
	alertsFile    = "../docs/prometheus/alerts.yml"
)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID           string     `json:"uid"`
	Title         string     `json:"title"`
	SchemaVersion int        `json:"schemaVersion"`
	Panels        []panel    `json:"panels"`
	Templating    templating `json:"templating"`
}

type panel struct {
	ID         int          `json:"id"`
	Type       string       `json:"type"`
	Title      string       `json:"title"`
	Datasource *datasource  `json:"datasource"`
	GridPos    gridPos      `json:"gridPos"`
	Targets    []panelQuery `json:"targets"`
}

type gridPos struct{ X, Y, W, H int }

type panelQuery struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type templating struct {
	List []struct {
		Name       string      `json:"name"`
		Type       string      `json:"type"`
		Query      any         `json:"query"`
		Datasource *datasource `json:"datasource"`
	} `json:"list"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panelExprs returns every query of the dashboard, keyed "title/refId".
func (d dashboard) panelExprs() map[string]string {
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out[p.Title+"/"+q.RefID] = q.Expr
		}
	}
	return out
}

// loadAlertExprs returns the expr of every rule in alerts.yml, keyed by
// alert name. The file uses two forms only, `expr: <one line>` and
// `expr: >-` followed by more indented lines; promtool (TestAlertRules)
// and a real Prometheus (TestAgainstPrometheus) parse it fully.
func loadAlertExprs(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	var name, expr string
	var indent int
	folding := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		text := strings.TrimSpace(line)
		depth := len(line) - len(strings.TrimLeft(line, " "))
		if folding && text != "" && depth > indent {
			expr += " " + text
			continue
		}
		if folding {
			out[name], folding = strings.TrimSpace(expr), false
		}
		switch {
		case strings.HasPrefix(text, "- alert:"):
			name = strings.TrimSpace(strings.TrimPrefix(text, "- alert:"))
		case text == "expr: >-":
			expr, indent, folding = "", depth, true
		case strings.HasPrefix(text, "expr:"):
			out[name] = strings.TrimSpace(strings.TrimPrefix(text, "expr:"))
		}
	}
	if folding {
		out[name] = strings.TrimSpace(expr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlToken    = regexp.MustCompile(`[A-Za-z0-9_:.$]+(\s*\()?`)
	promqlKeywords = []string{"and", "or", "unless", "by", "without", "on", "ignoring",
		"group_left", "group_right", "offset", "bool", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges and grouping
// labels are removed, that are not functions, keywords or numbers.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{promqlString, promqlMatchers, promqlRange, promqlGrouping} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, m := range promqlToken.FindAllStringSubmatch(expr, -1) {
		tok := m[0]
		switch {
		case m[1] != "": // a function or an aggregation
		case tok[0] >= '0' && tok[0] <= '9' || tok[0] == '.' || tok[0] == '$':
		case slices.Contains(promqlKeywords, strings.ToLower(tok)):
		default:
			out = append(out, tok)
		}
	}
	return out
}

// exportedNames returns every sample name a fully optioned Recorder
// exports: family names, and for histograms their _bucket, _sum and
// _count series.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	r, err := New(reg, WithNode("n"), WithTransportStats(fakeTransport{}), WithMemberlist(NewMemberlistSink(), "n"))
	if err != nil {
		t.Fatal(err)
	}
	r.Record(election.Update{Leader: election.Leadership{Coordinator: "n", Term: 1 << 32, IsSelf: true}, LeaderChanged: true})
	names := map[string]bool{}
	for name, f := range gather(t, reg) {
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = true
			}
		}
	}
	return names
}

// TestMetricNames checks the PromQL name extraction itself.
func TestMetricNames(t *testing.T) {
	cases := map[string][]string{
		`sum by (job) (rate(a_total{x="b c", y=~"$job"}[$__rate_interval]))`:         {"a_total"},
		`histogram_quantile(0.9, sum by (le) (rate(d_bucket[5m]))) > 1e3`:            {"d_bucket"},
		`count_values by (job) ("term", t and on (job, node) (c == 1)) > 1`:          {"t", "c"},
		`(g == 0) unless on (job, instance) info`:                                    {"g", "info"},
		`floor(coordelect_term{job=~"$job"} / 4294967296) or vector(0) offset 5m`:    {"coordelect_term"},
		`max by (job, instance, node, state) (coordelect_state{job=~"$job"} == 1)`:   {"coordelect_state"},
		`sum without (coordinator) (coordelect_coordinator_info) * on () group_left`: {"coordelect_coordinator_info"},
	}
	for expr, want := range cases {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}
