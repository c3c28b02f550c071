package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
)

// Chaos on real processes: five `demo node` processes on loopback; each
// round SIGKILLs the coordinator or a random node (seeded), waits for the
// survivors to agree on a live coordinator, restarts the victim with the
// same name and ports, and waits for all five to agree again. Throughout,
// every node's /status is polled every few milliseconds and each claim
// "state coordinator in term T" is recorded: two names claiming one term
// fail the test.
//
//	COORDELECT_CHAOS_ROUNDS  rounds (default 20)
//	COORDELECT_CHAOS_SEED    seed of the victims (default 1)
//
// docs/reliability.md records a 200-round run.
func TestChaosKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos on real processes: not in -short")
	}
	rounds, seed := envInt(t, "COORDELECT_CHAOS_ROUNDS", 20), envInt(t, "COORDELECT_CHAOS_SEED", 1)
	c := startChaosCluster(t, buildDemo(t), 5)
	defer c.checkClaims(t, seed) // also when a round failed to converge
	rng := rand.New(rand.NewPCG(uint64(seed), 0xc4a05))
	var failover, rejoin []time.Duration // after killing the coordinator; after any restart
	for r := range rounds {
		victim, coord := c.pickVictim(t, rng), c.waitAgreed(t, c.names, "")
		down, up := c.killAndRestart(t, victim)
		if victim == coord {
			failover = append(failover, down)
		}
		rejoin = append(rejoin, up)
		t.Logf("round %d: killed %s (coordinator %s); survivors agreed in %v, all five after its restart in %v", r+1, victim, coord, down, up)
	}
	t.Logf("survivors agreed after the coordinator's kill: %s", spread(failover))
	slow := len(slices.DeleteFunc(slices.Clone(rejoin), func(d time.Duration) bool { return d <= 2*time.Second }))
	t.Logf("all agreed after the victim's restart: %s; %d rounds over 2 s", spread(rejoin), slow)
}

// checkClaims stops the poller and fails the test if two nodes claimed
// coordinator in one term.
func (c *chaosCluster) checkClaims(t *testing.T, seed int) {
	c.claims.stop()
	v := c.claims.violations()
	if len(v) > 0 {
		t.Errorf("two coordinators in one term:\n%s", strings.Join(v, "\n"))
	}
	t.Logf("seed %d: %d polls, %d terms with a coordinator, %d with two", seed, c.claims.polls(), c.claims.terms(), len(v))
}

// chaosCluster is the processes of the chaos test by name, and the
// poller that records their claims.
type chaosCluster struct {
	bin    string
	names  []string
	procs  map[string]*proc
	args   map[string][]string // each node's flags, to restart it alike
	claims *claimLog
}

// startChaosCluster starts n nodes n1..nN, rating i, every later one
// joining n1; a restarted node joins all the others.
func startChaosCluster(t *testing.T, bin string, n int) *chaosCluster {
	c := &chaosCluster{bin: bin, procs: map[string]*proc{}, args: map[string][]string{}}
	var urls []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprint("n", i)
		args := []string{"-rating", strconv.Itoa(i)}
		if i > 1 {
			args = append(args, "-join", c.procs["n1"].gossip)
		}
		p := startNode(t, bin, name, args...)
		// Pin the ports the process picked so that a restart reuses them.
		c.args[name] = append(args, "-bind", p.gossip, "-http", strings.TrimPrefix(p.http, "http://"))
		c.names, c.procs[name] = append(c.names, name), p
		urls = append(urls, p.http+"/status")
	}
	c.claims = pollClaims(urls)
	c.waitAgreed(t, c.names, "n"+strconv.Itoa(n))
	return c
}

// pickVictim picks the agreed coordinator half of the time, else any node.
func (c *chaosCluster) pickVictim(t *testing.T, rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return c.waitAgreed(t, c.names, "")
	}
	return c.names[rng.IntN(len(c.names))]
}

