package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/coordelect/coordelect/bench/internal/failover"
	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
)

const benchIdleSynopsis = `usage: coordbench idle [flags]

Starts -n members in this process (highest rating first, as failover does),
waits until all follow the top-rated one, then leaves the cluster idle for
-d and reports what it costs: the messages the coordinator's elector sent
per second (heartbeats, by the fan-out of docs/design.md, and anything
else), those of the busiest follower and of the average follower, and the
CPU the whole process used (getrusage), per member. Memberlist's own
gossip (probes, gossip rounds, push-pull) is not counted: it is the same
with or without electors. With -cpuprofile FILE it also writes a CPU
profile of the idle window in which every member's goroutines carry the
label role=coordinator or role=follower (and node=NAME), so that
'go tool pprof -tags FILE' splits the CPU between the coordinator and the
followers. With -bare the members run without electors: what memberlist
alone costs at the same n, the baseline the electors add to. It also
reads the live heap after the window (after two GCs), per member. With
-rounds R it then crashes the coordinator R times as 'coordbench failover'
does (the same driver, -mode crash) and adds the failover times and
messages: a 1,000-member cluster, which takes minutes to start in one
process, is started once for both. With -procs K the members run in K
child processes of this one ('coordbench shard', member i in process
(i-1) mod K), each with its own Go runtime, and -netns puts each process
in a network namespace of its own; the figures are summed over them.
Prints one JSON object.`

// idleResult is what idle prints.
type idleResult struct {
	N         int    `json:"n"`
	Algorithm string `json:"algorithm"`
	Profile   string `json:"profile"`
	// Bare: the members ran without electors (-bare).
	Bare bool `json:"bare"`
	// Quorum is the electors' QuorumSize, Voters the -voters (0: all),
	// Compress memberlist's EnableCompression.
	Quorum   int     `json:"quorum"`
	Voters   int     `json:"voters"`
	Compress bool    `json:"compress"`
	Seconds  float64 `json:"idle_s"`
	// CoordinatorSendsPerSec: messages the coordinator's elector sent per
	// second, and its heartbeats among them.
	CoordinatorSendsPerSec     float64 `json:"coordinator_sends_per_s"`
	CoordinatorHeartbeatPerSec float64 `json:"coordinator_heartbeats_per_s"`
	// FollowerMaxSendsPerSec and FollowerMeanSendsPerSec: the same for the
	// busiest follower and on average (acks, with the quorum guard).
	FollowerMaxSendsPerSec  float64 `json:"follower_max_sends_per_s"`
	FollowerMeanSendsPerSec float64 `json:"follower_mean_sends_per_s"`
	// ProcessCPUPercent is the process's CPU over the window, in percent
	// of one core; PerMemberCPUPercent divides it by n.
	ProcessCPUPercent   float64 `json:"process_cpu_percent"`
	PerMemberCPUPercent float64 `json:"per_member_cpu_percent"`
	// Spurious counts elections started in the window; HeartbeatMisses
	// the heartbeats followers counted as lost.
	Spurious        uint64 `json:"spurious_elections"`
	HeartbeatMisses uint64 `json:"heartbeat_misses"`
	// StartSeconds is how long the cluster took to start and agree.
	StartSeconds float64 `json:"start_s"`
	// HeapBytesPerMember is the live heap after the window (two GCs)
	// divided by n: memberlist, membership and electors together;
	// StackBytesPerMember the goroutine stacks (MemStats.StackInuse) and
	// GoroutinesPerMember the goroutines, likewise. With -procs, summed
	// over the processes.
	HeapBytesPerMember  float64 `json:"heap_bytes_per_member"`
	StackBytesPerMember float64 `json:"stack_bytes_per_member"`
	GoroutinesPerMember float64 `json:"goroutines_per_member"`
	// Procs is the processes the members ran in (-procs), Netns whether
	// each had a network namespace of its own.
	Procs int  `json:"procs"`
	Netns bool `json:"netns,omitempty"`
	// Failover holds the -rounds crash failovers after the window.
	Failover *failover.Result `json:"failover,omitempty"`
}

