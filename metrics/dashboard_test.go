package metrics

import (
	"regexp"
	"testing"
)

// TestDashboard validates docs/grafana/coordelect.json: an importable
// dashboard (schema, uid, datasource variable), every panel on the
// ${datasource} variable with at least one query, and every query naming
// only metrics a Recorder exports and variables the dashboard defines.
func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both set and schema >= 36", d.UID, d.Title, d.SchemaVersion)
	}
	vars := checkVariables(t, d)
	exported := exportedNames(t)
	ids := map[int]bool{}
	queries, panels := 0, 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: duplicate id %d", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		panels++
		if !onDatasourceVar(p.Datasource) {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			checkQuery(t, p.Title+"/"+q.RefID, q, exported, vars)
		}
	}
	t.Logf("%d panels, %d queries", panels, queries)
}

var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)`)

// builtinVariables are the Grafana variables a query may use undeclared.
var builtinVariables = map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}

func checkQuery(t *testing.T, where string, q panelQuery, exported, vars map[string]bool) {
	t.Helper()
	if q.Expr == "" {
		t.Errorf("%s: empty expr", where)
	}
	if !onDatasourceVar(q.Datasource) {
		t.Errorf("%s: datasource %+v, want the ${datasource} variable", where, q.Datasource)
	}
	names := metricNames(q.Expr)
	if len(names) == 0 {
		t.Errorf("%s: names no metric: %s", where, q.Expr)
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s: %s is not a metric a Recorder exports", where, n)
		}
	}
	for _, m := range grafanaVariable.FindAllStringSubmatch(q.Expr, -1) {
		if !vars[m[1]] && !builtinVariables[m[1]] {
			t.Errorf("%s: uses undefined variable $%s", where, m[1])
		}
	}
}

// checkVariables checks the template variables: a Prometheus datasource
// variable, and job and instance variables on it. It returns their names.
func checkVariables(t *testing.T, d dashboard) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch {
		case v.Name == "datasource" && (v.Type != "datasource" || v.Query != "prometheus"):
			t.Errorf("variable datasource: type %q query %v, want a prometheus datasource variable", v.Type, v.Query)
		case v.Type == "query" && !onDatasourceVar(v.Datasource):
			t.Errorf("variable %s: not on the ${datasource} variable", v.Name)
		}
	}
	for _, want := range []string{"datasource", "job", "instance"} {
		if !vars[want] {
			t.Errorf("no %q variable", want)
		}
	}
	return vars
}

func onDatasourceVar(d *datasource) bool {
	return d != nil && d.Type == "prometheus" && d.UID == "${datasource}"
}
