package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/election/core"
)

// The fault kinds of the harsh schedules (ParseFaults). The first group
// are faults drawn during the fault phase, by weight; the second are
// set-ups of the cluster and of the final check, each on or off.
var faultKinds = []string{
	"crash",     // a node crashes
	"trigger",   // a node crashes about to send its Nth message of any type
	"restart",   // the lowest crashed node restarts
	"quick",     // crash and restart within 1-50 ms (the coordinator half the time)
	"network",   // loss up to 60 %, duplication and reordering up to 50 %
	"slow",      // a slow spell: one-way delays of 10-400 ms for 0.5-5 s or more
	"partition", // two random sides
	"ring",      // Jepsen's majorities ring
	"flap",      // a partition that heals and comes back 2-5 times
	"heal",      // every partition and block goes
	"block",     // one link, one way (in the views or not)
	"mute",      // the coordinator's messages reach nobody; it hears all
	"deaf",      // the coordinator hears nobody; its messages go out
	"views",     // membership reports changes after up to 3 s, unevenly
	"rating",    // a node's rating changes (to another's: ties)
	"resign",    // a node resigns
	"detect",    // a spurious detection
	"forge-max", // a forged heartbeat in the coordinator's name, epoch 2^32-1
	"forge-tag", // a forged frame whose term names another node
	"redeploy",  // every voter restarts; non-voters keep running
}

var setupKinds = []string{
	"nonvoters", // a third of the members (at most) are non-voters
	"ties",      // ratings drawn from a small range: ties
	"isolate",   // guard: the coordinator keeps a minority at the end; the majority must elect
}

// Faults is a selection of fault kinds with weights.
type Faults struct {
	classic bool
	weight  map[string]int
	setup   map[string]bool
	// viewOnly: every schedule in View mode (ExploreConfig.ViewOnly).
	viewOnly bool
	// names: the named elections of every schedule (ExploreConfig.Names).
	names int
}

// ParseFaults reads a selection: "" or "classic" (the original schedule:
// crashes, triggers on election traffic, restarts, loss up to 30 %,
// partitions, heals, ratings, resigns, detections), "harsh" (every kind,
// default weights), or a comma-separated list of kinds, each optionally
// KIND=WEIGHT, e.g. "crash=3,forge-max,nonvoters". "harsh,-forge-max"
// removes a kind from harsh.
func ParseFaults(spec string) (Faults, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "classic" {
		return Faults{classic: true}, nil
	}
	f := Faults{weight: map[string]int{}, setup: map[string]bool{}}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "harsh" {
			for _, k := range faultKinds {
				f.weight[k] = defaultWeight(k)
			}
			for _, k := range setupKinds {
				f.setup[k] = true
			}
			continue
		}
		if k, ok := strings.CutPrefix(item, "-"); ok {
			delete(f.weight, k)
			delete(f.setup, k)
			continue
		}
		k, w, hasW := strings.Cut(item, "=")
		weight := defaultWeight(k)
		if hasW {
			v, err := strconv.Atoi(w)
			if err != nil || v < 0 || v > 1000 {
				return Faults{}, fmt.Errorf("sim: faults %q: weight %q: want 0..1000", item, w)
			}
			weight = v
		}
		switch {
		case slices.Contains(faultKinds, k):
			f.weight[k] = weight
		case slices.Contains(setupKinds, k):
			f.setup[k] = weight > 0
		default:
			return Faults{}, fmt.Errorf("sim: faults: unknown kind %q (want classic, harsh or some of %s)", k,
				strings.Join(append(slices.Clone(faultKinds), setupKinds...), ", "))
		}
	}
	if f.total() == 0 {
		return Faults{}, fmt.Errorf("sim: faults %q: no fault kind with a weight above 0", spec)
	}
	return f, nil
}

func defaultWeight(k string) int {
	switch k {
	case "crash", "network", "partition", "slow":
		return 2
	}
	return 1
}

func (f Faults) total() int {
	t := 0
	for _, w := range f.weight {
		t += w
	}
	return t
}

