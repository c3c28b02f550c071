// Command demo shows coordelect at work.
//
//	demo [flags]         runs a live cluster of 5 nodes in this process, with a web page (see demo -h)
//	demo node [flags]    runs one node, for clusters across processes and hosts (see demo node -h)
//	demo sim [flags]     runs one simulated election, a scenario script or a fault exploration (see demo sim -h)
//	demo help [COMMAND]  prints the usage of demo or of COMMAND (as -h does)
//
// Start with `go run ./cmd/demo` and open the page it prints: crash,
// restart, resign, re-rate or partition nodes with a click and watch the
// election, and the named jobs (-jobs) each node leads move when it
// crashes. `demo node` is the same member as a process of its own, with
// /status, /leader, /metrics and /readyz on its -http address; the README
// starts three of them. `demo sim -script FILE` replays a scenario
// (docs/scenarios.md), and `demo sim -explore K` runs K random fault
// schedules through the simulator's checker (docs/reliability.md); with
// -names E every schedule runs E named elections, each checked.
//
// Bad flags print one line naming the flag and exit with status 2, before
// anything starts. SIGINT or SIGTERM stops the live modes gracefully: a
// coordinator hands off, every node leaves the cluster. A second signal
// kills the process.
package main
