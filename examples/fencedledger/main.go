// Command fencedledger is a service that embeds coordelect: replicas elect
// a leader over memberlist, and the leader appends `term seq` rows to a
// ledger in a SQLite database they share, through a fence
// (github.com/coordelect/coordelect/fencing): the new leader claims the
// fence before its work starts, and every write commits only if the fence
// still holds the writer's term, so a deposed leader that has not noticed
// yet (paused, starved, cut off) cannot add a row. With -quorum the leader
// also checks its lease before every write.
//
//	fencedledger -name a -bind 127.0.0.1:7001 -db /tmp/ledger.db -quorum 3 &
//	fencedledger -name b -bind 127.0.0.1:7002 -join 127.0.0.1:7001 -db /tmp/ledger.db -quorum 3 &
//	fencedledger -name c -bind 127.0.0.1:7003 -join 127.0.0.1:7001 -db /tmp/ledger.db -quorum 3 &
//
// SIGINT or SIGTERM hands off and leaves; SIGUSR1 raises this replica's
// rating above every rating it knows of (it then takes the lead by a
// hand-off). -events writes the replica's event log, JSON lines stamped
// with CLOCK_MONOTONIC, which the exclusivity bench (bench/cmd/exclusivity
// in the repository) reads.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/membership"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "fencedledger:", err)
		os.Exit(1)
	}
}

// parseFlags turns the command line into a Config (its Events and Logger
// still unset) and the paths of the event log.
func parseFlags(args []string, stderr io.Writer) (cfg Config, events, level string, check bool, err error) {
	var name, bind, join, profile string
	fs := flag.NewFlagSet("fencedledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&name, "name", "", "this replica's name, unique in the cluster (required)")
	fs.StringVar(&bind, "bind", "127.0.0.1:7946", "IP:PORT for gossip and election traffic; port 0 picks one")
	fs.StringVar(&join, "join", "", "HOST:PORT[,HOST:PORT...] of replicas to join")
	fs.IntVar(&cfg.Quorum, "quorum", 0, "quorum guard: the cluster size (the same on every replica); 0 turns it off")
	fs.StringVar(&cfg.DB, "db", "ledger.db", "the SQLite database file every replica shares")
	cfg.Membership = membership.DefaultConfig()
	fs.Int64Var(&cfg.Membership.Rating, "rating", 0, "this replica's rating: the live replica with the highest rating leads")
	fs.DurationVar(&cfg.Interval, "interval", 10*time.Millisecond, "time between two ledger writes of the leader")
	fs.StringVar(&events, "events", "", "file to append the event log to (JSON lines); empty: none")
	fs.StringVar(&profile, "profile", membership.ProfileLocal, "memberlist timings: lan, local (one host) or wan")
	fs.StringVar(&level, "log-level", "warn", "log level: trace, debug, info, warn, error or off")
	fs.BoolVar(&check, "check", false, "do not run: print a JSON report of the ledger in -db (rows, terms, stale rows) and exit")
	if err = fs.Parse(args); err != nil || check {
		return cfg, "", "", check, err
	}
	if name == "" {
		return cfg, "", "", false, errors.New("-name is required")
	}
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return cfg, "", "", false, fmt.Errorf("-bind %q: %w", bind, err)
	}
	mc := &cfg.Membership
	mc.Name, mc.BindAddr, mc.Profile = name, host, profile
	if mc.BindPort, err = strconv.Atoi(port); err != nil {
		return cfg, "", "", false, fmt.Errorf("-bind %q: port: %w", bind, err)
	}
	if join != "" {
		mc.Seeds = strings.Split(join, ",")
	}
	return cfg, events, level, false, nil
}

// run runs one replica until SIGINT or SIGTERM.
func run(args []string, stdout, stderr io.Writer) error {
	cfg, events, level, check, err := parseFlags(args, stderr)
	switch {
	case err != nil:
		return err
	case check:
		return checkLedger(cfg.DB, stdout)
	}
	if events != "" {
		f, err := os.OpenFile(events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Events = f
	}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "fencedledger", Level: hclog.LevelFromString(level), Output: stderr})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	raise := make(chan os.Signal, 1)
	signal.Notify(raise, syscall.SIGUSR1)
	s, err := Start(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "replica %s: gossip %s, ledger %s\n", cfg.Membership.Name, s.Addr(), cfg.DB)
	for {
		select {
		case <-raise:
			if r, err := s.RaiseRating(); err != nil {
				cfg.Logger.Error("raising the rating", "error", err)
			} else {
				cfg.Logger.Info("rating raised", "rating", r)
			}
		case <-ctx.Done():
			return s.Stop(2 * time.Second)
		}
	}
}

// checkLedger prints the Report of the ledger in the database at path.
func checkLedger(path string, stdout io.Writer) error {
	ctx := context.Background()
	db, _, err := openStore(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := ReadLedger(ctx, db)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(Report(rows))
}
