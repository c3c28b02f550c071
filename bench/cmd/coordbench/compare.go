package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/coordelect/coordelect/bench/internal/failover"
	"github.com/coordelect/coordelect/bench/internal/raftcluster"
	"github.com/coordelect/coordelect/election"
)

const compareSynopsis = `usage: coordbench compare [flags]

Measures crash failover of three clusters of -n members, one after the
other in this process, with the same driver (bench/internal/failover):
coordelect (bully, the library's defaults, as 'coordbench failover'),
hashicorp/raft v1.8.0 with its DefaultConfig (1 s), and hashicorp/raft
tuned to our detection budget (-hb, by default K·H = 150 ms: HeartbeatTimeout
= ElectionTimeout = 150 ms, LeaderLeaseTimeout = 75 ms). Each round waits
-quiet, then a random part of the leader's heartbeat period, crashes the
leader and polls every survivor every millisecond until they agree on a
new one. Messages per failover: ours, the election messages handed to the
transport (heartbeats excluded); raft's, its vote and pre-vote RPCs,
request and response each counted (its new leader's first AppendEntries,
which announce it as our COORDINATOR does, not counted). Prints one line
per cluster, or with -json one JSON object per line.`

// compareOptions is a validated compare command line.
type compareOptions struct {
	ours       benchOptions
	raftRounds int
	hb         time.Duration
	asJSON     bool
}

func parseCompare(args []string, stdout io.Writer) (compareOptions, error) {
	o := compareOptions{}
	fs := flag.NewFlagSet("coordbench compare", flag.ContinueOnError)
	fs.IntVar(&o.ours.n, "n", 5, "members of each cluster, 2 to 200")
	fs.IntVar(&o.ours.rounds, "rounds", 30, "failovers of ours and of raft tuned to our budget")
	fs.IntVar(&o.raftRounds, "raft-rounds", 20, "failovers of raft with its defaults (about 3 s each)")
	fs.DurationVar(&o.hb, "hb", election.DefaultHeartbeatMisses*election.DefaultHeartbeatInterval,
		"raft's tuned HeartbeatTimeout = ElectionTimeout (LeaderLeaseTimeout half of it)")
	fs.DurationVar(&o.ours.quiet, "quiet", time.Second, "settled window before each round in which elections are spurious")
	fs.DurationVar(&o.ours.timeout, "timeout", 60*time.Second, "bound of each wait for agreement")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object per cluster")
	resultsFlag(fs, &o.ours.results)
	if err := parseFlags(fs, args, stdout, compareSynopsis); err != nil {
		return o, err
	}
	o.ours.mode, o.ours.compress = "crash", true // memberlist's profiles compress
	switch {
	case o.ours.n < 2 || o.ours.n > 200:
		return o, usagef("-n %d: want 2 to 200 members", o.ours.n)
	case o.ours.rounds < 1 || o.raftRounds < 1:
		return o, usagef("-rounds %d, -raft-rounds %d: want at least 1 each", o.ours.rounds, o.raftRounds)
	case o.hb < 10*time.Millisecond:
		return o, usagef("-hb %v: want at least 10ms", o.hb)
	case o.ours.quiet < 0 || o.ours.timeout <= 0:
		return o, usagef("-quiet %v, -timeout %v: want -quiet >= 0 and -timeout > 0", o.ours.quiet, o.ours.timeout)
	}
	return o, checkBenchCommon(&o.ours, "lan")
}

// compareRow is one cluster's result.
type compareRow struct {
	N       int    `json:"n"`
	Library string `json:"library"`
	Config  string `json:"config"`
	failover.Result
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCompare(args, stdout)
	if err != nil {
		return err
	}
	log := newBenchLogger(stderr, false)
	rec := startRecording(o.ours.results, "compare", args)
	ours, err := measureFailover(ctx, o.ours, log.Named("coordelect"))
	if err != nil {
		return fmt.Errorf("coordelect: %w", err)
	}
	rows := []compareRow{{o.ours.n, "coordelect", "bully, defaults (K·H = 150 ms)", ours.Result}}
	for _, rc := range []struct {
		hb     time.Duration
		rounds int
	}{{0, o.raftRounds}, {o.hb, o.ours.rounds}} {
		ro := raftcluster.Options{N: o.ours.n, HB: rc.hb, Timeout: o.ours.timeout}
		lg := log.Named("raft-" + ro.HBName())
		lg.Info("starting cluster", "n", ro.N, "hb", ro.HBName())
		c, err := raftcluster.Start(ctx, ro)
		if err != nil {
			return fmt.Errorf("raft %s: %w", ro.HBName(), err)
		}
		r, err := failover.Run(ctx, c, failover.Options{
			Rounds: rc.rounds, Quiet: o.ours.quiet, Phase: ro.HeartbeatPeriod(), Tail: messageTail, Log: lg,
		})
		c.Stop()
		if err != nil {
			return fmt.Errorf("raft %s: %w", ro.HBName(), err)
		}
		config := "DefaultConfig (1 s)"
		if rc.hb > 0 {
			config = "HeartbeatTimeout = ElectionTimeout = " + rc.hb.String()
		}
		rows = append(rows, compareRow{o.ours.n, "hashicorp/raft", config, r})
	}
	if err := rec.write("compare-n"+strconv.Itoa(o.ours.n), rows); err != nil {
		return err
	}
	for _, r := range rows {
		if o.asJSON {
			if err := printJSON(stdout, r); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "%s, %s, n = %d, %d rounds: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; "+
			"messages p50 %d, max %d; spurious %d; p50 ratio ours/this %.3f\n", r.Library, r.Config, r.N, r.Rounds,
			r.Failover.P50, r.Failover.P90, r.Failover.P99, r.Failover.Max, r.Messages.P50, r.Messages.Max,
			r.Spurious, rows[0].Failover.P50/r.Failover.P50)
	}
	return nil
}
