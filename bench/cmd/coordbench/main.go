// Command coordbench measures coordelect on real clusters: failover
// (against hashicorp/raft with the same driver), spurious elections under
// load, memory. See coordbench -h.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/cli"
	"github.com/coordelect/coordelect/membership"
)

const benchSynopsis = `usage: coordbench failover|compare|soak|nodesoak|memory|idle|elections|report [flags]

Measures coordelect on real memberlist clusters, every member on its own
127.0.0.1 port, with the library's default election configuration.
Progress goes to stderr; the result to stdout.

  failover   crash (or, with -mode resign, resign) the coordinator each round
             and time it until every survivor reports the same new one
             (members in this process)
  compare    failover of coordelect and of hashicorp/raft (its defaults and
             tuned to our budget), one after the other in one run, with the
             same driver
  soak       an idle cluster in this process while goroutines of this
             process spin, counting spurious elections
  nodesoak   an idle cluster of 'demo node' processes loaded from outside
             (busy processes, or a cgroup CPU quota on every node)
  memory     heap per member with and without electors, after GC
  idle       an idle cluster in this process (or, with -procs K, spread
             over K child processes): the coordinator's and the followers'
             sends per second, the CPU per member
  elections  named elections on the simulator, in virtual time: leaders
             per member, idle packets per member against a one-name
             cluster, crash failover of every name the crashed member led,
             spurious elections, bytes per name per member
  report     rewrite docs/performance.md and its plots from the results
             files (bench/results) that -results writes

See 'coordbench failover -h' and so on.`

func main() { cli.Main("coordbench", run) }

// usagef builds a one-line usage error (exit status 2).
var usagef = cli.Usagef

func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, synopsis string) error {
	return cli.ParseFlags(fs, args, stdout, synopsis)
}

func printJSON(w io.Writer, v any) error { return cli.PrintJSON(w, v) }

// algorithmFlag is a -algorithm flag: bully, ring or peterson.
type algorithmFlag struct{ a core.Algorithm }

func (f *algorithmFlag) String() string { return f.a.String() }

func (f *algorithmFlag) Set(s string) error {
	a, err := core.ParseAlgorithm(s)
	if err != nil {
		return errors.New("want bully, ring or peterson")
	}
	f.a = a
	return nil
}

// benchOptions is a validated bench command line; each subcommand uses
// the fields it defines flags for.
type benchOptions struct {
	n         int
	rounds    int
	alg       core.Algorithm
	mode      string // "crash" or "resign"
	profile   string // memberlist profile
	asJSON    bool
	samples   string        // file for the failover times, one per line; "" none
	quiet     time.Duration // settled window before each round
	timeout   time.Duration // bound of each wait
	dur       time.Duration // soak
	burners   int           // soak
	verbose   bool          // failover: per-round diagnostics on stderr
	stagger   time.Duration // pause between member starts
	stallDump string        // file for a goroutine dump when the coordinator's heartbeats fall during start
	stallLog  bool          // a logger per member, at debug level for the dissenters of a stalled agreement
	logTop    int           // the top-rated members that log at info level from their start
	ramp      time.Duration // added to stagger in proportion to the members started (startPause)
	quorum    int           // failover: the electors' QuorumSize, 0 for none
	busy      int           // failover: busy processes per core beside the bench
	pprof     string        // address to serve net/http/pprof on; "" none
	voters    int           // the top-rated voters; the others are non-voters (0: all vote)
	// compress is memberlist's Config.EnableCompression (true in its
	// profiles); -compress=false turns it off.
	compress bool
	seed     uint64 // the seeds each member joins are drawn with it
	// memprofile is idle's -memprofile: the heap profiles' file; "" none.
	memprofile string
	// bare: idle runs the members without electors (memberlist's own
	// cost, the baseline the electors add to).
	bare bool
	// roundQuiet: idle -rounds' settled window before each round.
	roundQuiet time.Duration
	// procs: idle spreads the members over this many shard processes
	// (shards.go); netns puts each in a network namespace of its own.
	procs int
	netns bool
	// bind is the address members bind to (shard: its namespace's).
	bind string
	// health: log the scheduler's latency and memberlist's failure
	// detection every health (health.go); 0 off.
	health time.Duration
	// results is the directory of the run's results file (results.go);
	// "" none.
	results string
}

// startPause is the pause after the start of the k-th member (k started):
// -stagger, plus -ramp scaled by k/n. Every member handles the alive
// broadcast of each join (memberlist retransmits each a few times per
// member), so with k members up a join costs O(k) across the process, and
// a pause that grows with k keeps the start's CPU level.
func (o *benchOptions) startPause(k int) time.Duration {
	return o.stagger + time.Duration(int64(o.ramp)*int64(k)/int64(max(o.n, 1)))
}

// maxBenchSize bounds -n: a process of 2 cores runs 1,000 members
// (docs/performance.md, "A 1,000-member cluster").
const maxBenchSize = 1000

