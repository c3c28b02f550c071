// Command raftfailover measures hashicorp/raft's leader failover the way
// 'demo bench failover' measures coordelect's, for a side-by-side table:
// n servers in one process, each on a loopback TCP transport
// (raft.NewTCPTransport on 127.0.0.1) with in-memory stores, raft's
// DefaultConfig. Each round crashes the leader (Shutdown, which neither
// steps down nor tells anyone, and its transport closed), times it until
// every survivor reports the same new leader and that leader says it leads
// (polled every millisecond), then restarts the server on the same address
// with its stores and waits until all n agree on a leader.
//
//	go run ./cmd/raftfailover -n 5 -rounds 20 -json
//	go run ./cmd/raftfailover -n 5 -rounds 20 -json -hb 150ms
//
// With -hb D, HeartbeatTimeout = ElectionTimeout = D and LeaderLeaseTimeout
// = D/2. Terms that grow in the -quiet window before each round, with the
// leader alive, count as spurious elections. Messages are not counted.
// Bad flags print one line and exit with status 2.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/internal/benchstat"
)

// options is a validated command line.
type options struct {
	n       int
	rounds  int
	hb      time.Duration
	asJSON  bool
	samples string
	quiet   time.Duration
	timeout time.Duration
}

// result is what -json prints: the shape of 'demo bench failover -json'
// without messages_per_failover.
type result struct {
	N         int                   `json:"n"`
	Rounds    int                   `json:"rounds"`
	Algorithm string                `json:"algorithm"`
	Mode      string                `json:"mode"`
	HB        string                `json:"heartbeat_timeout"`
	Failover  benchstat.Percentiles `json:"failover_ms"`
	Spurious  uint64                `json:"spurious_elections"`
}

// usageError is a bad command line: one line, exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var ue usageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "raftfailover: %v\n", ue)
		stop()
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "raftfailover: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("raftfailover", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.n, "n", 5, "number of servers, 2 to 200")
	fs.IntVar(&o.rounds, "rounds", 20, "number of failovers to measure")
	fs.DurationVar(&o.hb, "hb", 0, "HeartbeatTimeout = ElectionTimeout = D, LeaderLeaseTimeout = D/2; 0: raft's defaults")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as one JSON object")
	fs.StringVar(&o.samples, "samples", "", "file to write every failover time to, in ms, one per line")
	fs.DurationVar(&o.quiet, "quiet", time.Second, "settled window before each round in which elections are spurious")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound of each wait for a leader")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return o, err
	case err != nil:
		return o, usagef("%v", err)
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q", fs.Arg(0))
	case o.n < 2 || o.n > 200:
		return o, usagef("-n %d: want 2 to 200 servers", o.n)
	case o.rounds < 1:
		return o, usagef("-rounds %d: want at least 1", o.rounds)
	case o.hb < 0 || o.hb > 0 && o.hb < 10*time.Millisecond:
		return o, usagef("-hb %v: want 0 (raft's defaults) or at least 10ms", o.hb)
	case o.quiet < 0 || o.timeout <= 0:
		return o, usagef("-quiet %v, -timeout %v: want -quiet >= 0 and -timeout > 0", o.quiet, o.timeout)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "raftfailover", Output: stderr, Level: hclog.Info})
	c := &cluster{opts: o, log: log}
	log.Info("starting cluster", "n", o.n, "hb", hbName(o.hb))
	if err := c.start(ctx); err != nil {
		return err
	}
	defer c.stop()
	res, times, err := c.rounds(ctx)
	if err != nil {
		return err
	}
	if o.samples != "" {
		if err := benchstat.WriteSamples(o.samples, times); err != nil {
			return err
		}
	}
	if o.asJSON {
		b, _ := json.Marshal(res)
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintf(stdout, "%d raft failovers, n = %d, %s: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; spurious elections %d\n",
		res.Rounds, res.N, res.HB, res.Failover.P50, res.Failover.P90, res.Failover.P99, res.Failover.Max, res.Spurious)
	return err
}

func hbName(d time.Duration) string {
	if d == 0 {
		return "default"
	}
	return d.String()
}

// rounds runs the failovers and summarises them.
func (c *cluster) rounds(ctx context.Context) (result, []time.Duration, error) {
	o := c.opts
	res := result{N: o.n, Rounds: o.rounds, Algorithm: "raft", Mode: "crash", HB: hbName(o.hb)}
	var times []time.Duration
	for r := range o.rounds {
		term := c.maxTerm()
		select {
		case <-time.After(o.quiet):
		case <-ctx.Done():
			return res, nil, ctx.Err()
		}
		spurious := c.maxTerm() - term
		res.Spurious += spurious
		d, err := c.round(ctx)
		if err != nil {
			return res, nil, fmt.Errorf("round %d: %w", r+1, err)
		}
		times = append(times, d)
		c.log.Info("round", "round", r+1, "of", o.rounds, "failover", d.Round(time.Microsecond), "spurious", spurious)
	}
	res.Failover = benchstat.Summarise(times)
	return res, times, nil
}

// round crashes the leader, times the failover, restarts the server and
// waits until all n agree on a leader.
func (c *cluster) round(ctx context.Context) (time.Duration, error) {
	old, ok := c.agreed()
	if !ok {
		return 0, errors.New("no agreed leader before the round")
	}
	t0 := time.Now()
	if err := old.crash(); err != nil {
		return 0, fmt.Errorf("crashing %s: %w", old.id, err)
	}
	_, at, err := c.waitAgreement(ctx, old)
	if err != nil {
		return 0, err
	}
	if err := c.restart(old); err != nil {
		return 0, err
	}
	if _, _, err := c.waitAgreement(ctx, nil); err != nil {
		return 0, fmt.Errorf("after %s came back: %w", old.id, err)
	}
	return at.Sub(t0), nil
}
