package sim

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/election/core"
)

// ExploreConfig asks for Runs seeded random fault schedules on a cluster of
// N nodes running Algorithm (view mode, heartbeat detector on).
type ExploreConfig struct {
	Algorithm core.Algorithm
	N         int
	Runs      int
	// Seed of the first run; run i uses Seed + i.
	Seed uint64
	// BoundMs is the liveness bound: once faults stop, every live node must
	// agree on one coordinator within it. Default 30,000.
	BoundMs int64
	// Faults selects the fault kinds and their weights (ParseFaults):
	// "" or "classic" for the original schedule, "harsh" for every kind.
	Faults string
	// ViewOnly runs every schedule in View mode (the runtime's mode);
	// otherwise one schedule in four runs in Textbook mode.
	ViewOnly bool
	// Names, when above 0, runs every schedule with that many named
	// elections (group.Group on every member; the checker checks each):
	// all spread (group.PlaceSpread), a quarter of them with some members
	// abstaining (namesLines). A seed draws the same faults with and
	// without names. 0: one unnamed election.
	Names int
	// Context, when set, stops the exploration between runs once it is
	// done: Explore returns what it has with the context's error.
	Context context.Context
}

// ExploreResult sums up an exploration.
type ExploreResult struct {
	Algorithm        string `json:"algorithm"`
	N                int    `json:"n"`
	Runs             int    `json:"runs"`
	Violations       int    `json:"violations"`
	MaxConvergenceMs int64  `json:"max_convergence_ms"`
	Seed             uint64 `json:"seed"`
	Faults           string `json:"faults"`
	// Mode is "view" when every schedule ran in View mode (ViewOnly), ""
	// when one in four ran in Textbook mode.
	Mode string `json:"mode,omitempty"`
	// Names is the number of named elections of every schedule
	// (ExploreConfig.Names); 0: one unnamed election.
	Names int `json:"names,omitempty"`
	// Stretched counts the schedules in which a guarded coordinator asked
	// for a lease longer than the configured one (slow round trips: the
	// harsh "slow" spells); MaxLeaseMs is the longest lease asked.
	Stretched  int   `json:"stretched"`
	MaxLeaseMs int64 `json:"max_lease_ms"`
	// ByKind counts the schedules that broke each property.
	ByKind   map[string]int `json:"by_kind,omitempty"`
	Failures []Failure      `json:"failures,omitempty"`
}

// Failure is one run that broke a property, with the scenario that replays
// it (run it with demo sim -script, or put it in election/sim/testdata/scenarios).
type Failure struct {
	Seed       uint64   `json:"seed"`
	Violations []string `json:"violations"`
	Kinds      []string `json:"kinds"`
	Script     string   `json:"-"`
}

// Explore runs the schedules. Each schedule is a scenario script, so a
// failing one replays exactly from its text.
func Explore(cfg ExploreConfig) (ExploreResult, error) {
	if cfg.N < 1 || cfg.Runs < 1 {
		return ExploreResult{}, fmt.Errorf("sim: explore: N = %d, Runs = %d: want both >= 1", cfg.N, cfg.Runs)
	}
	if cfg.Names < 0 || cfg.Names > maxExploreNames {
		return ExploreResult{}, fmt.Errorf("sim: explore: Names = %d: want 0 to %d", cfg.Names, maxExploreNames)
	}
	if cfg.BoundMs == 0 {
		cfg.BoundMs = 30_000
	}
	faults, err := ParseFaults(cfg.Faults)
	if err != nil {
		return ExploreResult{}, err
	}
	faults.viewOnly = cfg.ViewOnly
	faults.names = cfg.Names
	res := ExploreResult{Algorithm: cfg.Algorithm.String(), N: cfg.N, Runs: cfg.Runs, Seed: cfg.Seed, Faults: faults.String(), Names: cfg.Names}
	if cfg.ViewOnly {
		res.Mode = "view"
	}
	for i := 0; i < cfg.Runs; i++ {
		if cfg.Context != nil && cfg.Context.Err() != nil {
			res.Runs = i
			return res, fmt.Errorf("sim: explore stopped after %d of %d runs: %w", i, cfg.Runs, cfg.Context.Err())
		}
		seed := cfg.Seed + uint64(i)
		script := ScheduleWith(cfg.Algorithm, cfg.N, seed, cfg.BoundMs, faults)
		out, err := RunScriptResult(script)
		if err != nil {
			return res, fmt.Errorf("sim: explore seed %d: %w", seed, err)
		}
		res.MaxConvergenceMs = max(res.MaxConvergenceMs, out.ConvergenceMs)
		res.MaxLeaseMs = max(res.MaxLeaseMs, out.MaxLeaseMs)
		if out.Stretched {
			res.Stretched++
		}
		if len(out.Violations) > 0 {
			res.Violations++
			if res.ByKind == nil {
				res.ByKind = map[string]int{}
			}
			for _, k := range distinct(out.Kinds) {
				res.ByKind[k]++
			}
			res.Failures = append(res.Failures, Failure{Seed: seed, Violations: out.Violations, Kinds: out.Kinds, Script: script})
		}
	}
	return res, nil
}