// run dispatches coordbench's subcommands.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: failover, compare, soak, nodesoak, memory, idle, elections or report")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, benchSynopsis)
		return nil
	case "failover":
		return runBenchFailover(ctx, args[1:], stdout, stderr)
	case "compare":
		return runCompare(ctx, args[1:], stdout, stderr)
	case "soak":
		return runBenchSoak(ctx, args[1:], stdout, stderr)
	case "nodesoak":
		return runNodeSoak(ctx, args[1:], stdout, stderr)
	case "memory":
		return runBenchMemory(ctx, args[1:], stdout, stderr)
	case "idle":
		return runBenchIdle(ctx, args[1:], stdout, stderr)
	case "report":
		return runReport(ctx, args[1:], stdout, stderr)
	case "elections":
		return runBenchElections(ctx, args[1:], stdout, stderr)
	case "shard":
		return runShard(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	return usagef("unknown subcommand %q (want failover, compare, soak, nodesoak, memory, idle, elections or report)", args[0])
}

// parseBench parses the command line of subcommand name: the flags every
// subcommand has (benchFlags) and those that define adds to them, -timeout
// among them. It checks the common flags, then check checks the
// subcommand's own, then it checks -timeout.
func parseBench(name string, nDefault int, synopsis string, args []string, stdout io.Writer,
	define func(*flag.FlagSet, *benchOptions), check func(*benchOptions) error) (benchOptions, error) {
	o := benchOptions{}
	fs, profile := benchFlags(name, &o, nDefault)
	define(fs, &o)
	if err := parseFlags(fs, args, stdout, synopsis); err != nil {
		return o, err
	}
	if err := checkBenchCommon(&o, *profile); err != nil {
		return o, err
	}
	if err := check(&o); err != nil {
		return o, err
	}
	if o.timeout <= 0 {
		return o, usagef("-timeout %v: want more than 0", o.timeout)
	}
	return o, servePprof(o.pprof) // once the command line is valid
}

// benchFlags returns a flag set with the flags every subcommand has.
func benchFlags(name string, o *benchOptions, nDefault int) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("coordbench "+name, flag.ContinueOnError)
	fs.IntVar(&o.n, "n", nDefault, fmt.Sprintf("number of members, 2 to %d", maxBenchSize))
	profile := fs.String("profile", membership.ProfileLAN,
		"memberlist profile: lan (the library's default), local or wan")
	fs.DurationVar(&o.stagger, "stagger", 0, "pause between member starts, e.g. 100ms")
	fs.StringVar(&o.stallDump, "stalldump", "", "write every goroutine's stack to this file once, in the second the cluster's heartbeats fall below a quarter of their peak (a stall)")
	fs.BoolVar(&o.stallLog, "stalllog", false, "give every member a logger, off until a wait for an agreement has lasted 20 s; then the members that dissent (up to 5) and the wanted one log at debug level on stderr until the agreement")
	fs.IntVar(&o.logTop, "logtop", 0, "the top-rated this many members log at info level on stderr from their start (memberlist's suspicions, elections started, leases): who started a spurious election, and why; with -procs each shard logs its own")
	fs.DurationVar(&o.ramp, "ramp", 0, "added to -stagger in proportion to the members started: k of n started, the pause is stagger + ramp·k/n (a join's gossip costs O(k) across the cluster, so the start's CPU stays level); e.g. 400ms")
	fs.StringVar(&o.pprof, "pprof", "", "serve net/http/pprof on this address (e.g. 127.0.0.1:6060) while the bench runs; with -procs (no -netns), shard J serves on the port J above it")
	fs.IntVar(&o.voters, "voters", 0, "only the V top-rated members vote, the others are non-voters (Config.NonVoter); 0: every member votes")
	fs.BoolVar(&o.compress, "compress", true, "memberlist's EnableCompression (true in its profiles: every packet and push-pull is LZW-compressed); false turns it off")
	fs.DurationVar(&o.health, "health", 0, "log, every this often, the Go scheduler's latency, GC pauses and what memberlist reports (suspect, dead and alive messages, Lifeguard's health scores, probe and push-pull times) of the members in this process (with -procs, each process logs its own, named shardJ); 0: off")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the random draw of the members each starting member joins")
	return fs, profile
}

// checkBenchCommon checks the flags every subcommand has.
func checkBenchCommon(o *benchOptions, profile string) error {
	switch {
	case o.n < 2 || o.n > maxBenchSize:
		return usagef("-n %d: want 2 to %d members", o.n, maxBenchSize)
	case o.logTop < 0 || o.logTop > o.n:
		return usagef("-logtop %d: want 0 to -n (%d)", o.logTop, o.n)
	case o.stagger < 0:
		return usagef("-stagger %v: want 0 or more", o.stagger)
	case o.health < 0:
		return usagef("-health %v: want 0 (off) or more", o.health)
	case o.ramp < 0:
		return usagef("-ramp %v: want 0 or more", o.ramp)
	case o.voters < 0 || o.voters > o.n:
		return usagef("-voters %d: want 0 (all) or 1 to -n (%d)", o.voters, o.n)
	case profile != membership.ProfileLAN && profile != membership.ProfileLocal && profile != membership.ProfileWAN:
		return usagef("-profile %q: want lan, local or wan", profile)
	}
	o.profile = profile
	return nil
}

// newBenchLogger logs the bench's progress (not the members') on w.
// With verbose it also logs, for every failover, the node the agreement
// waited for and the membership counters (frames held for reordering, gaps
// skipped, drops, failed sends) of the survivors.
func newBenchLogger(w io.Writer, verbose bool) hclog.Logger {
	level := hclog.Info
	if verbose {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{Name: "bench", Output: w, Level: level})
}
