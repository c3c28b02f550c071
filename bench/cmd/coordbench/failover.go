package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/bench/internal/benchstat"
	"github.com/coordelect/coordelect/bench/internal/failover"
	"github.com/coordelect/coordelect/election"
)

const benchFailoverSynopsis = `usage: coordbench failover [flags]

Each round crashes the coordinator (its elector stops without handing off,
memberlist shuts down without leaving) or, with -mode resign, has it resign,
and times it until every survivor reports the same new coordinator (polled
every millisecond). It also counts the election messages the members sent
for it (heartbeats excluded). The node then comes back on the same name and
port (a resigned one leaves first) and the round ends when every member
reports it as coordinator again. Elections started in the -quiet window
before each round, with the coordinator alive, count as spurious. After
that window the bench waits a further random part of a heartbeat interval,
so that the crashes fall at every phase of the heartbeat cycle (a fixed
wait after the previous round would always crash the coordinator just
after the same heartbeat). The rounds are run by the driver
hashicorp/raft's bench (raftfailover) shares.`

// failoverResult is what -json prints.
type failoverResult struct {
	N         int    `json:"n"`
	Algorithm string `json:"algorithm"`
	Mode      string `json:"mode"`
	Quorum    int    `json:"quorum"`
	Voters    int    `json:"voters"`
	Compress  bool   `json:"compress"`
	// BusyProcs is the number of busy processes beside the bench.
	BusyProcs int `json:"busy_procs"`
	failover.Result
}

func parseBenchFailover(args []string, stdout io.Writer) (benchOptions, error) {
	var alg algorithmFlag
	return parseBench("failover", 5, benchFailoverSynopsis, args, stdout, func(fs *flag.FlagSet, o *benchOptions) {
		fs.IntVar(&o.rounds, "rounds", 20, "number of failovers to measure")
		fs.Var(&alg, "algorithm", "election algorithm: bully, ring or peterson")
		fs.StringVar(&o.mode, "mode", "crash", "crash: crash the coordinator; resign: it hands off")
		fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object")
		resultsFlag(fs, &o.results)
		fs.StringVar(&o.samples, "samples", "", "file to write every failover time to, in ms, one per line")
		fs.DurationVar(&o.quiet, "quiet", time.Second, "settled window before each round in which elections are spurious")
		fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound of each wait for agreement")
		fs.IntVar(&o.quorum, "quorum", 0, "the electors' QuorumSize (the quorum guard: a coordinator leads only while a majority of it holds its lease); 0: off")
		fs.IntVar(&o.busy, "busy-per-core", 0, "busy processes per core (sh -c 'while :; do :; done') that load the host from outside the bench's process during the rounds")
		fs.BoolVar(&o.verbose, "v", false, "log, per round, the node the agreement waited for and the survivors' membership counters")
	}, func(o *benchOptions) error {
		o.alg = alg.a
		switch {
		case o.rounds < 1:
			return usagef("-rounds %d: want at least 1", o.rounds)
		case o.mode != "crash" && o.mode != "resign":
			return usagef("-mode %q: want crash or resign", o.mode)
		case o.quiet < 0:
			return usagef("-quiet %v: want 0 or more", o.quiet)
		case o.busy < 0:
			return usagef("-busy-per-core %d: want 0 or more", o.busy)
		}
		return checkQuorum(o)
	})
}

func runBenchFailover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBenchFailover(args, stdout)
	if err != nil {
		return err
	}
	log := newBenchLogger(stderr, o.verbose)
	rec := startRecording(o.results, "failover", args)
	res, err := measureFailover(ctx, o, log)
	name := resultsName("failover", o, o.alg.String(), o.mode)
	if err != nil {
		res.TimesMS = benchstat.Milliseconds(res.Times)
		if len(res.Times) > 0 {
			res.Failover = benchstat.Summarise(res.Times)
		}
		return errors.Join(err, rec.writeFailed(name, res, err))
	}
	if err := rec.write(name, res); err != nil {
		return err
	}
	if o.samples != "" {
		if err := benchstat.WriteSamples(o.samples, res.Times); err != nil {
			return err
		}
	}
	if o.asJSON {
		return printJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "%d %s failovers of %s, n = %d, quorum %d, %d busy processes: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; "+
		"messages p50 %d, max %d; spurious elections %d\n", res.Rounds, res.Mode, res.Algorithm, res.N, res.Quorum, res.BusyProcs,
		res.Failover.P50, res.Failover.P90, res.Failover.P99, res.Failover.Max,
		res.Messages.P50, res.Messages.Max, res.Spurious)
	return nil
}