func distinct(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// ScriptResult is what running a scenario script found.
type ScriptResult struct {
	ConvergenceMs int64
	Violations    []string
	Kinds         []string // Kinds[i] is the property Violations[i] breaks
	// Stretched: a guarded coordinator asked for a lease longer than the
	// configured one; MaxLeaseMs is the longest lease asked (0 without
	// the guard).
	Stretched  bool
	MaxLeaseMs int64
}

// RunScriptResult runs a scenario script and returns how long the final
// "check" took to reach agreement (virtual ms), every violation with its
// property, and the longest lease a coordinator asked for.
func RunScriptResult(script string) (ScriptResult, error) {
	sc, conv, err := execScript(script)
	if err != nil {
		return ScriptResult{}, err
	}
	c := sc.sim.Checker()
	return ScriptResult{ConvergenceMs: conv, Violations: c.Violations, Kinds: c.Kinds,
		Stretched: c.LeaseStretched, MaxLeaseMs: int64(c.LeaseHigh) * sc.sim.cfg.TickMs}, nil
}

func runScript(script string) (convergenceMs int64, violations, kinds []string, err error) {
	sc, conv, err := execScript(script)
	if err != nil {
		return 0, nil, nil, err
	}
	c := sc.sim.Checker()
	return conv, c.Violations, c.Kinds, nil
}

// execScript runs a scenario script and returns the script run and how
// long its final "check" took to reach agreement.
func execScript(script string) (_ *Script, convergenceMs int64, err error) {
	var sc Script
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "----" || strings.HasPrefix(line, "#") {
			continue
		}
		before := int64(0)
		if sc.sim != nil {
			before = sc.sim.Now()
		}
		if _, err := sc.ExecLine(line); err != nil {
			return nil, 0, fmt.Errorf("%q: %w", line, err)
		}
		if sc.sim == nil {
			continue // names declared before the cluster
		}
		if _, agreed := sc.sim.Agreement(); agreed && strings.HasPrefix(line, "check") {
			convergenceMs = sc.sim.Now() - before // runs with no majority alive wait the bound out
		}
	}
	if sc.sim == nil {
		return nil, 0, fmt.Errorf("script has no cluster")
	}
	return &sc, convergenceMs, nil
}

// Schedule writes one random fault schedule as a scenario: crashes (also at
// protocol triggers), restarts, message loss up to 30%, duplication,
// reordering, partitions into random halves or a majorities ring (Jepsen)
// and heals, rating changes,
// resigns and spurious detections; then the faults stop and the liveness
// check runs. Half the schedules run with the quorum guard.
func Schedule(alg core.Algorithm, n int, seed uint64, boundMs int64) string {
	return classicSchedule(alg, n, seed, boundMs, false, 0)
}

// maxExploreNames bounds ExploreConfig.Names.
const maxExploreNames = 1000

