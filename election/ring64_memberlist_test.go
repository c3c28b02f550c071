package election_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

// A real 64-member ring (and active/relay ring) in one process over real
// memberlist on loopback (issue 13's target): a cold start agrees on the
// highest-rated member, and after that member crashes (memberlist shut
// down under the others, no leave, no hand-off) the 63 survivors agree on
// the next. No timed assertion: the deadlines (2 s per member for the cold
// start, 60 s for the failover) only bound a hang, and the times are
// logged; while it waits, the test logs every 10 s how many members are in
// each state, the coordinators and terms they report and how many live
// members their memberlist views hold.
//
// All 64 members share one process, so it runs them at timings 5 times
// the defaults (slowTimings). With the defaults the process cannot keep
// up on the project's shared 2-core machine: 64 loops ticking every 10 ms
// and a heartbeat to 63 followers every 50 ms, on top of 64 memberlists,
// left its threads waiting on the run queue 28 times longer than they ran
// (/proc/PID/schedstat, load average 25 to 75); memberlist's probes timed
// out and its own views never converged (32 to 58 of 64 members alive in
// each view after 10 to 40 s), so the rings elected within partial views
// and no agreement formed in 128 s, with terms at epoch 1 to 8 (no
// election storm; bully at n = 64 did the same). On separate hosts each
// member has its own CPU. It is still heavy, so it runs only when asked:
// COORDELECT_RING64=1.
func TestMemberlistRing64(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("64 memberlists in one process: skipped with -short")
	case raceEnabled:
		t.Skip("64 memberlists in one process are too slow under the race detector")
	case os.Getenv("COORDELECT_RING64") == "":
		t.Skip("64 memberlists in one process need CPU to spare: set COORDELECT_RING64=1 to run it")
	}
	const n = 64
	for _, alg := range []core.Algorithm{core.Ring, core.Peterson} {
		t.Run(alg.String(), func(t *testing.T) {
			_, c, took := coldStartCluster(t, alg, n, 3, 50*time.Millisecond, 1, func(cfg *election.Config) {
				slowTimings(cfg)
			})
			top, next := fmt.Sprintf("n%d", n), fmt.Sprintf("n%d", n-1)
			_, term, _ := c.nodes[top].el.Leader()
			t.Logf("%s, n=%d: cold start: all agreed on %s (term %s) %v after the first start",
				alg, n, top, core.Term(term), took)
			c.stop(c.nodes[top], false)
			crashTook, term2 := c.await(names("n", 1, n-1), next, term, 60*time.Second)
			t.Logf("%s, n=%d: crash of %s: the 63 survivors agreed on %s (term %s) %v after the crash",
				alg, n, top, next, core.Term(term2), crashTook)
		})
	}
}

// slowTimings sets the election's timings to 5 times the defaults: a
// 50 ms tick, 250 ms heartbeats (the timings of a WAN-ish deployment).
func slowTimings(cfg *election.Config) {
	cfg.Tick, cfg.HeartbeatInterval, cfg.RoundTrip = 50*time.Millisecond, 250*time.Millisecond, 100*time.Millisecond
	cfg.AnswerTimeout, cfg.CoordinatorTimeout, cfg.HopTimeout = 200*time.Millisecond, 600*time.Millisecond, 100*time.Millisecond
	cfg.StartupDelay, cfg.QuorumLease, cfg.HandoffTimeout = 250*time.Millisecond, 750*time.Millisecond, 850*time.Millisecond
}

// summary condenses what many members report: how many are in each state,
// which coordinators (with terms) they name, how many are electing, and the
// smallest and largest number of live members their views hold.
func (c *realCluster) summary(names []string) string {
	states, coords := map[string]int{}, map[string]int{}
	electing, minView, maxView := 0, 1<<30, 0
	for _, name := range names {
		st := c.nodes[name].el.Status()
		states[st.State.String()]++
		coords[fmt.Sprintf("%s@%s", st.Coordinator, core.Term(st.Term))]++
		if st.Electing {
			electing++
		}
		alive := 0
		for _, m := range st.Members {
			if m.Alive {
				alive++
			}
		}
		minView, maxView = min(minView, alive), max(maxView, alive)
	}
	return fmt.Sprintf("states %s; coordinator@term %s; electing %d; live members in views %d..%d",
		counts(states), counts(coords), electing, minView, maxView)
}

func counts(m map[string]int) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s:%d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
