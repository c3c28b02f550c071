package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
	"github.com/coordelect/coordelect/internal/cli"
)

// The demo's command-line plumbing is the bench module's (internal/cli):
// a bad flag or argument is a one-line usage error (exit status 2), -h
// prints the synopsis and the flags and exits with status 0.
var (
	usagef     = cli.Usagef
	parseFlags = cli.ParseFlags
	errHelp    = cli.ErrHelp
)

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

// levelFlag is a -log-level flag.
type levelFlag struct{ l hclog.Level }

func (f *levelFlag) String() string { return strings.ToLower(f.l.String()) }

func (f *levelFlag) Set(s string) error {
	l := hclog.LevelFromString(s)
	if l == hclog.NoLevel {
		return errors.New("want trace, debug, info, warn, error or off")
	}
	f.l = l
	return nil
}

// decodeKey decodes the -key flag: base64 of a 16, 24 or 32-byte AES key.
// The error never repeats the key.
func decodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, usagef("-key: not base64 (want 16, 24 or 32 random bytes in base64, e.g. from: head -c 32 /dev/urandom | base64)")
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, usagef("-key: decodes to %d bytes (want 16, 24 or 32, e.g. from: head -c 32 /dev/urandom | base64)", len(key))
}

// checkHostPort checks a HOST:PORT flag value. With ipOnly the host must be
// an IP address; the port must lie in [minPort, 65535].
func checkHostPort(flagName, v string, ipOnly bool, minPort int) (host string, port int, err error) {
	want := fmt.Sprintf("want HOST:PORT with a port from %d to 65535", minPort)
	if ipOnly {
		want = fmt.Sprintf("want IP:PORT with a port from %d to 65535", minPort)
	}
	h, p, err := net.SplitHostPort(v)
	if err != nil || h == "" {
		return "", 0, usagef("-%s %q: %s", flagName, v, want)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < minPort || port > 65535 || ipOnly && net.ParseIP(h) == nil {
		return "", 0, usagef("-%s %q: %s", flagName, v, want)
	}
	return h, port, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// The -jobs flag of the live modes: the named elections each node runs,
// with spread placement (election.PlaceSpread).
const (
	// defaultJobs is the number of jobs run when -jobs is not given.
	defaultJobs = 12
	// maxJobs bounds the local cluster's -jobs: the page lists every job
	// on every change.
	maxJobs = 64
	// maxNodeJobs bounds demo node's -jobs, which has no page: /status
	// lists every job, and each costs about 2 KiB per node
	// (docs/performance.md, "Named elections (simulated)").
	maxNodeJobs = 10000
	// jobsUsage is the -jobs flag's help.
	jobsUsage = "named elections (jobs) every node runs, leaders spread over the nodes by rating: " +
		"a count N (scheduler, compactor, billing, then shard-00, shard-01, ...; 0: none) " +
		"or a comma-separated list of names"
)

// jobNames returns n job names: scheduler, compactor and billing, then
// shard-00, shard-01, ... for the rest.
func jobNames(n int) []string {
	out := make([]string, 0, n)
	for i, name := range []string{"scheduler", "compactor", "billing"} {
		if i == n {
			return out
		}
		out = append(out, name)
	}
	for i := 0; len(out) < n; i++ {
		out = append(out, fmt.Sprintf("shard-%02d", i))
	}
	return out
}

// parseJobs parses a -jobs value: a count from 0 to limit (jobNames of it),
// or a comma-separated list of at most limit distinct names, each a valid
// election name (group.ValidateName) other than the unnamed election's. A
// value that parses as an integer is a count.
func parseJobs(v string, limit int) ([]string, error) {
	const want = "want a count from 0 (none) to %d, or a comma-separated list of names"
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		if n < 0 || n > limit {
			return nil, usagef("-jobs %q: "+want, v, limit)
		}
		return jobNames(n), nil
	}
	names := splitList(v)
	switch {
	case len(names) == 0:
		return nil, usagef("-jobs %q: no names; "+want, v, limit)
	case len(names) > limit:
		return nil, usagef("-jobs %q: %d names; "+want, v, len(names), limit)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if err := group.ValidateName(name); err != nil {
			return nil, usagef("-jobs %q: %s", v, strings.TrimPrefix(err.Error(), "group: "))
		}
		if name == election.DefaultName {
			return nil, usagef("-jobs %q: name %q is the unnamed election's, which every node runs", v, name)
		}
		if seen[name] {
			return nil, usagef("-jobs %q: name %q given twice", v, name)
		}
		seen[name] = true
	}
	return names, nil
}
