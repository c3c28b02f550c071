package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/bench/internal/failover"
)

const reportSynopsis = `usage: coordbench report [flags]

Rewrites docs/performance.md and its plots (docs/img/perf-*.svg) from the
results files that the benches' -results flag writes (bench/results/*.json).
What it writes depends only on those files: the same files give the same
bytes (TestReportUpToDate checks the committed page against them). Run it
from bench/, or give the paths.`

// reportOptions is a validated report command line.
type reportOptions struct {
	results, out, img string
}

func parseReport(args []string, stdout io.Writer) (reportOptions, error) {
	var o reportOptions
	fs := flag.NewFlagSet("coordbench report", flag.ContinueOnError)
	fs.StringVar(&o.results, "results", "results", "directory of the results files")
	fs.StringVar(&o.out, "out", filepath.Join("..", "docs", "performance.md"), "the page to write")
	fs.StringVar(&o.img, "img", filepath.Join("..", "docs", "img"), "directory of the plots (linked from the page by their path relative to it)")
	if err := parseFlags(fs, args, stdout, reportSynopsis); err != nil {
		return o, err
	}
	if o.results == "" || o.out == "" || o.img == "" {
		return o, usagef("-results %q, -out %q, -img %q: want a path each", o.results, o.out, o.img)
	}
	return o, nil
}