func parseBenchIdle(args []string, stdout io.Writer) (benchOptions, string, error) {
	var cpuprofile, memprofile *string
	var alg algorithmFlag
	o, err := parseBench("idle", 100, benchIdleSynopsis, args, stdout, func(fs *flag.FlagSet, o *benchOptions) {
		fs.DurationVar(&o.dur, "d", 20*time.Second, "how long the idle window lasts")
		fs.DurationVar(&o.quiet, "settle", 5*time.Second, "how long to wait after agreement before the window")
		fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound of the wait for the cluster to agree at start")
		cpuprofile = fs.String("cpuprofile", "", "write a CPU profile of the idle window to this file")
		memprofile = fs.String("memprofile", "", "write heap profiles to this file (after the window and two GCs: in use, and the allocations since the start) and to this file with .base appended (at the window's start), sampling one allocation per 4 KiB (memProfileRate); the window's allocations are 'go tool pprof -sample_index=alloc_space -diff_base FILE.base FILE'")
		fs.IntVar(&o.quorum, "quorum", 0, "the electors' QuorumSize (the quorum guard); 0: off")
		fs.BoolVar(&o.bare, "bare", false, "members without electors: memberlist's own cost, the baseline (no sends are counted)")
		fs.IntVar(&o.rounds, "rounds", 0, "after the window, crash the coordinator this many times and report the failovers (as coordbench failover)")
		fs.DurationVar(&o.roundQuiet, "quiet", time.Second, "with -rounds: the settled window before each round in which elections are spurious")
		fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson")
		fs.IntVar(&o.procs, "procs", 1, "spread the members over this many processes (children of this one, member i in process (i-1) mod procs), each with its own Go runtime; the figures sum over them")
		fs.BoolVar(&o.netns, "netns", false, "with -procs: each process in a network namespace of its own (10.77.0.j/24 on a veth pair to one bridge; needs root and iproute2)")
		resultsFlag(fs, &o.results)
		fs.BoolVar(&o.verbose, "v", false, "with -rounds: log, per round, the node the agreement waited for and the survivors' membership counters")
	}, func(o *benchOptions) error {
		o.alg = alg.a
		switch {
		case o.rounds < 0:
			return usagef("-rounds %d: want 0 or more", o.rounds)
		case o.rounds > 0 && o.bare:
			return usagef("-bare with -rounds %d: bare members elect nobody", o.rounds)
		case o.dur <= 0:
			return usagef("-d %v: want more than 0", o.dur)
		case o.quiet < 0:
			return usagef("-settle %v: want 0 or more", o.quiet)
		case o.procs < 1 || o.procs > 64:
			return usagef("-procs %d: want 1 to 64", o.procs)
		case o.netns && o.procs < 2:
			return usagef("-netns with -procs %d: want -procs 2 or more", o.procs)
		case o.procs > 1 && *memprofile != "":
			return usagef("-memprofile with -procs %d: a profile is of one process", o.procs)
		case o.procs > 1 && *cpuprofile != "":
			return usagef("-cpuprofile with -procs %d: a profile is of one process", o.procs)
		case o.procs > 1 && o.stallLog:
			return usagef("-stalllog with -procs %d: the members' logs are of one process", o.procs)
		case o.procs > 1 && o.stallDump != "":
			return usagef("-stalldump with -procs %d: a goroutine dump is of one process", o.procs)
		case o.bare && o.quorum > 0:
			return usagef("-bare with -quorum %d: bare members run no elector to guard", o.quorum)
		}
		return checkQuorum(o)
	})
	if err != nil {
		return o, "", err
	}
	o.memprofile = *memprofile
	return o, *cpuprofile, nil
}

// idleCluster is what idle measures: the members in this process
// (benchCluster) or spread over shard processes (shardedCluster, -procs).
type idleCluster interface {
	failover.Cluster
	start(ctx context.Context) error
	stop()
	topName() string
	// sentByNode is every member's messages sent, by type, by name.
	sentByNode() (map[string][core.NumMsgTypes]uint64, error)
	electionsStarted() uint64
	heartbeatMisses() uint64
	// cpu is the CPU time the members' process(es) have used.
	cpu() (time.Duration, error)
	// memory reads the live heap after two collections, the goroutine
	// stacks and the goroutines of the members' process(es).
	memory() (heap, stacks uint64, goroutines int, err error)
}