// messageTail is how long the bench keeps counting election messages after
// agreement, for those still on their way (late ANSWERs, a duplicate
// announcement), before the node comes back.
const messageTail = 250 * time.Millisecond

// measureFailover starts a cluster of ours and runs the failover driver
// on it.
// On error the result holds the rounds measured before it.
func measureFailover(ctx context.Context, o benchOptions, log hclog.Logger) (failoverResult, error) {
	res := failoverResult{N: o.n, Algorithm: o.alg.String(), Mode: o.mode, Quorum: o.quorum, Voters: o.voters, Compress: o.compress,
		Result: failover.Result{Rounds: o.rounds}}
	c := newBenchCluster(o, log)
	log.Info("starting cluster", "n", o.n, "algorithm", o.alg, "profile", o.profile)
	if err := c.start(ctx); err != nil {
		return res, fmt.Errorf("starting: %w", err)
	}
	defer c.stop()
	var busy busyProcs
	defer busy.stop()
	if err := busy.start(o.busy * runtime.NumCPU()); err != nil {
		return res, err
	}
	res.BusyProcs = len(busy)
	var err error
	res.Result, err = failover.Run(ctx, c, failover.Options{
		Rounds: o.rounds, Quiet: o.quiet, Phase: election.DefaultHeartbeatInterval, Tail: messageTail, Log: log,
	})
	return res, err
}

// The cluster as the failover driver (bench/internal/failover) sees it.
var _ failover.Detailer = (*benchCluster)(nil)

// Leader names the coordinator every running node reports, which must be
// the top-rated node: a round starts from a settled cluster.
func (c *benchCluster) Leader() (string, error) {
	if coord, ok := c.agreed(); !ok || coord != c.top().name {
		return "", fmt.Errorf("coordinator %q, want %s agreed", coord, c.top().name)
	}
	return c.top().name, nil
}

// Elections counts the elections every node has started.
func (c *benchCluster) Elections() uint64 { return c.electionsStarted() }

// Messages counts the election messages every node has sent.
func (c *benchCluster) Messages() (uint64, bool) { return c.sent().election(), true }

func (c *benchCluster) node(name string) (*benchNode, error) {
	for _, b := range c.nodes {
		if b.name == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("no node %q", name)
}

// TakeOut crashes the node or, with -mode resign, has it resign.
func (c *benchCluster) TakeOut(ctx context.Context, name string) error {
	b, err := c.node(name)
	if err != nil {
		return err
	}
	r, g, d, f := c.memberStats(b)
	c.taken, c.sentAtTakeOut = [4]uint64{r, g, d, f}, c.sent()
	if c.opts.mode == "resign" {
		ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
		defer cancel()
		return b.el.Resign(ctx)
	}
	return c.crash(b)
}

// WaitAgreement waits until the running nodes agree on a coordinator
// other than not.
func (c *benchCluster) WaitAgreement(ctx context.Context, not string) (time.Time, error) {
	return c.waitAgreement(ctx, "", not)
}

// Detail names the node the agreement waited for, and the survivors'
// membership counters and the messages by type since the coordinator was
// taken out.
func (c *benchCluster) Detail(t0 time.Time) []any {
	last, lastAt, before := c.changes.last()
	r, g, d, f := c.memberStats(c.top())
	return []any{"last_node", last, "last_change", lastAt.Sub(t0).Round(time.Millisecond), "last_before", before,
		"reordered", r - c.taken[0], "gaps_skipped", g - c.taken[1], "dropped", d - c.taken[2],
		"send_failed", f - c.taken[3], "by_type", c.sent().minus(c.sentAtTakeOut).String()}
}

// BringBack restarts the node on its name and port (a resigned one, still
// running and yielding, leaves the cluster first) and waits until it
// leads again.
func (c *benchCluster) BringBack(ctx context.Context, name string) error {
	b, err := c.node(name)
	if err != nil {
		return err
	}
	if b.el != nil {
		if err := c.leave(b); err != nil {
			c.log.Warn("leaving", "node", b.name, "error", err)
		}
	}
	if err := c.startNode(b, true); err != nil {
		return err
	}
	_, err = c.waitAgreement(ctx, name, "")
	return err
}
