// Command raftfailover measures hashicorp/raft's leader failover with the
// failover driver 'coordbench failover' uses for coordelect
// (bench/internal/failover), for a side-by-side table: n servers in one
// process, each on a loopback TCP transport (raft.NewTCPTransport on
// 127.0.0.1) with in-memory stores, raft's DefaultConfig. Each round
// crashes the leader (Shutdown, which neither steps down nor tells anyone,
// and its transport closed), times it until every survivor reports the
// same new leader and that leader says it leads (polled every
// millisecond), then restarts the server on the same address with its
// stores and waits until all n agree on a leader.
//
//	go run ./cmd/raftfailover -n 5 -rounds 20 -json
//	go run ./cmd/raftfailover -n 5 -rounds 20 -json -hb 150ms
//
// With -hb D, HeartbeatTimeout = ElectionTimeout = D and LeaderLeaseTimeout
// = D/2. Terms that grow in the -quiet window before each round, with the
// leader alive, count as spurious elections. Messages are the vote and
// pre-vote RPCs, request and response each counted. Bad flags print one
// line and exit with status 2. 'coordbench compare' runs this and
// coordelect's failover in one process, one after the other.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/bench/internal/benchstat"
	"github.com/coordelect/coordelect/bench/internal/failover"
	"github.com/coordelect/coordelect/bench/internal/raftcluster"
	"github.com/coordelect/coordelect/internal/cli"
)

// options is a validated command line.
type options struct {
	raft    raftcluster.Options
	rounds  int
	asJSON  bool
	samples string
	quiet   time.Duration
}

// Result is what -json prints: the shape of 'coordbench failover -json'
// with the heartbeat timeout.
type Result struct {
	N         int    `json:"n"`
	Algorithm string `json:"algorithm"`
	Mode      string `json:"mode"`
	HB        string `json:"heartbeat_timeout"`
	failover.Result
}

func main() { cli.Main("raftfailover", run) }

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("raftfailover", flag.ContinueOnError)
	fs.IntVar(&o.raft.N, "n", 5, "number of servers, 2 to 200")
	fs.IntVar(&o.rounds, "rounds", 20, "number of failovers to measure")
	fs.DurationVar(&o.raft.HB, "hb", 0, "HeartbeatTimeout = ElectionTimeout = D, LeaderLeaseTimeout = D/2; 0: raft's defaults")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object")
	fs.StringVar(&o.samples, "samples", "", "file to write every failover time to, in ms, one per line")
	fs.DurationVar(&o.quiet, "quiet", time.Second, "settled window before each round in which elections are spurious")
	fs.DurationVar(&o.raft.Timeout, "timeout", 60*time.Second, "bound of each wait for a leader")
	if err := cli.ParseFlags(fs, args, stdout, ""); err != nil {
		return o, err
	}
	switch {
	case o.raft.N < 2 || o.raft.N > 200:
		return o, cli.Usagef("-n %d: want 2 to 200 servers", o.raft.N)
	case o.rounds < 1:
		return o, cli.Usagef("-rounds %d: want at least 1", o.rounds)
	}
	if o.quiet < 0 {
		return o, cli.Usagef("-quiet %v: want 0 or more", o.quiet)
	}
	if err := o.raft.Check(); err != nil {
		return o, cli.Usagef("%v", err)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "raftfailover", Output: stderr, Level: hclog.Info})
	log.Info("starting cluster", "n", o.raft.N, "hb", o.raft.HBName())
	c, err := raftcluster.Start(ctx, o.raft)
	if err != nil {
		return err
	}
	defer c.Stop()
	fr, err := failover.Run(ctx, c, failover.Options{
		Rounds: o.rounds, Quiet: o.quiet, Phase: o.raft.HeartbeatPeriod(), Tail: 250 * time.Millisecond, Log: log,
	})
	if err != nil {
		return err
	}
	res := Result{N: o.raft.N, Algorithm: "raft", Mode: "crash", HB: o.raft.HBName(), Result: fr}
	if o.samples != "" {
		if err := benchstat.WriteSamples(o.samples, fr.Times); err != nil {
			return err
		}
	}
	if o.asJSON {
		return cli.PrintJSON(stdout, res)
	}
	_, err = fmt.Fprintf(stdout, "%d raft failovers, n = %d, %s: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; messages p50 %d, max %d; spurious elections %d\n",
		res.Rounds, res.N, res.HB, res.Failover.P50, res.Failover.P90, res.Failover.P99, res.Failover.Max,
		res.Messages.P50, res.Messages.Max, res.Spurious)
	return err
}