func runBenchIdle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, cpuprofile, err := parseBenchIdle(args, stdout)
	if err != nil {
		return err
	}
	if o.memprofile != "" {
		runtime.MemProfileRate = memProfileRate // before the members allocate
	}
	log := newBenchLogger(stderr, o.verbose)
	rec := startRecording(o.results, "idle", args)
	var c idleCluster
	var sharded *shardedCluster
	if o.procs > 1 {
		sharded = newShardedCluster(o, log)
		c = sharded
	} else {
		bc := newBenchCluster(o, log)
		bc.labels = true
		c = bc
	}
	t0 := time.Now()
	if err := c.start(ctx); err != nil {
		return err
	}
	defer c.stop()
	res := idleResult{N: o.n, Algorithm: o.alg.String(), Profile: o.profile, Bare: o.bare, Quorum: o.quorum, Voters: o.voters, Compress: o.compress,
		Procs: max(o.procs, 1), Netns: o.netns, StartSeconds: time.Since(t0).Seconds()}
	if err := failover.Pause(ctx, o.quiet); err != nil {
		return err
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	if o.memprofile != "" {
		if err := writeHeapProfile(o.memprofile + ".base"); err != nil {
			return err
		}
	}
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	before, err := c.sentByNode()
	if err != nil {
		return err
	}
	started, misses := c.electionsStarted(), c.heartbeatMisses()
	cpu0, err := c.cpu()
	if err != nil {
		return err
	}
	w0 := time.Now()
	err = failover.Pause(ctx, o.dur)
	cpu1, cerr := c.cpu()
	secs := time.Since(w0).Seconds()
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if err = errors.Join(err, cerr); err != nil {
		return err
	}
	res.Seconds = secs
	after, err := c.sentByNode()
	if err != nil {
		return err
	}
	var sum float64
	for name, now := range after {
		was := before[name]
		var all uint64
		for t := range now {
			all += now[t] - was[t]
		}
		rate := float64(all) / secs
		if name == c.topName() {
			res.CoordinatorSendsPerSec = rate
			res.CoordinatorHeartbeatPerSec = float64(now[core.MsgHeartbeat]-was[core.MsgHeartbeat]) / secs
			continue
		}
		sum += rate
		res.FollowerMaxSendsPerSec = max(res.FollowerMaxSendsPerSec, rate)
	}
	res.FollowerMeanSendsPerSec = sum / float64(o.n-1)
	res.ProcessCPUPercent = 100 * (cpu1 - cpu0).Seconds() / secs
	res.PerMemberCPUPercent = res.ProcessCPUPercent / float64(o.n)
	res.Spurious = c.electionsStarted() - started
	res.HeartbeatMisses = c.heartbeatMisses() - misses
	if sharded == nil {
		// This process's allocations: those of the members.
		log.Info("idle window done", "seconds", fmt.Sprintf("%.1f", secs),
			"allocs_per_member_per_s", fmt.Sprintf("%.0f", float64(ms1.Mallocs-ms0.Mallocs)/secs/float64(o.n)),
			"alloc_bytes_per_member_per_s", fmt.Sprintf("%.0f", float64(ms1.TotalAlloc-ms0.TotalAlloc)/secs/float64(o.n)))
	} else {
		log.Info("idle window done", "seconds", fmt.Sprintf("%.1f", secs))
	}
	heap, stacks, goroutines, err := c.memory()
	if err != nil {
		return err
	}
	if o.memprofile != "" {
		if err := writeHeapProfile(o.memprofile); err != nil {
			return err
		}
	}
	res.HeapBytesPerMember = float64(heap) / float64(o.n)
	res.StackBytesPerMember = float64(stacks) / float64(o.n)
	res.GoroutinesPerMember = float64(goroutines) / float64(o.n)
	if o.rounds > 0 {
		// The idle figures first, in case a round never ends.
		log.Info("idle result", "coordinator_sends_per_s", fmt.Sprintf("%.1f", res.CoordinatorSendsPerSec),
			"process_cpu_percent", fmt.Sprintf("%.1f", res.ProcessCPUPercent), "heap_bytes_per_member", int(res.HeapBytesPerMember),
			"stack_bytes_per_member", int(res.StackBytesPerMember), "spurious", res.Spurious, "heartbeat_misses", res.HeartbeatMisses)
		o.mode = "crash"
		r, err := failover.Run(ctx, c, failover.Options{
			Rounds: o.rounds, Quiet: o.roundQuiet, Phase: election.DefaultHeartbeatInterval, Tail: messageTail, Log: log,
		})
		if err != nil {
			return err
		}
		res.Failover = &r
	}
	if sharded != nil && sharded.err != nil {
		return sharded.err
	}
	if err := rec.write(resultsName("idle", o, res.Algorithm), res); err != nil {
		return err
	}
	return printJSON(stdout, res)
}

// load reads the counter's sent messages by type.
func (c *benchCounter) load() [core.NumMsgTypes]uint64 {
	var out [core.NumMsgTypes]uint64
	for t := range out {
		out[t] = c.sent[t].Load()
	}
	return out
}

// processCPU returns the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkQuorum checks -quorum against -n and -voters (failover and idle).
func checkQuorum(o *benchOptions) error {
	switch {
	case o.quorum < 0 || o.quorum > o.n:
		return usagef("-quorum %d: want 0 (off) or 1 to -n (%d)", o.quorum, o.n)
	case o.voters > 0 && o.quorum > o.voters:
		return usagef("-quorum %d: more than the -voters %d (QuorumSize counts voters)", o.quorum, o.voters)
	}
	return nil
}
