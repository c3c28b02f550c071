package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/coordelect/coordelect/bench/internal/benchstat"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
	"github.com/coordelect/coordelect/election/sim"
)

const benchElectionsSynopsis = `usage: coordbench elections [flags]

Named elections on the deterministic simulator (election/sim), in
virtual time: -n members each host -elections names in one election/group
host (the one the runtime drives), spread placement, every member of
weight 1; the network carries the groups' batches, one packet per
destination. The network is the simulator's model of the runtime on a
LAN: a 10-ms tick (heartbeat every 50 ms, K = 3 misses: the followers'
detector fires 150 ms after the last heartbeat), one-way delays of 1-5 ms,
and membership (memberlist) reporting a crash or a return 1 s after it
happens, as the simulator's failover tests at n = 1,000 model it.

  leaders_per_member   names each member leads once settled: max, mean
  idle_packets_per_s   the busiest member's packets (batches) per virtual
                       second over -idle, and the same in a one-name
                       cluster of the same n in the same run
  failover_ms          each round crashes the member that leads the most
                       names (at a random phase of the heartbeat period)
                       and times, for every name it led, the virtual time
                       from the crash until every survivor reports the
                       same new coordinator for it; the member then comes
                       back and the cluster settles again
  spurious_elections   elections started while no fault was injected: in
                       -idle and in the -quiet window before each round
  bytes_per_name_per_member
                       the live heap (two GCs) of the settled, idle
                       cluster of -elections names less that of the
                       one-name cluster, divided by n x (elections - 1),
                       less the simulator's own record per name and member
                       (sim.NameRecordBytes); the raw figure is
                       sim_bytes_per_name_per_member

The same flags give the same figures (the run is deterministic); the
CPU time it takes depends on the machine. Prints one JSON object with
-json.`

// electionsOptions is a validated elections command line.
type electionsOptions struct {
	n, elections, rounds, quorum int
	alg                          core.Algorithm
	seed                         uint64
	idle, quiet, timeout         time.Duration
	asJSON                       bool
	results, cpuprofile          string
}

// electionsResult is what -json prints.
type electionsResult struct {
	N         int    `json:"n"`
	Elections int    `json:"elections"`
	Algorithm string `json:"algorithm"`
	Placement string `json:"placement"`
	Quorum    int    `json:"quorum"`
	Rounds    int    `json:"rounds"`
	Seed      uint64 `json:"seed"`
	// Network is the simulated network and timing.
	Network electionsNetwork `json:"network"`
	// LeadersPerMember: names each member leads once settled.
	LeadersPerMember struct {
		Max  int     `json:"max"`
		Min  int     `json:"min"`
		Mean float64 `json:"mean"`
	} `json:"leaders_per_member"`
	IdlePackets struct {
		MaxMember      float64 `json:"max_member"`
		MeanMember     float64 `json:"mean_member"`
		SingleElection float64 `json:"single_election"`
		// Ratio is MaxMember / SingleElection.
		Ratio float64 `json:"ratio"`
		// PairsPerPacket is the mean number of (name, message) pairs a
		// packet carried over the idle window.
		PairsPerPacket float64 `json:"pairs_per_packet"`
		Seconds        float64 `json:"seconds"`
	} `json:"idle_packets_per_s"`
	Failover benchstat.Percentiles `json:"failover_ms"`
	// FailoverNames is the number of names timed (every name the crashed
	// member led, over every round); FailoverTimesMS their times.
	FailoverNames   int       `json:"failover_names"`
	FailoverTimesMS []float64 `json:"failover_times_ms,omitempty"`
	// NamesPerRound is how many names the crashed member led, per round.
	NamesPerRound []int `json:"names_per_round"`
	// Spurious counts elections started while no fault was injected.
	Spurious uint64 `json:"spurious_elections"`
	// ElectionsPerRound is the elections started from each crash until
	// the member that came back and the cluster settled again.
	ElectionsPerRound  []uint64 `json:"elections_per_round"`
	BytesPerName       float64  `json:"bytes_per_name_per_member"`
	SimBytesPerName    float64  `json:"sim_bytes_per_name_per_member"`
	SimRecordBytes     int      `json:"sim_record_bytes"`
	Violations         []string `json:"violations,omitempty"`
	VirtualSeconds     float64  `json:"virtual_s"`
	SingleVirtualSecs  float64  `json:"single_virtual_s"`
	UnsettledBeforeRun int      `json:"unsettled_before_round"`
}