// String is the selection in ParseFaults' syntax, kinds in a fixed order.
func (f Faults) String() string {
	if f.classic {
		return "classic"
	}
	var out []string
	for _, k := range faultKinds {
		if w, ok := f.weight[k]; ok {
			out = append(out, k+"="+strconv.Itoa(w))
		}
	}
	for _, k := range setupKinds {
		if f.setup[k] {
			out = append(out, k)
		}
	}
	return strings.Join(out, ",")
}

// ScheduleWith writes one random fault schedule with the selected faults.
func ScheduleWith(alg core.Algorithm, n int, seed uint64, boundMs int64, f Faults) string {
	if f.classic {
		return classicSchedule(alg, n, seed, boundMs, f.viewOnly, f.names)
	}
	rng := rand.New(rand.NewPCG(seed, 0x4a55c))
	g := &harsh{schedule: schedule{rng: rng, n: n, down: map[int]bool{}}, f: f, nonvoter: map[int]bool{}}
	return g.write(alg, seed, boundMs)
}

type harsh struct {
	schedule
	f        Faults
	nonvoter map[int]bool
	quorum   bool
}

func (g *harsh) write(alg core.Algorithm, seed uint64, boundMs int64) string {
	rng, n := g.rng, g.n
	extra := ""
	if rng.IntN(2) == 0 {
		g.quorum = true
		extra += " quorum=" + strconv.Itoa(n)
	}
	mode := "view"
	if rng.IntN(4) == 0 && !g.f.viewOnly { // the draw is made either way: a seed's faults do not depend on ViewOnly
		mode = "textbook"
	}
	if g.f.setup["nonvoters"] && n >= 3 && rng.IntN(2) == 0 {
		for k := 1 + rng.IntN(n/3); len(g.nonvoter) < k; {
			g.nonvoter[g.node()] = true
		}
		extra += " nonvoters=(" + g.list(slices.Sorted(maps.Keys(g.nonvoter))) + ")"
	}
	if g.f.setup["ties"] && rng.IntN(2) == 0 {
		r := make([]int, n)
		for i := range r {
			r[i] = 1 + rng.IntN(max(2, n/2))
		}
		extra += " ratings=(" + g.list(r) + ")"
	}
	g.b.WriteString(fmt.Sprintf("# explore: algorithm %s, n %d, seed %d, faults %s\n\n", alg, n, seed, g.f))
	g.namesLines(seed, g.f.names, g.nonvoter, g.quorum)
	g.line(fmt.Sprintf("cluster algorithm=%s ids=(%s) mode=%s detector=on seed=%d%s", alg, g.ids(), mode, seed, extra))
	for k := 3 + rng.IntN(10); k > 0; k-- {
		g.line(fmt.Sprintf("advance ms=%d", 1+rng.IntN(400)))
		g.harshFault()
	}
	g.line(finalNetwork + g.delayReset())
	g.line("heal")
	if g.quorum && g.f.setup["isolate"] && n >= 3 && rng.IntN(3) == 0 {
		// The old coordinator keeps fewer than a majority, itself
		// included; the rest are connected: they must elect.
		keep := rng.IntN((n/2 + 1) - 1) // 0 .. majority-2
		g.line(fmt.Sprintf("isolate @coord keep=%d%s", keep, g.viewsOpt()))
		g.line(fmt.Sprintf("check majority max=%d", boundMs))
		g.line("heal")
	}
	check := "check"
	if alg == core.Bully && !g.resigned {
		check = "check highest"
	}
	g.line(fmt.Sprintf("%s max=%d", check, boundMs))
	return g.b.String()
}