// classicSchedule is Schedule, in View mode only if viewOnly, with names
// named elections.
func classicSchedule(alg core.Algorithm, n int, seed uint64, boundMs int64, viewOnly bool, names int) string {
	rng := rand.New(rand.NewPCG(seed, 0xfa017))
	g := &schedule{rng: rng, n: n, down: map[int]bool{}}
	quorum := ""
	if rng.IntN(2) == 0 {
		quorum = " quorum=" + strconv.Itoa(n)
	}
	mode := "view"
	if rng.IntN(4) == 0 && !viewOnly {
		mode = "textbook"
	}
	g.b.WriteString(fmt.Sprintf("# explore: algorithm %s, n %d, seed %d\n\n", alg, n, seed))
	g.namesLines(seed, names, nil, quorum != "")
	g.line(fmt.Sprintf("cluster algorithm=%s ids=(%s) mode=%s detector=on seed=%d%s", alg, g.ids(), mode, seed, quorum))
	for k := 3 + rng.IntN(10); k > 0; k-- {
		g.line(fmt.Sprintf("advance ms=%d", 1+rng.IntN(400)))
		g.fault()
	}
	g.line(finalNetwork)
	g.line("heal")
	check := "check"
	if alg == core.Bully && !g.resigned {
		check = "check highest"
	}
	g.line(fmt.Sprintf("%s max=%d", check, boundMs))
	return g.b.String()
}

type schedule struct {
	rng      *rand.Rand
	n        int
	down     map[int]bool
	resigned bool
	b        strings.Builder
}

func (g *schedule) line(s string) { g.b.WriteString(s + "\n----\n\n") }

