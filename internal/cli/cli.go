// Package cli is the command-line plumbing that cmd/demo and the bench
// module's commands share: one-line usage errors (exit status 2), -h on
// stdout (status 0), and a main that maps errors to exit statuses.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// UsageError is a bad flag or argument: one line, exit status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef builds a UsageError, kept on one line even when it quotes input
// with line breaks in it.
func Usagef(format string, args ...any) error {
	return UsageError{oneLine(fmt.Sprintf(format, args...))}
}

// ErrHelp reports that -h printed the usage: exit status 0.
var ErrHelp = errors.New("help printed")

// ParseFlags parses args into fs. -h prints synopsis and the flags to
// stdout and returns ErrHelp; any other problem is a one-line UsageError.
// No positional arguments are accepted.
func ParseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, synopsis string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if synopsis != "" {
			fmt.Fprintln(stdout, synopsis)
		}
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return ErrHelp
	case err != nil:
		return Usagef("%v", err)
	case fs.NArg() > 0:
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Status runs a command's error through the exit-status rules: 0 for
// none or ErrHelp, 2 (one line on stderr) for a UsageError, 1 otherwise.
func Status(name string, err error, stderr io.Writer) int {
	var ue UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s\n", name, ue.Msg)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err.Error()))
		return 1
	}
}

// Main runs run with the process's arguments and a context that ends on
// SIGINT or SIGTERM, and exits with its status.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rc := Status(name, run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(rc)
}

// PrintJSON prints v as one line of JSON.
func PrintJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\r`).Replace(s)
}