func runReport(_ context.Context, args []string, stdout, _ io.Writer) error {
	o, err := parseReport(args, stdout)
	if err != nil {
		return err
	}
	runs, err := readResults(o.results)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(o.out), o.img)
	if err != nil {
		return err
	}
	page, imgs, err := buildReport(runs, filepath.ToSlash(rel))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.img, 0o755); err != nil {
		return err
	}
	for _, im := range imgs {
		if err := os.WriteFile(filepath.Join(o.img, im.name), []byte(im.svg), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(o.out, []byte(page), 0o644)
}

// image is one plot of the report.
type image struct{ name, svg string }

// Decoded results, each with the run it came from.
type (
	compareRun struct {
		run  namedResults
		rows []compareRow
	}
	failoverRun struct {
		run namedResults
		r   failoverResult
	}
	idleRun struct {
		run namedResults
		r   idleResult
	}
	memoryRun struct {
		run namedResults
		r   memoryResult
	}
	soakRun struct {
		run namedResults
		r   soakResult
	}
	electionsRun struct {
		run namedResults
		r   electionsResult
	}
)

// reportData is every results file, decoded and sorted for the report.
type reportData struct {
	compares  []compareRun
	failovers []failoverRun
	idles     []idleRun
	memories  []memoryRun
	soaks     []soakRun
	elections []electionsRun
	// recorded are the files with a Note: figures from an earlier run's
	// log, shown apart from the current ones.
	recorded []namedResults
	// commit is the commit most current runs share; commits lists every
	// commit of the runs, that one first, then in file order: the page
	// names each once and the runs refer to it by number.
	commit  string
	commits []string
}

// decode sorts the runs into their benches.
func decode(runs []namedResults) (reportData, error) {
	var d reportData
	commits := map[string]int{}
	for _, r := range runs {
		if r.Note != "" {
			d.recorded = append(d.recorded, r)
			continue
		}
		commits[r.Env.Commit]++
		var err error
		switch r.Bench {
		case "compare":
			c := compareRun{run: r}
			err = json.Unmarshal(r.Result, &c.rows)
			d.compares = append(d.compares, c)
		case "failover":
			f := failoverRun{run: r}
			err = json.Unmarshal(r.Result, &f.r)
			d.failovers = append(d.failovers, f)
		case "idle":
			i := idleRun{run: r}
			err = json.Unmarshal(r.Result, &i.r)
			d.idles = append(d.idles, i)
		case "memory":
			m := memoryRun{run: r}
			err = json.Unmarshal(r.Result, &m.r)
			d.memories = append(d.memories, m)
		case "soak":
			s := soakRun{run: r}
			err = json.Unmarshal(r.Result, &s.r)
			d.soaks = append(d.soaks, s)
		case "elections":
			e := electionsRun{run: r}
			err = json.Unmarshal(r.Result, &e.r)
			d.elections = append(d.elections, e)
		default:
			err = fmt.Errorf("bench %q: want compare, failover, idle, memory, soak or elections", r.Bench)
		}
		if err != nil {
			return d, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	// The commit most current runs share (the first in order on a tie);
	// the runs of another one name theirs.
	best := 0
	for _, r := range runs {
		if r.Note == "" && (commits[r.Env.Commit] > best || commits[r.Env.Commit] == best && r.Env.Commit < d.commit) {
			d.commit, best = r.Env.Commit, commits[r.Env.Commit]
		}
	}
	d.commits = []string{d.commit}
	for _, r := range runs {
		if !slices.Contains(d.commits, r.Env.Commit) {
			d.commits = append(d.commits, r.Env.Commit)
		}
	}
	algOrder := func(a string) int { return slices.Index([]string{"bully", "ring", "peterson"}, a) }
	slices.SortStableFunc(d.failovers, func(a, b failoverRun) int {
		return cmpChain(strings.Compare(a.r.Mode, b.r.Mode), algOrder(a.r.Algorithm)-algOrder(b.r.Algorithm),
			a.r.Quorum-b.r.Quorum, a.r.BusyProcs-b.r.BusyProcs, a.r.N-b.r.N)
	})
	slices.SortStableFunc(d.idles, func(a, b idleRun) int {
		return cmpChain(boolInt(a.r.Bare)-boolInt(b.r.Bare), algOrder(a.r.Algorithm)-algOrder(b.r.Algorithm), a.r.Quorum-b.r.Quorum, a.r.N-b.r.N)
	})
	slices.SortStableFunc(d.memories, func(a, b memoryRun) int { return a.r.N - b.r.N })
	slices.SortStableFunc(d.elections, func(a, b electionsRun) int {
		return cmpChain(algOrder(a.r.Algorithm)-algOrder(b.r.Algorithm), a.r.Quorum-b.r.Quorum, a.r.N-b.r.N, a.r.Elections-b.r.Elections)
	})
	slices.SortStableFunc(d.compares, func(a, b compareRun) int { return a.rows[0].N - b.rows[0].N })
	return d, nil
}

// cmpChain returns the first of cs that is not 0.
func cmpChain(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// buildReport renders the page and its plots; img is the plots'
// directory relative to the page.
func buildReport(runs []namedResults, img string) (string, []image, error) {
	d, err := decode(runs)
	if err != nil {
		return "", nil, err
	}
	w := &mdWriter{img: img}
	w.header(d)
	w.summary(d)
	w.benches()
	w.compare(d)
	w.failoverVsN(d)
	w.resign(d)
	w.idle(d)
	w.memory(d)
	w.soak(d)
	w.elections(d)
	w.recorded(d)
	return w.b.String(), w.imgs, nil
}

// mdWriter accumulates the page and its plots.
type mdWriter struct {
	b    strings.Builder
	img  string
	imgs []image
}

func (w *mdWriter) p(format string, args ...any) { fmt.Fprintf(&w.b, format+"\n", args...) }

// table writes a Markdown table.
func (w *mdWriter) table(head []string, rows [][]string) {
	w.p("| %s |", strings.Join(head, " | "))
	w.p("|%s", strings.Repeat("---|", len(head)))
	for _, r := range rows {
		w.p("| %s |", strings.Join(r, " | "))
	}
	w.p("")
}

// plot adds an image and links it with its alt text.
func (w *mdWriter) plot(name, alt, svg string) {
	w.imgs = append(w.imgs, image{name, svg})
	w.p("![%s](%s/%s)", alt, w.img, name)
	w.p("")
}

// conditions lists the runs behind a section's figures.
func (w *mdWriter) conditions(d reportData, runs ...namedResults) {
	w.p("Conditions:")
	w.p("")
	for _, r := range runs {
		w.p("- %s", runConditions(r, d))
	}
	w.p("")
}

// runConditions is one run's line: its file, date, machine, load, Go,
// the code it measured (unless it is the commit most runs share) and
// command.
func runConditions(r namedResults, d reportData) string {
	e := r.Env
	commit := ""
	if i := slices.Index(d.commits, e.Commit); i > 0 {
		commit = fmt.Sprintf(", code (%d)", i+1)
	}
	took := ""
	if e.Seconds > 0 {
		took = ", " + strconv.FormatFloat(e.Seconds, 'f', -1, 64) + " s"
	}
	failed := ""
	if r.Error != "" {
		failed = "; did not finish: " + shortError(r.Error)
	}
	return fmt.Sprintf("`%s`: %s UTC, %s, %d cores, %d GiB, %s, load %s%s%s: `%s`%s",
		r.name, minuteOf(e.Date), e.CPU, e.Cores, e.MemGiB,
		e.GoVersion, loadRange(e.LoadStart, e.LoadEnd), commit, took, r.Command, failed)
}

// shortError is an error up to its first parenthesis (the bench's
// errors then list every member's view), at most 160 bytes.
func shortError(e string) string {
	if i := strings.Index(e, " ("); i > 0 {
		e = e[:i]
	}
	if len(e) > 160 {
		e = e[:160] + "…"
	}
	return e
}

// minuteOf prints an RFC 3339 date to the minute: "2026-11-28 18:35".
func minuteOf(date string) string {
	s := strings.Replace(date, "T", " ", 1)
	return s[:min(16, len(s))]
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// loadRange is the 1-minute load average at the start and at the end.
func loadRange(a, b []float64) string {
	f := func(l []float64) string {
		if len(l) == 0 {
			return "not recorded"
		}
		return strconv.FormatFloat(l[0], 'f', 2, 64)
	}
	if len(a) == 0 && len(b) == 0 {
		return "not recorded"
	}
	return f(a) + " → " + f(b)
}

func (w *mdWriter) header(d reportData) {
	w.p("# Performance")
	w.p("")
	w.p("<!-- Generated by `cd bench && go run ./cmd/coordbench report` from bench/results/*.json.")
	w.p("     Edit the generator (bench/cmd/coordbench/report.go), not this page. -->")
	w.p("")
	w.p("To measure again and regenerate this page: `bench/run-all.sh` (about 15 minutes on 2 cores;")
	w.p("run it on a quiet machine). To regenerate it from the committed results only:")
	w.p("`cd bench && go run ./cmd/coordbench report`; `cd bench && go test ./cmd/coordbench -run")
	w.p("TestReportUpToDate` fails when the page and the results disagree.")
	w.p("")
	w.p("Every figure comes from one results file in `bench/results/`, written by the bench's")
	w.p("`-results` flag; the conditions under each table name the file, the machine, the load")
	w.p("average (1 minute, at the start → at the end of the run), the Go version and the exact")
	w.p("command. On a 2-core machine a load above 2 means that runnable work waited for a core:")
	w.p("tails (p99, max) measured then are the machine's as much as the library's.")
	var codes []string
	for i, c := range d.commits {
		codes = append(codes, fmt.Sprintf("(%d) commit `%s`", i+1, orUnknown(c)))
	}
	w.p("The code measured: %s; a run measured (1) unless its conditions say otherwise.", strings.Join(codes, ", "))
	w.p("")
}

func (w *mdWriter) summary(d reportData) {
	var lines []string
	for _, c := range d.compares {
		ours, def, tuned := c.rows[0], c.rows[1], c.rows[2]
		lines = append(lines, fmt.Sprintf("Crash failover of %d members with the defaults (bully, %s): p50 %s ms, p99 %s ms over %d rounds; "+
			"hashicorp/raft in the same run: p50 %s ms with its DefaultConfig (ours %s×), %s ms with its timeouts at our budget (ours %s×) (`%s`).",
			ours.N, "K·H = 150 ms", fmtMS(ours.Failover.P50), fmtMS(ours.Failover.P99), ours.Rounds,
			fmtMS(def.Failover.P50), ratio(ours.Failover.P50, def.Failover.P50),
			fmtMS(tuned.Failover.P50), ratio(ours.Failover.P50, tuned.Failover.P50), c.run.name))
	}
	var msgs []string
	for _, f := range d.failovers {
		if f.r.Mode == "crash" && f.r.Algorithm == "bully" && f.r.Quorum == 0 && f.r.BusyProcs == 0 && f.r.Messages != nil && f.run.Error == "" {
			msgs = append(msgs, fmt.Sprintf("%d at n = %d", f.r.Messages.P50, f.r.N))
		}
	}
	if len(msgs) > 0 {
		lines = append(lines, "Election messages per crash failover (bully, p50): "+strings.Join(msgs, ", ")+".")
	}
	for _, f := range d.failovers {
		if f.r.Mode == "resign" && f.run.Error == "" {
			lines = append(lines, fmt.Sprintf("Hand-off by `Resign`, n = %d: p50 %s ms, max %s ms (`%s`).", f.r.N, fmtMS(f.r.Failover.P50), fmtMS(f.r.Failover.Max), f.run.name))
		}
	}
	for _, i := range d.idles {
		if !i.r.Bare && i.r.Procs == 1 && i.r.N == maxIdleN(d) {
			lines = append(lines, fmt.Sprintf("Idle, n = %d: the coordinator sends %s messages/s, the whole process of %d members uses %s %% of a core (`%s`).",
				i.r.N, fmt1(i.r.CoordinatorSendsPerSec), i.r.N, fmt1(i.r.ProcessCPUPercent), i.run.name))
		}
	}
	for _, m := range d.memories {
		if m.r.MemberlistPerNode > 0 {
			lines = append(lines, fmt.Sprintf("Memory, n = %d: a member with its elector holds %s KiB of live heap and %s KiB of goroutine stacks; a bare memberlist node %s and %s KiB (`%s`).",
				m.r.N, kib(m.r.MembershipPerNode+m.r.ElectorPerNode), kib(m.r.MembershipStackPerNode+m.r.ElectorStackPerNode),
				kib(m.r.MemberlistPerNode), kib(m.r.MemberlistStackPerNode), m.run.name))
		}
	}
	for _, e := range d.elections {
		r := e.r
		if r.Algorithm == "bully" && r.Quorum == 0 && e.run.Error == "" {
			lines = append(lines, fmt.Sprintf("Named elections, n = %d, %s names (simulated, spread): leaders per member max %d, %s × the mean; the busiest member's idle packets %s/s, %s × a one-name cluster's; failover of each of the %s names the crashed member led over %d rounds: p50 %s ms, p99 %s ms; %d spurious elections; %s bytes per name per member (`%s`).",
				r.N, commas(strconv.Itoa(r.Elections)), r.LeadersPerMember.Max, ratio(float64(r.LeadersPerMember.Max), r.LeadersPerMember.Mean),
				fmt1(r.IdlePackets.MaxMember), strconv.FormatFloat(r.IdlePackets.Ratio, 'f', 3, 64), commas(strconv.Itoa(r.FailoverNames)), r.Rounds,
				fmtMS(r.Failover.P50), fmtMS(r.Failover.P99), r.Spurious, commas(strconv.FormatFloat(r.BytesPerName, 'f', 0, 64)), e.run.name))
		}
	}
	if len(lines) == 0 {
		return
	}
	w.p("## Summary")
	w.p("")
	for _, l := range lines {
		w.p("- %s", l)
	}
	w.p("")
}

// maxIdleN is the largest n of the idle runs with electors in one process.
func maxIdleN(d reportData) int {
	n := 0
	for _, i := range d.idles {
		if !i.r.Bare && i.r.Procs == 1 {
			n = max(n, i.r.N)
		}
	}
	return n
}

func (w *mdWriter) benches() {
	w.p("## The benches")
	w.p("")
	w.p("`coordbench` (in the nested module `bench/`, `cd bench && go run ./cmd/coordbench -h`) runs")
	w.p("real members on 127.0.0.1, each with its own memberlist and elector, with the library's")
	w.p("default configuration (heartbeat every H = 50 ms, K = 3 misses: a detection budget K·H = 150 ms)")
	w.p("and memberlist's LAN profile. Add `-results results` to any run below to keep its results file.")
	w.p("")
	w.table([]string{"bench", "what it measures", "run"}, [][]string{
		{"`compare`", "crash failover of coordelect and of hashicorp/raft v1.8.0 (its `DefaultConfig`, and tuned to our 150-ms budget), one cluster after the other in one process, with one driver (`bench/internal/failover`): each round waits `-quiet` plus a random part of the heartbeat period, crashes the leader, and polls every survivor every millisecond until all agree on a new one", "`coordbench compare -n 5 -rounds 20 -raft-rounds 10`"},
		{"`failover`", "the same rounds for coordelect alone, any algorithm, size or mode (`-mode resign`: the coordinator hands off); also the election messages sent per failover (heartbeats excluded) and the elections started with the coordinator alive (spurious)", "`coordbench failover -algorithm ring -n 20 -rounds 20`"},
		{"`idle`", "an idle cluster for `-d`: the coordinator's sends per second, the followers', the CPU of the process, the live heap and goroutines per member; `-procs K` spreads the members over K processes (`-netns`: a network namespace each, root only); `-rounds R` then crashes the coordinator R times", "`coordbench idle -n 100 -d 20s`"},
		{"`memory`", "the live heap (after GC), stacks and goroutines per member in three steps: bare memberlist, `membership.Node`, and with an elector", "`coordbench memory -n 100`"},
		{"`soak`, `nodesoak`", "an idle cluster under CPU load (goroutines spinning in the bench's process; or `demo node` processes beside busy processes or under a cgroup quota), counting spurious elections", "`coordbench soak -d 10m`; `coordbench nodesoak -d 10m -demo /tmp/demo`"},
		{"`elections`", "named elections on the simulator (`election/sim`, in virtual time; not real members): every member hosts `-elections` spread names in one `election/group` host; leaders per member, the busiest member's idle packets against a one-name cluster, crash failover of every name the member leading the most names led, spurious elections, bytes per name per member", "`coordbench elections -n 20 -elections 1000 -rounds 20`"},
		{"`raftfailover`", "hashicorp/raft's failover alone, with the same driver", "`go run ./cmd/raftfailover -n 5 -rounds 20 -json`"},
		{"`exclusivity`", "leases and fencing on real `fencedledger` processes killed, paused, restarted and re-rated (docs/reliability.md)", "`go run ./cmd/exclusivity -h`"},
	})
	w.p("The state machine's own costs are Go benchmarks, not recorded here:")
	w.p("`go test -run '^$' -bench . -benchmem ./election/core` (0 allocations per event).")
	w.p("")
}

func (w *mdWriter) compare(d reportData) {
	if len(d.compares) == 0 {
		return
	}
	w.p("## Crash failover beside hashicorp/raft")
	w.p("")
	w.p("Our messages are the election messages handed to the transport; raft's, its vote and")
	w.p("pre-vote RPCs, request and response each counted. Times in ms, nearest-rank percentiles.")
	w.p("")
	var rows [][]string
	var runs []namedResults
	var plots []image
	for _, c := range d.compares {
		runs = append(runs, c.run)
		for _, r := range c.rows {
			rows = append(rows, []string{r.Library + ", " + r.Config, strconv.Itoa(r.N), strconv.Itoa(r.Rounds),
				fmtMS(r.Failover.P50), fmtMS(r.Failover.P90), fmtMS(r.Failover.P99), fmtMS(r.Failover.Max),
				messages(r.Messages), strconv.FormatUint(r.Spurious, 10), ratio(c.rows[0].Failover.P50, r.Failover.P50)})
		}
		var sets []sampleSet
		for _, r := range c.rows {
			label := "coordelect"
			if r.Library != "coordelect" {
				label = "raft default"
				if strings.HasPrefix(r.Config, "HeartbeatTimeout") {
					label = "raft tuned"
				}
			}
			sets = append(sets, sampleSet{label, r.TimesMS})
		}
		plots = append(plots, image{fmt.Sprintf("perf-compare-n%d.svg", c.rows[0].N),
			distributionSVG(fmt.Sprintf("Crash failover, n = %d (%s)", c.rows[0].N, c.run.name), "failover time (ms, log scale)", sets)})
	}
	w.table([]string{"cluster", "n", "rounds", "p50", "p90", "p99", "max", "messages p50 / max", "spurious", "ours p50 / its p50"}, rows)
	w.p("The plot shows every round (dots) beside its box (quartiles, median; whiskers to the extremes).")
	w.p("")
	for _, im := range plots {
		w.plot(im.name, "crash failover times: coordelect beside hashicorp/raft", im.svg)
	}
	w.conditions(d, runs...)
}

func (w *mdWriter) failoverVsN(d reportData) {
	var rows [][]string
	var runs []namedResults
	byAlg := map[string]*[2]series{}
	var algs []string
	for _, f := range d.failovers {
		r := f.r
		if r.Mode != "crash" {
			continue
		}
		runs = append(runs, f.run)
		rows = append(rows, append([]string{r.Algorithm, strconv.Itoa(r.N), guardLabel(r.Quorum, r.Voters, r.BusyProcs)},
			append(roundCells(f.run, r.Result), "`"+f.run.name+"`")...))
		if r.Quorum != 0 || r.BusyProcs != 0 || r.Voters != 0 || f.run.Error != "" {
			continue
		}
		s, ok := byAlg[r.Algorithm]
		if !ok {
			s = &[2]series{{label: r.Algorithm}, {label: r.Algorithm}}
			byAlg[r.Algorithm] = s
			algs = append(algs, r.Algorithm)
		}
		s[0].xs, s[0].ys = append(s[0].xs, float64(r.N)), append(s[0].ys, r.Failover.P50)
		if r.Messages != nil {
			s[1].xs, s[1].ys = append(s[1].xs, float64(r.N)), append(s[1].ys, float64(r.Messages.P50))
		}
	}
	if len(rows) == 0 {
		return
	}
	w.p("## Crash failover and its cost against n")
	w.p("")
	w.p("Each round crashes the coordinator (its elector stops without handing off, memberlist shuts")
	w.p("down without leaving). Times in ms; messages are the election messages per failover,")
	w.p("heartbeats excluded.")
	w.p("")
	w.table([]string{"algorithm", "n", "mode", "rounds", "p50", "p90", "p99", "max", "messages p50 / max", "spurious", "results file"}, rows)
	var times, msgs []series
	var ns []float64
	for _, a := range algs {
		times = append(times, byAlg[a][0])
		if len(byAlg[a][1].xs) > 0 {
			msgs = append(msgs, byAlg[a][1])
			ns = append(ns, byAlg[a][1].xs...)
		}
	}
	if len(times) > 0 && maxLen(times) > 1 {
		w.plot("perf-failover-vs-n.svg", "crash failover p50 against n, by algorithm", linesSVG("Crash failover p50 against n", "members (n, log scale)", "p50 failover (ms, log scale)", times))
	}
	if len(msgs) > 0 && maxLen(msgs) > 1 {
		slices.Sort(ns)
		ns = slices.Compact(ns)
		ref := series{label: "n (reference)", dashed: true, xs: ns}
		for _, n := range ns {
			ref.ys = append(ref.ys, n)
		}
		w.plot("perf-messages-vs-n.svg", "election messages per crash failover against n, by algorithm", linesSVG("Messages per crash failover (p50) against n", "members (n, log scale)", "messages (log scale)", append(msgs, ref)))
	}
	w.conditions(d, runs...)
}

// roundCells are a failover run's rounds, p50, p90, p99, max, messages
// and spurious elections; a run that did not finish shows the rounds it
// completed of those asked.
func roundCells(run namedResults, r failover.Result) []string {
	rounds := strconv.Itoa(r.Rounds)
	if run.Error != "" {
		rounds = fmt.Sprintf("%d of %d, did not finish", len(r.TimesMS), r.Rounds)
	}
	if len(r.TimesMS) == 0 {
		return []string{rounds, "–", "–", "–", "–", "–", "–"}
	}
	return []string{rounds, fmtMS(r.Failover.P50), fmtMS(r.Failover.P90), fmtMS(r.Failover.P99), fmtMS(r.Failover.Max),
		messages(r.Messages), strconv.FormatUint(r.Spurious, 10)}
}

func maxLen(ss []series) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s.xs))
	}
	return n
}

// guardLabel says how a failover run was set up beyond the defaults.
func guardLabel(quorum, voters, busy int) string {
	var parts []string
	if quorum > 0 {
		parts = append(parts, "guard, quorum "+strconv.Itoa(quorum))
	}
	if voters > 0 {
		parts = append(parts, strconv.Itoa(voters)+" voters")
	}
	if busy > 0 {
		parts = append(parts, strconv.Itoa(busy)+" busy processes")
	}
	if len(parts) == 0 {
		return "crash"
	}
	return "crash, " + strings.Join(parts, ", ")
}

func (w *mdWriter) resign(d reportData) {
	var rows [][]string
	var runs []namedResults
	for _, f := range d.failovers {
		r := f.r
		if r.Mode != "resign" {
			continue
		}
		runs = append(runs, f.run)
		rows = append(rows, append([]string{r.Algorithm, strconv.Itoa(r.N)}, roundCells(f.run, r.Result)...))
	}
	if len(rows) == 0 {
		return
	}
	w.p("## Graceful hand-off (`Resign`)")
	w.p("")
	w.p("The coordinator hands off to its successor; timed until every member reports the new one.")
	w.p("")
	w.table([]string{"algorithm", "n", "rounds", "p50", "p90", "p99", "max", "messages p50 / max", "spurious"}, rows)
	w.conditions(d, runs...)
}

func (w *mdWriter) idle(d reportData) {
	if len(d.idles) == 0 {
		return
	}
	w.p("## An idle cluster")
	w.p("")
	w.p("Sends are the electors' messages per second (memberlist's own gossip, the same with or")
	w.p("without electors, is not counted); CPU is the whole process's, in %% of one core; heap is the")
	w.p("live heap after GC per member, memberlist included.")
	w.p("")
	var rows [][]string
	var runs []namedResults
	for _, i := range d.idles {
		r := i.r
		runs = append(runs, i.run)
		setup := r.Algorithm
		if r.Bare {
			setup = "memberlist only"
		}
		if r.Quorum > 0 {
			setup += fmt.Sprintf(", guard %d", r.Quorum)
		}
		if r.Procs > 1 {
			setup += fmt.Sprintf(", %d processes", r.Procs)
		}
		fo := "–"
		if r.Failover != nil {
			fo = fmt.Sprintf("%s / %s (%d)", fmtMS(r.Failover.Failover.P50), fmtMS(r.Failover.Failover.Max), r.Failover.Rounds)
		}
		rows = append(rows, []string{setup, strconv.Itoa(r.N), fmt1(r.Seconds), fmt1(r.CoordinatorSendsPerSec) + " (" + fmt1(r.CoordinatorHeartbeatPerSec) + ")",
			fmt1(r.FollowerMeanSendsPerSec) + " / " + fmt1(r.FollowerMaxSendsPerSec), fmt1(r.ProcessCPUPercent), fmt2(r.PerMemberCPUPercent),
			kib(int64(r.HeapBytesPerMember)), fmt1(r.GoroutinesPerMember), fmt.Sprintf("%d / %d", r.Spurious, r.HeartbeatMisses), fmt1(r.StartSeconds), fo})
	}
	w.table([]string{"members", "n", "window (s)", "coordinator sends/s (heartbeats)", "follower sends/s, mean / max", "CPU %", "CPU % per member", "heap KiB per member", "goroutines per member", "spurious / heartbeat misses", "start (s)", "failover p50 / max ms (rounds)"}, rows)
	w.conditions(d, runs...)
}

func (w *mdWriter) memory(d reportData) {
	if len(d.memories) == 0 {
		return
	}
	w.p("## Memory per member")
	w.p("")
	w.p("Live heap after two GCs (median of 7 readings), per member, in KiB; stacks are the goroutine")
	w.p("stacks, which the heap leaves out. \"Above memberlist\" is what the adapter and the elector add")
	w.p("to a bare memberlist node. The bare nodes run memberlist's own transport, which allocates a")
	w.p("64-KiB buffer per datagram and holds it while the packet is queued; the members run")
	w.p("membership's, which does not: so a member can hold less than a bare node, and the")
	w.p("differences between steps move by tens of KiB from run to run under load.")
	w.p("")
	var rows [][]string
	var runs []namedResults
	for _, m := range d.memories {
		r := m.r
		runs = append(runs, m.run)
		stacksAbove := r.MembershipStackPerNode + r.ElectorStackPerNode - r.MemberlistStackPerNode
		rows = append(rows, []string{strconv.Itoa(r.N), r.Profile,
			kib(r.MemberlistPerNode) + " / " + kib(r.MemberlistStackPerNode) + " / " + fmt1(r.MemberlistGoroutinesPerNode),
			kib(r.MembershipPerNode) + " / " + kib(r.MembershipStackPerNode) + " / " + fmt1(r.MembershipGoroutinesPerNode),
			kib(r.ElectorPerNode) + " / " + kib(r.ElectorStackPerNode) + " / " + fmt1(r.ElectorGoroutinesPerNode),
			kib(r.AboveMemberlistPerNode) + " + " + kib(stacksAbove)})
	}
	w.table([]string{"n", "profile", "bare memberlist: heap / stacks / goroutines", "`membership.Node`", "elector added", "above memberlist: heap + stacks"}, rows)
	w.conditions(d, runs...)
}

func (w *mdWriter) soak(d reportData) {
	if len(d.soaks) == 0 {
		return
	}
	w.p("## Soak under CPU load")
	w.p("")
	var rows [][]string
	var runs []namedResults
	for _, s := range d.soaks {
		r := s.r
		runs = append(runs, s.run)
		rows = append(rows, []string{strconv.Itoa(r.N), fmt1(r.Seconds), strconv.Itoa(r.Burners), strconv.FormatUint(r.Spurious, 10),
			strconv.Itoa(r.LeaderChanges), strconv.FormatUint(r.HeartbeatMisses, 10)})
	}
	w.table([]string{"n", "seconds", "spinning goroutines", "spurious elections", "coordinator changes", "heartbeat misses"}, rows)
	w.conditions(d, runs...)
}

// elections shows the named-election runs (coordbench elections).
func (w *mdWriter) elections(d reportData) {
	if len(d.elections) == 0 {
		return
	}
	w.p("## Named elections (simulated)")
	w.p("")
	w.p("`coordbench elections` runs the deterministic simulator in virtual time, not real members:")
	w.p("each member hosts every name in one `election/group` host (the one the runtime drives), spread")
	w.p("placement, every member of weight 1, and the simulated network carries the hosts' batches, one")
	w.p("packet per destination. The network is the simulator's model of the runtime on a LAN: a 10-ms")
	w.p("tick (heartbeat every 50 ms, K = 3 misses), one-way delays of 1–5 ms, membership reporting a")
	w.p("crash or a return 1 s late (the followers' heartbeat detector, 150 ms, acts first). Leaders")
	w.p("are the names each member leads once settled. Idle packets are the batches each member sends")
	w.p("per virtual second over `-idle` (10 s); \"one name\" is the busiest member of a one-name cluster of the")
	w.p("same n in the same run. Each round crashes the member that leads the most names, at a random")
	w.p("phase of the heartbeat period, and times every name it led from the crash until every survivor")
	w.p("reports the same new coordinator for it (virtual ms); the member then comes back and the")
	w.p("cluster settles. Spurious elections are those started in the idle window and in the 1-s quiet")
	w.p("window before each round. Bytes per name per member: the live heap (two GCs) of the settled,")
	w.p("idle cluster less that of the one-name cluster, over n × (names − 1), less the simulator's own")
	w.p("record per name and member. The figures are virtual time and do not depend on the machine.")
	w.p("")
	var rows [][]string
	var runs []namedResults
	for _, e := range d.elections {
		r := e.r
		runs = append(runs, e.run)
		guard := "–"
		if r.Quorum > 0 {
			guard = strconv.Itoa(r.Quorum)
		}
		rows = append(rows, []string{r.Algorithm, guard, strconv.Itoa(r.N), commas(strconv.Itoa(r.Elections)),
			fmt.Sprintf("%d / %s", r.LeadersPerMember.Max, fmt1(r.LeadersPerMember.Mean)),
			fmt.Sprintf("%s / %s (%s×)", fmt1(r.IdlePackets.MaxMember), fmt1(r.IdlePackets.SingleElection), strconv.FormatFloat(r.IdlePackets.Ratio, 'f', 3, 64)),
			fmt1(r.IdlePackets.PairsPerPacket),
			fmt.Sprintf("%s (%d)", commas(strconv.Itoa(r.FailoverNames)), r.Rounds),
			fmtMS(r.Failover.P50), fmtMS(r.Failover.P90), fmtMS(r.Failover.P99), fmtMS(r.Failover.Max),
			strconv.FormatUint(r.Spurious, 10), commas(strconv.FormatFloat(r.BytesPerName, 'f', 0, 64))})
	}
	w.table([]string{"algorithm", "guard", "n", "names", "leaders per member, max / mean", "idle packets/s, busiest / one name", "pairs per packet",
		"names timed (rounds)", "p50", "p90", "p99", "max", "spurious", "bytes per name per member"}, rows)
	w.p("A failover is the followers' detector (about 120 ms here: 3 missed heartbeats, counted from a")
	w.p("random phase) and then the election, whose length is the algorithm's: the bully's top survivor")
	w.p("asks the silent coordinator and, in a pre-vote, the members below it at once, and wins on their")
	w.p("answers, a round trip; the ring's ELECTION goes one lap round the 19 survivors and the outcome")
	w.p("is told directly; the active/relay ring's phases take about two laps in all, the")
	w.p("first message of phase 1 waking the members one hop at a time and the last value going round")
	w.p("again to find itself. The active/relay ring trades that time for its O(n log n) messages; where")
	w.p("failover time matters more than election messages, use the bully algorithm (the default) or the")
	w.p("ring.")
	w.p("")
	w.p("Over real memberlist a packet goes as UDP datagrams of about 1,330 bytes (`membership`'s")
	w.p("`batchDatagram`, 1,400-byte `UDPBufferSize`, no label or key), about 40 heartbeat pairs of")
	w.p("8-byte names: a destination that gets more pairs than that gets more datagrams. With 8")
	w.p("members of 1,000 names each in one process, where the simulator's busiest member sends 125")
	w.p("pairs per packet to each of the 7 others (1.0× a one-name cluster's packets; `coordbench")
	w.p("elections -n 8 -elections 1000 -rounds 2`), memberlist")
	w.p("carried 558.6 datagrams/s from the busiest member against 140.7 with the unnamed election")
	w.p("alone: 3.97× (2026-11-29 08:41 UTC, load 1.6; `COORDELECT_MEASURE=1 COORDELECT_MEMBERS=8")
	w.p("go test ./election -run TestMeasureMemberlistIdlePackets -v`). The figure in datagrams")
	w.p("follows the pairs per packet column: about one datagram per 40 pairs.")
	w.p("")
	w.conditions(d, runs...)
}

// recorded shows the results transcribed from earlier runs' logs, each
// with its conditions and note.
func (w *mdWriter) recorded(d reportData) {
	if len(d.recorded) == 0 {
		return
	}
	w.p("## Last measured at n = 1,000 (not re-measured by `run-all.sh`)")
	w.p("")
	w.p("A 1,000-member run takes 10 to 15 minutes and several GiB. These are the last such runs, from")
	w.p("their logs; the code has changed since, so they are not current figures.")
	w.p("")
	var rows [][]string
	for _, r := range d.recorded {
		rows = append(rows, []string{"`" + r.name + "`", recordedFigures(r)})
	}
	w.table([]string{"results file", "figures"}, rows)
	w.p("Conditions:")
	w.p("")
	for _, r := range d.recorded {
		w.p("- %s. %s", runConditions(r, d), r.Note)
	}
	w.p("")
}

// recordedFigures summarises a transcribed result by the fields its
// bench has.
func recordedFigures(r namedResults) string {
	switch r.Bench {
	case "idle":
		var i idleResult
		if json.Unmarshal(r.Result, &i) != nil {
			return "unreadable"
		}
		setup := "no guard"
		if i.Quorum > 0 {
			setup = fmt.Sprintf("quorum guard, %d voters", i.Voters)
		}
		if i.Netns {
			setup += ", a network namespace per process"
		}
		s := fmt.Sprintf("n = %s over %d processes, %s; start %s s; idle: coordinator %s sends/s, CPU %s %% of a core", commas(strconv.Itoa(i.N)), i.Procs,
			setup, commas(strconv.FormatFloat(i.StartSeconds, 'f', -1, 64)), fmt1(i.CoordinatorSendsPerSec), fmt1(i.ProcessCPUPercent))
		if f := i.Failover; f != nil {
			s += fmt.Sprintf("; %d crash failovers: p50 %s ms, p90 %s ms, max %s ms, messages p50 / max %s, spurious elections %d",
				f.Rounds, fmtMS(f.Failover.P50), fmtMS(f.Failover.P90), fmtMS(f.Failover.Max), messages(f.Messages), f.Spurious)
		}
		return s
	case "memory":
		var m memoryResult
		if json.Unmarshal(r.Result, &m) != nil {
			return "unreadable"
		}
		return fmt.Sprintf("n = %s: bare memberlist %s KiB of heap per member; adapter and elector above it %s KiB of heap",
			commas(strconv.Itoa(m.N)), kib(m.MemberlistPerNode), kib(m.AboveMemberlistPerNode))
	}
	return r.Bench
}

// Number formats: fixed precision, thousands separated by commas.
func fmtMS(v float64) string { return commas(strconv.FormatFloat(v, 'f', 1, 64)) }
func fmt1(v float64) string  { return commas(strconv.FormatFloat(v, 'f', 1, 64)) }
func fmt2(v float64) string  { return strconv.FormatFloat(v, 'f', 2, 64) }
func kib(b int64) string     { return fmt1(float64(b) / 1024) }

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 3, 64)
}

func messages(m *failover.Messages) string {
	if m == nil {
		return "–"
	}
	return fmt.Sprintf("%s / %s", commas(strconv.FormatUint(m.P50, 10)), commas(strconv.FormatUint(m.Max, 10)))
}

// commas puts a comma between each three digits of the integer part.
func commas(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}