func (g *schedule) ids() string {
	ids := make([]string, g.n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(ids, ",")
}

func (g *schedule) node() int { return 1 + g.rng.IntN(g.n) }

func (g *schedule) fault() {
	switch g.rng.IntN(10) {
	case 0, 1:
		if id := g.node(); len(g.down) < g.n-1 && !g.down[id] {
			g.down[id] = true
			g.line(fmt.Sprintf("crash %d", id))
		}
	case 2:
		id := g.node()
		if len(g.down) < g.n-1 && !g.down[id] {
			g.down[id] = true
			types := []string{"coordinator", "election", "answer"}
			g.line(fmt.Sprintf("crash %d on=%s", id, types[g.rng.IntN(len(types))]))
		}
	case 3:
		// The lowest id that is down: a map's order would make the
		// schedule differ between runs of the same seed.
		if len(g.down) > 0 {
			id := slices.Min(slices.Collect(maps.Keys(g.down)))
			delete(g.down, id)
			g.line(fmt.Sprintf("restart %d", id))
		}
	case 4:
		g.line(fmt.Sprintf("network loss=%.2f dup=%.2f reorder=%.2f",
			g.rng.Float64()*0.3, g.rng.Float64()*0.1, g.rng.Float64()*0.2))
	case 5:
		if g.rng.IntN(3) == 0 {
			g.majoritiesRing()
		} else {
			g.partition()
		}
	case 6:
		g.line("heal")
	case 7:
		if id := g.node(); !g.down[id] {
			g.line(fmt.Sprintf("rating %d %d", id, 1+g.rng.IntN(3*g.n)))
		}
	case 8:
		if id := g.node(); !g.down[id] {
			g.resigned = true
			g.line(fmt.Sprintf("resign %d", id))
		}
	default:
		if id := g.node(); !g.down[id] {
			g.line(fmt.Sprintf("detect %d", id))
		}
	}
}

// majoritiesRing is Jepsen's majorities-ring partition over a random order.
func (g *schedule) majoritiesRing() {
	perm := g.rng.Perm(g.n)
	ids := make([]string, len(perm))
	for i, v := range perm {
		ids[i] = strconv.Itoa(v + 1)
	}
	g.line(fmt.Sprintf("partition ring=(%s)", strings.Join(ids, ",")))
}

// partition splits the nodes into two random halves (sizes 1..n-1).
func (g *schedule) partition() {
	if g.n < 2 {
		return
	}
	perm := g.rng.Perm(g.n)
	cut := 1 + g.rng.IntN(g.n-1)
	side := func(ix []int) string {
		s := make([]string, len(ix))
		for i, v := range ix {
			s[i] = strconv.Itoa(v + 1)
		}
		return "(" + strings.Join(s, ",") + ")"
	}
	g.line(fmt.Sprintf("partition %s %s", side(perm[:cut]), side(perm[cut:])))
}

// finalNetwork begins the final phase of every schedule: the faults stop
// (harsh schedules with slow spells add " delay=1-5"). Shrink finds the
// final phase by it.
const finalNetwork = "network loss=0 dup=0 reorder=0"

// Shrink removes fault lines from a failing schedule, one at a time, for
// as long as the script still breaks the property kind, and returns the
// shortest script found with its violations. The cluster line and the
// final phase (from the last line that begins "network loss=0 dup=0
// reorder=0") stay.
func Shrink(script, kind string) (string, []string, error) {
	var cmds []string
	for _, l := range strings.Split(script, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && l != "----" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	tail := len(cmds)
	for i := len(cmds) - 1; i > 0; i-- {
		if cmds[i] == finalNetwork || strings.HasPrefix(cmds[i], finalNetwork+" ") {
			tail = i
			break
		}
	}
	// The cluster line; the names declared before it are fault lines
	// too (without them the schedule runs one unnamed election).
	cl := slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "cluster ") })
	if cl < 0 {
		return "", nil, fmt.Errorf("sim: shrink: the script has no cluster line")
	}
	fails := func(c []string) ([]string, bool) {
		_, v, k, err := runScript(strings.Join(c, "\n"))
		if err != nil {
			return nil, false
		}
		var out []string
		for i := range v {
			if k[i] == kind {
				out = append(out, v[i])
			}
		}
		return out, len(out) > 0
	}
	best, ok := fails(cmds)
	if !ok {
		return "", nil, fmt.Errorf("sim: shrink: the script does not break %s", kind)
	}
	for changed := true; changed; {
		changed = false
		for i := tail - 1; i >= 0; i-- {
			if i == cl {
				continue
			}
			try := slices.Delete(slices.Clone(cmds), i, i+1)
			if v, ok := fails(try); ok {
				cmds, best, changed = try, v, true
				tail--
				if i < cl {
					cl--
				}
			}
		}
		// Fewer names: halve each names count while it still fails.
		for i := 0; i < cl; i++ {
			rest, found := strings.CutPrefix(cmds[i], "names count=")
			k, tailArgs, _ := strings.Cut(rest, " ")
			v, err := strconv.Atoi(k)
			if !found || err != nil || v <= 1 {
				continue
			}
			try := slices.Clone(cmds)
			try[i] = strings.TrimSpace(fmt.Sprintf("names count=%d %s", v/2, tailArgs))
			if vs, ok := fails(try); ok {
				cmds, best, changed = try, vs, true
			}
		}
		// A plainer cluster: without non-voters, tied ratings, the
		// textbook mode.
		for _, re := range shrinkCluster {
			if c := re.ReplaceAllString(cmds[cl], re2repl(re)); c != cmds[cl] {
				try := slices.Clone(cmds)
				try[cl] = c
				if v, ok := fails(try); ok {
					cmds, best, changed = try, v, true
				}
			}
		}
		// Shorter waits: halve each advance while it still fails.
		for i := cl + 1; i < tail; i++ {
			ms, found := strings.CutPrefix(cmds[i], "advance ms=")
			v, err := strconv.Atoi(ms)
			if !found || err != nil || v <= 1 {
				continue
			}
			try := slices.Clone(cmds)
			try[i] = fmt.Sprintf("advance ms=%d", v/2)
			if vs, ok := fails(try); ok {
				cmds, best, changed = try, vs, true
			}
		}
	}
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(c + "\n----\n\n")
	}
	return b.String(), best, nil
}

var shrinkCluster = []*regexp.Regexp{
	regexp.MustCompile(` nonvoters=\([^)]*\)`),
	regexp.MustCompile(` ratings=\([^)]*\)`),
	regexp.MustCompile(`mode=textbook`),
}

func re2repl(re *regexp.Regexp) string {
	if strings.Contains(re.String(), "textbook") {
		return "mode=view"
	}
	return ""
}
