// Command demo shows coordelect at work.
//
//	demo                 runs the default scenario in the simulator and prints its trace
//	demo sim [flags]     runs one simulated election (see demo sim -h)
//
// Bad flags print one line naming the flag and exit with status 2.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// usageError is a bad flag or argument: one line, exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd, rest := "", args
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, rest = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "":
		err = runDefault(rest, stdout)
	case "sim":
		err = runSim(rest, stdout)
	default:
		err = usagef("unknown command %q (want sim, or no command for the default demo)", cmd)
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "demo %s: %s\n", cmd, ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "demo %s: %v\n", cmd, err)
		return 1
	}
}

// runDefault runs the seed 000 fig. 29 walk-through in the simulator with a
// readable trace. (The live local cluster with a web page replaces this
// once the runtime lands.)
func runDefault(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	fmt.Fprintln(stdout, "coordelect demo: the bully algorithm, seed 000 fig. 29, in the deterministic simulator")
	fmt.Fprintln(stdout, "(nodes 1 < 2 < 3 < 4; 4 is down; 1 notices; 3 crashes just before announcing itself)")
	return runScript(defaultScript, stdout)
}

const defaultScript = `
cluster algorithm=bully ids=(1,2,3,4) delay=1-3
----

crash 4
----

crash 3 on=coordinator
----

detect 1
----

stabilize
----

messages
----
`
