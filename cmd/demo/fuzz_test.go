package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/internal/cli"
)

// FuzzFlags feeds arbitrary command lines (fields separated by NUL) to the
// flag parsers of every subcommand: the live cluster, `demo node` and
// `demo sim` (with its setup, which checks the values against each other).
// Each either accepts the line, prints help, or returns a usageError of one
// non-empty line; none panics. An accepted `demo node` line also passes
// membership's own Config.Validate. The checked-in corpus is in
// testdata/fuzz/FuzzFlags.
func FuzzFlags(f *testing.F) {
	for _, s := range []string{
		"", "-h", "-n\x003\x00-algorithm\x00ring\x00-quorum\x002", "-key\x00c2hvcnQ=", "-http\x00127.0.0.1:0",
		"-name\x00a\x00-bind\x00127.0.0.1:0\x00-join\x00127.0.0.1:7946,b:1\x00-advertise\x0010.0.0.1:7",
		"-name\x00a\x00-rating\x00-3\x00-profile\x00wan\x00-log-level\x00debug\x00-quorum\x005",
		"-algorithm\x00peterson\x00-ids\x003,1,2\x00-ratings\x001,2,3\x00-crash\x003\x00-detect\x001",
		"-n\x008\x00-loss\x000.2\x00-dup\x000.1\x00-delay\x002-9\x00-shuffle\x00-view\x00-json",
		"-explore\x005\x00-n\x004", "--n=2", "-n=", "-ids\x00,,", "-delay\x00-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 512 {
			t.Skip("long lines add nothing the parsers see")
		}
		args := strings.Split(line, "\x00")
		_, err := parseClusterFlags(args, io.Discard)
		checkParseError(t, "demo", args, err)
		o, err := parseNodeFlags(args, io.Discard)
		checkParseError(t, "demo node", args, err)
		if err == nil {
			if verr := o.mem.Validate(); verr != nil {
				t.Fatalf("demo node %q: accepted, but membership rejects it: %v", args, verr)
			}
		}
		checkParseError(t, "demo sim", args, simSetupError(args))
	})
}

// simSetupError parses a `demo sim` line and, unless it asks for a script
// or exploration (which run), checks its values against each other.
func simSetupError(args []string) error {
	f, err := parseSimFlags(args, io.Discard)
	if err != nil || f.script != "" || f.explore != 0 {
		return err
	}
	if f.n > 10_000 {
		return nil // setup of a million-node cluster is valid, only slow
	}
	_, err = f.setup()
	return err
}

// checkParseError fails unless err is nil, the help sentinel, or a
// one-line usageError.
func checkParseError(t *testing.T, cmd string, args []string, err error) {
	t.Helper()
	var ue cli.UsageError
	switch {
	case err == nil, errors.Is(err, errHelp):
	case !errors.As(err, &ue):
		t.Fatalf("%s %q: %T %v: want a usageError (exit status 2)", cmd, args, err, err)
	case ue.Msg == "" || strings.ContainsAny(ue.Msg, "\n\r"):
		t.Fatalf("%s %q: usage error %q: want one non-empty line", cmd, args, ue.Msg)
	}
}