// killAndRestart SIGKILLs victim, waits for the others to agree on a live
// coordinator, restarts it, and waits for all to agree. It returns both
// waits.
func (c *chaosCluster) killAndRestart(t *testing.T, victim string) (down, up time.Duration) {
	t.Helper()
	c.procs[victim].kill(t)
	killed := time.Now()
	rest := slices.DeleteFunc(slices.Clone(c.names), func(s string) bool { return s == victim })
	if got := c.waitAgreed(t, rest, ""); got == victim {
		t.Fatalf("survivors agreed on the killed %s", victim)
	}
	down = time.Since(killed)
	args := slices.Clone(c.args[victim])
	for _, o := range rest {
		args = append(args, "-join", c.procs[o].gossip) // the last -join wins: one live seed is enough
	}
	restarted := time.Now()
	c.procs[victim] = startNode(t, c.bin, victim, args...)
	if !poll(2*time.Second, func() bool { _, _, ok := agreed(c.all()); return ok }) {
		t.Logf("no agreement 2 s after restarting %s:\n%s", victim, c.describe(t))
	}
	c.waitAgreed(t, c.names, "")
	return down, time.Since(restarted)
}

func (c *chaosCluster) all() []*proc {
	procs := make([]*proc, len(c.names))
	for i, n := range c.names {
		procs[i] = c.procs[n]
	}
	return procs
}

// describe is each node's view, one line each: state, coordinator, term,
// the members it sees alive, and the frames its membership dropped.
func (c *chaosCluster) describe(t *testing.T) string {
	var b strings.Builder
	for _, n := range c.names {
		st, err := c.procs[n].status()
		var alive []string
		for _, m := range st.Members {
			if m.Alive {
				alive = append(alive, m.Name)
			}
		}
		fmt.Fprintf(&b, "  %s: %s coordinator=%q term=%d alive=%v err=%v\n", n, st.State, st.Coordinator, st.Term, alive, err)
		if err == nil {
			for _, l := range strings.Split(get(t, c.procs[n].http+"/metrics"), "\n") {
				if strings.HasPrefix(l, "coordelect_messages_dropped_total") && !strings.HasSuffix(l, " 0") {
					fmt.Fprintf(&b, "    %s\n", l)
				}
			}
		}
	}
	return b.String()
}

// waitAgreed waits until every named node reports the same coordinator in
// the same term (want, unless want is ""), and that coordinator is one of
// them; it returns the coordinator.
func (c *chaosCluster) waitAgreed(t *testing.T, names []string, want string) string {
	t.Helper()
	procs := make([]*proc, len(names))
	for i, n := range names {
		procs[i] = c.procs[n]
	}
	var got string
	if !poll(waitTimeout, func() bool {
		coord, _, ok := agreed(procs)
		got = coord
		return ok && slices.Contains(names, coord) && (want == "" || coord == want)
	}) {
		t.Fatalf("no agreement among %v within %v:\n%s", names, waitTimeout, c.describe(t))
	}
	return got
}

// claimLog polls /status URLs in a loop and records which node claims to
// be coordinator in which term.
type claimLog struct {
	mu      sync.Mutex
	byTerm  map[uint64]string
	bad     []string
	n       int
	done    chan struct{}
	stopped sync.WaitGroup
}

// pollClaims starts one poller per URL, every 5 ms.
func pollClaims(urls []string) *claimLog {
	l := &claimLog{byTerm: map[uint64]string{}, done: make(chan struct{})}
	for _, u := range urls {
		l.stopped.Go(func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				var st election.StatusDocument
				if _, err := getJSON(u, &st); err == nil {
					l.record(st)
				}
				select {
				case <-l.done:
					return
				case <-tick.C:
				}
			}
		})
	}
	return l
}

func (l *claimLog) record(st election.StatusDocument) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if st.State != "coordinator" {
		return
	}
	switch prev, ok := l.byTerm[st.Term]; {
	case !ok:
		l.byTerm[st.Term] = st.Name
	case prev != st.Name:
		l.bad = append(l.bad, fmt.Sprintf("term %d: %s and %s", st.Term, prev, st.Name))
	}
}

func (l *claimLog) stop() { close(l.done); l.stopped.Wait() }

func (l *claimLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.bad)
}
func (l *claimLog) polls() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }
func (l *claimLog) terms() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.byTerm) }

// spread formats the nearest-rank p50 and p99 and the max of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no rounds"
	}
	s := slices.Sorted(slices.Values(ds))
	rank := func(q float64) time.Duration { return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)] }
	return fmt.Sprintf("p50 %v, p99 %v, max %v over %d rounds", rank(.5).Round(time.Millisecond),
		rank(.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
