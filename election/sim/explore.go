package sim

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
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
	// Context, when set, stops the exploration between runs once it is
	// done: Explore returns what it has with the context's error.
	Context context.Context
}

// ExploreResult sums up an exploration.
type ExploreResult struct {
	Algorithm        string    `json:"algorithm"`
	N                int       `json:"n"`
	Runs             int       `json:"runs"`
	Violations       int       `json:"violations"`
	MaxConvergenceMs int64     `json:"max_convergence_ms"`
	Seed             uint64    `json:"seed"`
	Failures         []Failure `json:"failures,omitempty"`
}

// Failure is one run that broke a property, with the scenario that replays
// it (run it with demo sim -script, or put it in election/testdata).
type Failure struct {
	Seed       uint64   `json:"seed"`
	Violations []string `json:"violations"`
	Script     string   `json:"-"`
}

// Explore runs the schedules. Each schedule is a scenario script, so a
// failing one replays exactly from its text.
func Explore(cfg ExploreConfig) (ExploreResult, error) {
	if cfg.N < 1 || cfg.Runs < 1 {
		return ExploreResult{}, fmt.Errorf("sim: explore: N = %d, Runs = %d: want both >= 1", cfg.N, cfg.Runs)
	}
	if cfg.BoundMs == 0 {
		cfg.BoundMs = 30_000
	}
	res := ExploreResult{Algorithm: cfg.Algorithm.String(), N: cfg.N, Runs: cfg.Runs, Seed: cfg.Seed}
	for i := 0; i < cfg.Runs; i++ {
		if cfg.Context != nil && cfg.Context.Err() != nil {
			res.Runs = i
			return res, fmt.Errorf("sim: explore stopped after %d of %d runs: %w", i, cfg.Runs, cfg.Context.Err())
		}
		seed := cfg.Seed + uint64(i)
		script := Schedule(cfg.Algorithm, cfg.N, seed, cfg.BoundMs)
		conv, violations, err := RunScript(script)
		if err != nil {
			return res, fmt.Errorf("sim: explore seed %d: %w", seed, err)
		}
		res.MaxConvergenceMs = max(res.MaxConvergenceMs, conv)
		if len(violations) > 0 {
			res.Violations++
			res.Failures = append(res.Failures, Failure{Seed: seed, Violations: violations, Script: script})
		}
	}
	return res, nil
}

// RunScript runs a scenario script and returns how long the final "check"
// took to reach agreement (virtual ms) and every violation.
func RunScript(script string) (convergenceMs int64, violations []string, err error) {
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
			return 0, nil, fmt.Errorf("%q: %w", line, err)
		}
		if _, agreed := sc.sim.Agreement(); agreed && strings.HasPrefix(line, "check") {
			convergenceMs = sc.sim.Now() - before // runs with no majority alive wait the bound out
		}
	}
	if sc.sim == nil {
		return 0, nil, fmt.Errorf("script has no cluster")
	}
	return convergenceMs, sc.sim.Checker().Violations, nil
}

// Schedule writes one random fault schedule as a scenario: crashes (also at
// protocol triggers), restarts, message loss up to 30%, duplication,
// reordering, partitions into random halves or a majorities ring (Jepsen)
// and heals, rating changes,
// resigns and spurious detections; then the faults stop and the liveness
// check runs. Half the schedules run with the quorum guard.
func Schedule(alg core.Algorithm, n int, seed uint64, boundMs int64) string {
	rng := rand.New(rand.NewPCG(seed, 0xfa017))
	g := &schedule{rng: rng, n: n, down: map[int]bool{}}
	quorum := ""
	if rng.IntN(2) == 0 {
		quorum = " quorum=" + strconv.Itoa(n)
	}
	mode := "view"
	if rng.IntN(4) == 0 {
		mode = "textbook"
	}
	g.b.WriteString(fmt.Sprintf("# explore: algorithm %s, n %d, seed %d\n\n", alg, n, seed))
	g.line(fmt.Sprintf("cluster algorithm=%s ids=(%s) mode=%s detector=on seed=%d%s", alg, g.ids(), mode, seed, quorum))
	for k := 3 + rng.IntN(10); k > 0; k-- {
		g.line(fmt.Sprintf("advance ms=%d", 1+rng.IntN(400)))
		g.fault()
	}
	g.line("network loss=0 dup=0 reorder=0")
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