func (g *harsh) list(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// pick draws a fault kind by weight, in faultKinds order.
func (g *harsh) pick() string {
	r := g.rng.IntN(g.f.total())
	for _, k := range faultKinds {
		if r -= g.f.weight[k]; r < 0 {
			return k
		}
	}
	return faultKinds[0]
}

// crashable is a random up node that may crash without taking the whole
// cluster down.
func (g *harsh) crashable() (int, bool) {
	id := g.node()
	return id, len(g.down) < g.n-1 && !g.down[id]
}

func (g *harsh) harshFault() {
	rng := g.rng
	switch g.pick() {
	case "crash":
		if id, ok := g.crashable(); ok {
			g.down[id] = true
			g.line(fmt.Sprintf("crash %d", id))
		}
	case "trigger":
		if id, ok := g.crashable(); ok {
			g.down[id] = true
			types := core.MsgTypes()
			g.line(fmt.Sprintf("crash %d on=%s nth=%d", id, types[rng.IntN(len(types))], 1+rng.IntN(3)))
		}
	case "restart":
		if len(g.down) > 0 {
			id := slices.Min(slices.Collect(maps.Keys(g.down)))
			delete(g.down, id)
			g.line(fmt.Sprintf("restart %d", id))
		}
	case "quick":
		if rng.IntN(2) == 0 {
			g.line("crash @coord")
			g.line(fmt.Sprintf("advance ms=%d", 1+rng.IntN(50)))
			g.line("restart @last")
		} else if id, ok := g.crashable(); ok {
			g.line(fmt.Sprintf("crash %d", id))
			g.line(fmt.Sprintf("advance ms=%d", 1+rng.IntN(50)))
			g.line(fmt.Sprintf("restart %d", id))
		}
	case "network":
		g.line(fmt.Sprintf("network loss=%.2f dup=%.2f reorder=%.2f",
			rng.Float64()*0.6, rng.Float64()*0.5, rng.Float64()*0.5))
	case "slow":
		g.slow()
	case "partition":
		g.partition()
	case "ring":
		g.majoritiesRing()
	case "flap":
		g.flap()
	case "heal":
		g.line("heal")
	case "block":
		a, b := g.node(), g.node()
		if a != b {
			views := ""
			if rng.IntN(2) == 0 {
				views = " views=off"
			}
			g.line(fmt.Sprintf("block from=%d to=%d%s", a, b, views))
		}
	case "mute":
		g.line("block from=@coord to=all" + g.viewsOpt())
	case "deaf":
		g.line("block from=all to=@coord" + g.viewsOpt())
	case "views":
		lo := rng.IntN(500)
		g.line(fmt.Sprintf("views delay=%d-%d", lo, lo+rng.IntN(3001-lo)))
	case "rating":
		if id := g.node(); !g.down[id] {
			r := 1 + rng.IntN(3*g.n)
			if g.f.setup["ties"] && rng.IntN(2) == 0 {
				r = g.node() // another's rating by default: a tie
			}
			g.line(fmt.Sprintf("rating %d %d", id, r))
		}
	case "resign":
		if id := g.node(); !g.down[id] {
			g.resigned = true
			g.line(fmt.Sprintf("resign %d", id))
		}
	case "detect":
		if id := g.node(); !g.down[id] {
			g.line(fmt.Sprintf("detect %d", id))
		}
	case "forge-max":
		g.line("forge from=@coord to=all type=heartbeat term=max" + map[bool]string{true: " confirmed"}[g.quorum])
	case "forge-tag":
		types := []string{"heartbeat", "coordinator", "election", "answer"}
		g.line(fmt.Sprintf("forge from=%d to=all type=%s term=foreign%s", g.node(), types[rng.IntN(len(types))],
			map[bool]string{true: " confirmed"}[g.quorum]))
	case "redeploy":
		g.redeploy()
	}
}

// defaultDelay is the one-way delay of the explorer's clusters (the
// simulator's default: their cluster lines set none), which the end of a
// slow spell and the final phase restore.
const defaultDelay = "1-5"

// delayReset is what the final phase's network line adds when the
// selection has slow spells: the default delay back, so that the liveness
// check runs on the usual network. Without slow spells the line stays as
// it was, and so do the schedules.
func (g *harsh) delayReset() string {
	if g.f.weight["slow"] > 0 {
		return " delay=" + defaultDelay
	}
	return ""
}

// slow starts a slow spell: one-way delays of MIN-MAX ms, MIN 10-100 and
// MAX up to 300 ms above it, so that heartbeat round trips (up to 800 ms)
// exceed the quorum lease (150 ms with the defaults) and a guarded
// coordinator stretches its lease, up to its cap (QuorumLeaseMax, 1.2 s)
// and past it; half the time with loss, duplication and reordering as
// well. The spell lasts 0.5-5 s; half the time it ends then (a fast
// network again, with a coordinator that still holds a stretched lease),
// else it goes on through the next faults until a later spell or the
// final phase changes the delay.
func (g *harsh) slow() {
	rng := g.rng
	lo := 10 + rng.IntN(91)
	hi := lo + 20 + rng.IntN(281)
	loss, dup, reorder := 0.0, 0.0, 0.0
	if rng.IntN(2) == 0 {
		loss, dup, reorder = rng.Float64()*0.3, rng.Float64()*0.2, rng.Float64()*0.3
	}
	g.line(fmt.Sprintf("network loss=%.2f dup=%.2f reorder=%.2f delay=%d-%d", loss, dup, reorder, lo, hi))
	g.line(fmt.Sprintf("advance ms=%d", 500+rng.IntN(4501)))
	if rng.IntN(2) == 0 {
		g.line(finalNetwork + " delay=" + defaultDelay)
	}
}

func (g *harsh) viewsOpt() string {
	if g.rng.IntN(2) == 0 {
		return " views=off"
	}
	return ""
}

// flap partitions the cluster into two random sides, then heals and cuts
// again 2-5 times, 20-300 ms apart.
func (g *harsh) flap() {
	if g.n < 2 {
		return
	}
	perm := g.rng.Perm(g.n)
	cut := 1 + g.rng.IntN(g.n-1)
	side := func(ix []int) string {
		s := make([]int, len(ix))
		for i, v := range ix {
			s[i] = v + 1
		}
		return "(" + g.list(s) + ")"
	}
	p := fmt.Sprintf("partition %s %s", side(perm[:cut]), side(perm[cut:]))
	for k := 2 + g.rng.IntN(4); k > 0; k-- {
		g.line(p)
		g.line(fmt.Sprintf("advance ms=%d", 20+g.rng.IntN(281)))
		g.line("heal")
		g.line(fmt.Sprintf("advance ms=%d", 20+g.rng.IntN(281)))
	}
	if g.rng.IntN(2) == 0 {
		g.line(p)
	}
}

// redeploy crashes every up voter, then restarts them one after another
// (1-100 ms apart) while the non-voters keep running.
func (g *harsh) redeploy() {
	var voters []int
	for id := 1; id <= g.n; id++ {
		if !g.nonvoter[id] && !g.down[id] {
			voters = append(voters, id)
		}
	}
	for _, id := range voters {
		g.line(fmt.Sprintf("crash %d", id))
	}
	for _, id := range voters {
		g.line(fmt.Sprintf("advance ms=%d", 1+g.rng.IntN(100)))
		g.line(fmt.Sprintf("restart %d", id))
	}
}

// namesLines declares a schedule's k named elections, all spread: a
// quarter of them (at least one of two or more) with members abstaining,
// "few-I", and the rest "job-I". The abstaining members are drawn from
// the voters (not in nonvoter), a third of the members at most, and
// fewer when the guard is on, so that the candidates left still make a
// majority of the name's quorum size (the cluster's S = n less its
// abstainers): every name can be led. The draws come from a generator
// of their own, so that a seed draws the same faults with and without
// names.
func (g *schedule) namesLines(seed uint64, k int, nonvoter map[int]bool, quorum bool) {
	if k <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e616d6573))
	few := 0
	if k >= 2 && g.n >= 2 {
		few = max(1, k/4)
	}
	if plain := k - few; plain > 0 {
		g.line(fmt.Sprintf("names count=%d placement=spread", plain))
	}
	var voters []int
	for id := 1; id <= g.n; id++ {
		if !nonvoter[id] {
			voters = append(voters, id)
		}
	}
	for i := range few {
		a := 1 + rng.IntN(max(1, g.n/3))
		perm := rng.Perm(len(voters))
		for a > 0 && (len(voters)-a < 1 || quorum && len(voters)-a < (g.n-a)/2+1) {
			a--
		}
		if a == 0 {
			g.line(fmt.Sprintf("name few-%d placement=spread", i))
			continue
		}
		ab := make([]int, a)
		for j := range ab {
			ab[j] = voters[perm[j]]
		}
		slices.Sort(ab)
		s := make([]string, a)
		for j, id := range ab {
			s[j] = strconv.Itoa(id)
		}
		g.line(fmt.Sprintf("name few-%d placement=spread abstain=(%s)", i, strings.Join(s, ",")))
	}
}