// electionsNetwork is the simulated network of the run.
type electionsNetwork struct {
	TickMs      int64 `json:"tick_ms"`
	HeartbeatMs int64 `json:"heartbeat_ms"`
	Misses      int   `json:"misses"`
	DelayMinMs  int64 `json:"delay_min_ms"`
	DelayMaxMs  int64 `json:"delay_max_ms"`
	ViewDelayMs int64 `json:"view_delay_ms"`
}

// The simulated network (electionsSynopsis).
const (
	elTickMs      = 10
	elDelayMin    = 1
	elDelayMax    = 5
	elViewDelayMs = 1000
)

func parseBenchElections(args []string, stdout io.Writer) (electionsOptions, error) {
	var o electionsOptions
	var alg algorithmFlag
	fs := flag.NewFlagSet("coordbench elections", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 20, "number of members, 2 to 1000")
	fs.IntVar(&o.elections, "elections", 1000, "names every member hosts, 1 to 100000")
	fs.IntVar(&o.rounds, "rounds", 20, "crash failovers to measure")
	fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson")
	fs.IntVar(&o.quorum, "quorum", 0, "the quorum guard's size (every name's QuorumSize); 0: off")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the simulated network and of the crash phases")
	fs.DurationVar(&o.idle, "idle", 10*time.Second, "virtual time over which idle packets are counted")
	fs.DurationVar(&o.quiet, "quiet", time.Second, "virtual settled window before each round, in which elections are spurious")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "virtual bound of each wait for agreement")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object")
	resultsFlag(fs, &o.results)
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	if err := parseFlags(fs, args, stdout, benchElectionsSynopsis); err != nil {
		return o, err
	}
	o.alg = alg.a
	switch {
	case o.n < 2 || o.n > maxBenchSize:
		return o, usagef("-n %d: want 2 to %d members", o.n, maxBenchSize)
	case o.elections < 1 || o.elections > 100_000:
		return o, usagef("-elections %d: want 1 to 100000", o.elections)
	case o.rounds < 1:
		return o, usagef("-rounds %d: want at least 1", o.rounds)
	case o.quorum < 0 || o.quorum > o.n:
		return o, usagef("-quorum %d: want 0 (off) or 1 to -n (%d)", o.quorum, o.n)
	case o.idle < time.Second:
		return o, usagef("-idle %v: want at least 1s", o.idle)
	case o.quiet < 0:
		return o, usagef("-quiet %v: want 0 or more", o.quiet)
	case o.timeout <= 0:
		return o, usagef("-timeout %v: want more than 0", o.timeout)
	}
	return o, nil
}

func runBenchElections(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBenchElections(args, stdout)
	if err != nil {
		return err
	}
	log := newBenchLogger(stderr, false)
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return usagef("-cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return usagef("-cpuprofile %s: %v", o.cpuprofile, err)
		}
		defer pprof.StopCPUProfile()
	}
	rec := startRecording(o.results, "elections", args)
	res, err := measureElections(ctx, o, func(msg string, kv ...any) { log.Info(msg, kv...) })
	name := fmt.Sprintf("elections-%s-n%d-e%d", o.alg, o.n, o.elections)
	if o.quorum > 0 {
		name += "-q" + strconv.Itoa(o.quorum)
	}
	if err != nil {
		return errors.Join(err, rec.writeFailed(name, res, err))
	}
	if err := rec.write(name, res); err != nil {
		return err
	}
	if o.asJSON {
		res.FailoverTimesMS = nil // in the results file only
		return printJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "%d names over %d members (%s, spread): leaders per member max %d, mean %.1f; idle packets/s busiest %.1f, one-name cluster %.1f (%.2fx); "+
		"%d failovers of %d names: p50 %.1f ms, p99 %.1f ms, max %.1f ms; spurious elections %d; %.0f bytes per name per member\n",
		res.Elections, res.N, res.Algorithm, res.LeadersPerMember.Max, res.LeadersPerMember.Mean, res.IdlePackets.MaxMember,
		res.IdlePackets.SingleElection, res.IdlePackets.Ratio, res.Rounds, res.FailoverNames, res.Failover.P50, res.Failover.P99,
		res.Failover.Max, res.Spurious, res.BytesPerName)
	return nil
}

// elCluster is a simulated cluster of named elections.
type elCluster struct {
	s     *sim.Sim
	ids   []string
	names []string
}

