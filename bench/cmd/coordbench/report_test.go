package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/bench/internal/benchstat"
	"github.com/coordelect/coordelect/bench/internal/failover"
)

// The committed page and plots are what the report makes of the committed
// results: a changed result, generator or page without the other fails
// here. To fix: cd bench && go run ./cmd/coordbench report.
func TestReportUpToDate(t *testing.T) {
	dir := t.TempDir()
	out, img := filepath.Join(dir, "performance.md"), filepath.Join(dir, "img")
	var stdout, stderr bytes.Buffer
	args := []string{"report", "-results", "../../results", "-out", out, "-img", img}
	if rc := runArgs(args, &stdout, &stderr); rc != 0 {
		t.Fatalf("report: rc=%d stderr=%s", rc, stderr.String())
	}
	same := func(got, committed string) {
		t.Helper()
		g, err := os.ReadFile(got)
		if err != nil {
			t.Fatal(err)
		}
		c, err := os.ReadFile(committed)
		if err != nil {
			t.Errorf("%v: the report writes it; run 'cd bench && go run ./cmd/coordbench report' and commit it", err)
			return
		}
		if !bytes.Equal(g, c) {
			t.Errorf("%s differs from what the report makes of bench/results (first difference at line %d); run 'cd bench && go run ./cmd/coordbench report'",
				committed, firstDiffLine(g, c))
		}
	}
	same(out, "../../../docs/performance.md")
	made, err := filepath.Glob(filepath.Join(img, "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range made {
		same(f, filepath.Join("../../../docs/img", filepath.Base(f)))
	}
	committed, err := filepath.Glob("../../../docs/img/perf-*.svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range committed {
		if _, err := os.Stat(filepath.Join(img, filepath.Base(f))); err != nil {
			t.Errorf("%s: the report no longer makes it; delete it", f)
		}
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// A tiny failover run with -results writes one file that names the bench,
// the command and the conditions, with every round's time; the report
// reads it and gives the same page twice.
func TestResultsFileAndReport(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	var out, errb bytes.Buffer
	args := []string{"failover", "-n", "3", "-rounds", "2", "-quiet", "50ms", "-results", res}
	if rc := runArgs(args, &out, &errb); rc != 0 {
		t.Fatalf("rc=%d stderr=%s", rc, errb.String())
	}
	b, err := os.ReadFile(filepath.Join(res, "failover-bully-crash-n3.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f resultsFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var r failoverResult
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatal(err)
	}
	if f.Bench != "failover" || f.Command != "coordbench "+strings.Join(args, " ") || f.Env.Date == "" || f.Env.Cores < 1 ||
		f.Env.GoVersion == "" || f.Env.CPU == "" || len(r.TimesMS) != 2 || r.N != 3 {
		t.Errorf("results file %s: want bench, command, date, cores, Go, CPU and 2 round times of n = 3", b)
	}
	var pages [2]string
	for i := range pages {
		page := filepath.Join(dir, "p", "performance.md")
		if rc := runArgs([]string{"report", "-results", res, "-out", page, "-img", filepath.Join(dir, "p", "img")}, &out, &errb); rc != 0 {
			t.Fatalf("report: rc=%d stderr=%s", rc, errb.String())
		}
		p, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		pages[i] = string(p)
	}
	if pages[0] != pages[1] || !strings.Contains(pages[0], "failover-bully-crash-n3") {
		t.Errorf("report: two runs differ, or the run is not named:\n%s", pages[0])
	}
}

func TestCommas(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "999.5": "999.5", "1000": "1,000", "1234567.8": "1,234,567.8", "-1000": "-1,000"} {
		if got := commas(in); got != want {
			t.Errorf("commas(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLogAxisTicks(t *testing.T) {
	a := newLogAxis(97, 2701, 300, 40)
	if a.lo != 50 || a.hi != 5000 {
		t.Errorf("axis [%v, %v], want [50, 5000]", a.lo, a.hi)
	}
	want := []float64{50, 100, 200, 500, 1000, 2000, 5000}
	if got := a.ticks(); len(got) != len(want) {
		t.Errorf("ticks %v, want %v", got, want)
	}
	if a.at(50) != 300 || a.at(5000) != 40 {
		t.Errorf("ends at %v and %v, want 300 and 40", a.at(50), a.at(5000))
	}
}

// A failover run that stopped shows the rounds it completed and why it
// stopped, and stays out of the plots.
func TestReportFailedRun(t *testing.T) {
	res, err := json.Marshal(failoverResult{N: 100, Algorithm: "ring", Mode: "crash",
		Result: failover.Result{Rounds: 10, TimesMS: []float64{150, 160, 170}, Failover: benchstat.Percentiles{P50: 160, P90: 170, P99: 170, Max: 170}}})
	if err != nil {
		t.Fatal(err)
	}
	run := namedResults{name: "failover-ring-crash-n100", resultsFile: resultsFile{Bench: "failover", Command: "coordbench failover -algorithm ring -n 100",
		Env: runEnv{Date: "2026-01-02T03:04:05Z", Cores: 2}, Result: res, Error: `round 4: after 100 came back: no agreement (want "100"; 79: 6 nodes)`}}
	page, imgs, err := buildReport([]namedResults{run}, "img")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 3 of 10, did not finish | 160.0 |", "did not finish: round 4: after 100 came back: no agreement\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if len(imgs) != 0 {
		t.Errorf("plots %v from a run that did not finish", imgs)
	}
}
