package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coordelect/coordelect/internal/cli"
	"github.com/coordelect/coordelect/metrics"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the next signal takes its default action and kills the process
	}()
	// memberlist reports its own metrics to go-metrics' process-wide sink:
	// route them to each node's registry.
	sink := metrics.NewMemberlistSink()
	if err := sink.Install(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: without memberlist's metrics: %v\n", err)
		sink = nil
	}
	rc := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr, sink)
	stop()
	os.Exit(rc)
}

// runContext runs the demo with args; the live modes stop gracefully when
// ctx ends. sink, if not nil, is the installed go-metrics sink that carries
// memberlist's metrics.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, sink *metrics.MemberlistSink) int {
	cmd, rest := "", args
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, rest = args[0], args[1:]
	}
	if cmd == "help" { // demo help [COMMAND] is demo [COMMAND] -h
		cmd, rest = "", []string{"-h"}
		if len(args) > 1 {
			cmd, rest = args[1], []string{"-h"}
		}
	}
	prefix := strings.TrimSpace("demo " + cmd)
	var err error
	switch cmd {
	case "":
		err = runCluster(ctx, rest, stdout, stderr, sink, nil)
	case "node":
		err = runNode(ctx, rest, stdout, stderr, sink)
	case "sim":
		err = runSim(ctx, rest, stdout)
	default:
		prefix = "demo"
		err = usagef("unknown command %q (want node, sim, help, or no command for the live local cluster; see demo -h)", cmd)
	}
	return cli.Status(prefix, err, stderr)
}