// newElCluster builds and settles a cluster of o.n members hosting e
// spread names.
func newElCluster(o electionsOptions, e int) (*elCluster, error) {
	c := &elCluster{}
	members := make([]core.Peer, o.n)
	for i := range members {
		members[i] = core.Peer{ID: strconv.Itoa(i + 1), Rating: 1}
		c.ids = append(c.ids, members[i].ID)
	}
	names := make([]sim.Name, e)
	for i := range names {
		names[i] = sim.Name{Name: "job-" + strconv.Itoa(i), Placement: group.PlaceSpread}
		c.names = append(c.names, names[i].Name)
	}
	if e == 1 {
		names[0].Name, c.names[0] = group.DefaultName, group.DefaultName
	}
	s, err := sim.New(sim.Config{Members: members, Algorithm: o.alg, Mode: core.View, Core: core.Config{QuorumSize: o.quorum},
		TickMs: elTickMs, DelayMin: elDelayMin, DelayMax: elDelayMax, ViewDelayMs: elViewDelayMs, HeartbeatDetector: true,
		Names: names, Seed: o.seed})
	if err != nil {
		return nil, err
	}
	c.s = s
	if err := s.Bootstrap(s.Highest()); err != nil {
		return nil, err
	}
	if !s.Settle(o.timeout.Milliseconds()) {
		return nil, fmt.Errorf("%d names: not settled %v after the start", e, o.timeout)
	}
	s.RunFor(2_000) // the first heartbeat rounds of every name
	return c, nil
}

// elections sums the elections every member has started since it last
// started.
func (c *elCluster) elections() uint64 {
	var k uint64
	for _, id := range c.ids {
		k += c.s.Counted(id).ElectionsStarted
	}
	return k
}

// idle runs d and returns every member's packets per virtual second, the
// pairs they carried, and the elections started meanwhile.
func (c *elCluster) idle(d time.Duration) (rates []float64, pairs, packets uint64, elections uint64) {
	before := make([]uint64, len(c.ids))
	for i, id := range c.ids {
		before[i] = c.s.Batches(id)
	}
	e0 := c.elections()
	var sent0 uint64
	for _, k := range c.s.Sent {
		sent0 += k
	}
	b0 := c.s.BatchesSent
	c.s.RunFor(d.Milliseconds())
	for i, id := range c.ids {
		rates = append(rates, float64(c.s.Batches(id)-before[i])/d.Seconds())
	}
	var sent uint64
	for _, k := range c.s.Sent {
		sent += k
	}
	return rates, sent - sent0, c.s.BatchesSent - b0, c.elections() - e0
}

