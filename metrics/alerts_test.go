package metrics

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// requireBinary returns the path of a Prometheus tool. When it is missing
// the test is skipped, except under CI=true (.ci/run installs Debian's
// prometheus package), where it fails.
func requireBinary(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found in PATH; install it with: apt-get install -y prometheus", name)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true requires it)")
	}
	t.Skip(msg)
	return ""
}

// TestAlertRules checks docs/prometheus/alerts.yml with promtool: the
// rules parse (check rules), and each alert fires when it should, after
// its `for`, and stays silent when it should not (test rules, with the
// cases in testdata/alerts_test.yml).
func TestAlertRules(t *testing.T) {
	promtool := requireBinary(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", alertsFile},
		{"test", "rules", "testdata/alerts_test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// TestAlertExprsNameExportedMetrics: every alert expression selects only
// metrics a Recorder exports, so a renamed metric cannot silently disarm
// an alert.
func TestAlertExprsNameExportedMetrics(t *testing.T) {
	exprs := loadAlertExprs(t)
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "- alert:"); len(exprs) != n || n == 0 {
		t.Fatalf("found %d alert expressions in %s for %d alerts", len(exprs), alertsFile, n)
	}
	exported := exportedNames(t)
	for alert, expr := range exprs {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: names no metric: %s", alert, expr)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %s is not a metric a Recorder exports", alert, n)
			}
		}
	}
}
