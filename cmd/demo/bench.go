package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/membership"
)

const benchSynopsis = `usage: demo bench failover|soak|memory [flags]

Measures coordelect on a real memberlist cluster in this process, every
member on its own 127.0.0.1 port, with the library's default election
configuration. Progress goes to stderr; the result to stdout.

  failover   crash (or, with -mode resign, resign) the coordinator each round
             and time it until every survivor reports the same new one
  soak       an idle cluster while every core spins, counting spurious elections
  memory     heap per member with and without electors, after GC

See 'demo bench failover -h' and so on.`

// benchOptions is a validated bench command line; each subcommand uses
// the fields it defines flags for.
type benchOptions struct {
	n       int
	rounds  int
	alg     core.Algorithm
	mode    string // "crash" or "resign"
	profile string // memberlist profile
	asJSON  bool
	samples string        // file for the failover times, one per line; "" none
	quiet   time.Duration // settled window before each round
	timeout time.Duration // bound of each wait
	dur     time.Duration // soak
	burners int           // soak
	verbose bool          // failover: per-round diagnostics on stderr
	stagger time.Duration // pause between member starts
}

// maxBenchSize bounds -n: a process of 2 cores runs a few hundred members.
const maxBenchSize = 500

// runBench dispatches demo bench's subcommands.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: failover, soak or memory")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintln(stdout, benchSynopsis)
		return nil
	case "failover":
		return runBenchFailover(ctx, args[1:], stdout, stderr)
	case "soak":
		return runBenchSoak(ctx, args[1:], stdout, stderr)
	case "memory":
		return runBenchMemory(ctx, args[1:], stdout, stderr)
	}
	return usagef("unknown subcommand %q (want failover, soak or memory)", args[0])
}

// benchFlags returns a flag set with the flags every subcommand has.
func benchFlags(name string, o *benchOptions, nDefault int) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("demo bench "+name, flag.ContinueOnError)
	fs.IntVar(&o.n, "n", nDefault, fmt.Sprintf("number of members, 2 to %d", maxBenchSize))
	profile := fs.String("profile", membership.ProfileLAN,
		"memberlist profile: lan (the library's default), local or wan")
	fs.DurationVar(&o.stagger, "stagger", 0, "pause between member starts, e.g. 100ms")
	return fs, profile
}

// checkBenchCommon checks the flags every subcommand has.
func checkBenchCommon(o *benchOptions, profile string) error {
	switch {
	case o.n < 2 || o.n > maxBenchSize:
		return usagef("-n %d: want 2 to %d members", o.n, maxBenchSize)
	case o.stagger < 0:
		return usagef("-stagger %v: want 0 or more", o.stagger)
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

// printJSON prints v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