// heapAlloc is the live heap after two collections.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measureElections runs the one-name cluster, then the cluster of
// o.elections names and its rounds. On error the result holds what was
// measured before it.
func measureElections(ctx context.Context, o electionsOptions, logf func(string, ...any)) (electionsResult, error) {
	res := electionsResult{N: o.n, Elections: o.elections, Algorithm: o.alg.String(), Placement: group.PlaceSpread.String(),
		Quorum: o.quorum, Rounds: o.rounds, Seed: o.seed, SimRecordBytes: sim.NameRecordBytes,
		Network: electionsNetwork{TickMs: elTickMs, HeartbeatMs: elTickMs * int64(core.DefaultConfig().HeartbeatInterval),
			Misses: core.DefaultConfig().HeartbeatMisses, DelayMinMs: elDelayMin, DelayMaxMs: elDelayMax, ViewDelayMs: elViewDelayMs}}
	res.IdlePackets.Seconds = o.idle.Seconds()

	logf("one-name cluster", "n", o.n)
	base := heapAlloc()
	one, err := newElCluster(o, 1)
	if err != nil {
		return res, err
	}
	rates, _, _, spurious := one.idle(o.idle)
	res.IdlePackets.SingleElection = slices.Max(rates)
	res.Spurious += spurious
	oneHeap := heapAlloc() - base
	res.SingleVirtualSecs = float64(one.s.Now()) / 1000
	res.Violations = append(res.Violations, one.s.Checker().Violations...)
	runtime.KeepAlive(one)
	one = nil

	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	logf("cluster of names", "n", o.n, "elections", o.elections)
	base = heapAlloc()
	c, err := newElCluster(o, o.elections)
	if err != nil {
		return res, err
	}
	leads := c.s.Leads()
	res.LeadersPerMember.Max, res.LeadersPerMember.Min = slices.Max(leads), slices.Min(leads)
	sum := 0
	for _, k := range leads {
		sum += k
	}
	res.LeadersPerMember.Mean = float64(sum) / float64(len(leads))
	rates, pairs, packets, spurious := c.idle(o.idle)
	res.IdlePackets.MaxMember = slices.Max(rates)
	mean := 0.0
	for _, r := range rates {
		mean += r
	}
	res.IdlePackets.MeanMember = mean / float64(len(rates))
	if res.IdlePackets.SingleElection > 0 {
		res.IdlePackets.Ratio = res.IdlePackets.MaxMember / res.IdlePackets.SingleElection
	}
	if packets > 0 {
		res.IdlePackets.PairsPerPacket = float64(pairs) / float64(packets)
	}
	res.Spurious += spurious
	if o.elections > 1 {
		manyHeap := heapAlloc() - base
		res.SimBytesPerName = (float64(manyHeap) - float64(oneHeap)) / float64(o.n*(o.elections-1))
		res.BytesPerName = res.SimBytesPerName - float64(sim.NameRecordBytes)
	}
	logf("idle", "busiest_packets_per_s", res.IdlePackets.MaxMember, "one_name", res.IdlePackets.SingleElection, "spurious", res.Spurious)

	rng := rand.New(rand.NewPCG(o.seed, 0xe1ec7))
	var times []float64
	h := int64(core.DefaultConfig().HeartbeatInterval) * elTickMs
	for round := range o.rounds {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		// The quiet window: no fault; every election started is spurious.
		e0 := c.elections()
		c.s.RunFor(o.quiet.Milliseconds() + rng.Int64N(h))
		res.Spurious += c.elections() - e0
		if _, ok := c.s.Agreement(); !ok {
			res.UnsettledBeforeRun++
		}
		leads := c.s.Leads()
		victim := c.ids[slices.Index(leads, slices.Max(leads))]
		var led []string
		for _, name := range c.names {
			if st, ok := c.s.AgreementOf(name); ok && st.Coordinator == victim {
				led = append(led, name)
			}
		}
		res.NamesPerRound = append(res.NamesPerRound, len(led))
		counted := map[string]uint64{}
		for _, id := range c.ids {
			counted[id] = c.s.Counted(id).ElectionsStarted
		}
		start := c.s.Now()
		if err := c.s.Crash(victim); err != nil {
			return res, err
		}
		pending := slices.Clone(led)
		for len(pending) > 0 {
			if c.s.Now()-start > o.timeout.Milliseconds() {
				return res, fmt.Errorf("round %d: %d of the %d names %s led not agreed %v after its crash (e.g. %s)",
					round+1, len(pending), len(led), victim, o.timeout, pending[0])
			}
			c.s.RunFor(1)
			pending = slices.DeleteFunc(pending, func(name string) bool {
				st, ok := c.s.AgreementOf(name)
				if ok && st.Coordinator != victim {
					times = append(times, float64(c.s.Now()-start))
					return true
				}
				return false
			})
		}
		// The member comes back; the round ends once every name is
		// agreed again and no election message is in flight.
		if err := c.s.Restart(victim); err != nil {
			return res, err
		}
		c.s.RunFor(elViewDelayMs) // its return reaches the views
		if !c.s.Settle(o.timeout.Milliseconds()) {
			return res, fmt.Errorf("round %d: not settled %v after %s came back", round+1, o.timeout, victim)
		}
		c.s.RunFor(2 * h) // late messages of the round
		// The survivors' elections since the crash, and all of the
		// victim's (its count started again when it came back).
		started := c.s.Counted(victim).ElectionsStarted
		for _, id := range c.ids {
			if id != victim {
				started += c.s.Counted(id).ElectionsStarted - counted[id]
			}
		}
		res.ElectionsPerRound = append(res.ElectionsPerRound, started)
		logf("round", "n", round+1, "victim", victim, "names", len(led), "slowest_ms", slices.Max(times[len(times)-len(led):]))
	}
	res.FailoverNames = len(times)
	res.FailoverTimesMS = times
	if len(times) > 0 {
		sorted := slices.Clone(times)
		slices.Sort(sorted)
		res.Failover = benchstat.Percentiles{P50: benchstat.NearestRank(sorted, .5), P90: benchstat.NearestRank(sorted, .9),
			P99: benchstat.NearestRank(sorted, .99), Max: sorted[len(sorted)-1]}
	}
	res.VirtualSeconds = float64(c.s.Now()) / 1000
	res.Violations = append(res.Violations, c.s.Checker().Violations...)
	if len(res.Violations) > 0 {
		return res, fmt.Errorf("the checker found %d violations, e.g. %s", len(res.Violations), res.Violations[0])
	}
	res.LeadersPerMember.Mean = math.Round(res.LeadersPerMember.Mean*100) / 100
	return res, nil
}
