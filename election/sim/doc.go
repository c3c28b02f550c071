// Package sim is the deterministic simulator: a virtual clock, a seeded
// network with per-link delay, loss, duplication, reordering and
// partitions, crashes and restarts (at a time or at a trigger), and a
// checker that runs after every event. It drives the same core.Node the
// runtime drives; nothing in here knows how an algorithm works.
//
// # Where to start
//
//   - New builds a cluster from a Config (members, algorithm, mode,
//     network); Bootstrap, Crash, Partition, Heal, RunFor and Settle drive
//     it, and Agreement and Statuses read it. Example crashes a
//     coordinator and settles.
//   - RunScriptResult runs a scenario script, the line-by-line language
//     of docs/scenarios.md that `demo sim -script FILE` runs and the files
//     under testdata/scenarios are written in.
//   - Explore runs random fault schedules (each one a script, so a failing
//     one replays exactly from its text) and Shrink cuts a failing one down
//     to the lines that still break its property; `demo sim -explore K`
//     runs it. The schedules it ever found are kept as regression tests
//     under testdata/explore-found.
//   - Checker holds the properties asserted after every event (at most
//     one coordinator per term, a term names its winner, no term goes
//     back, the quorum guard's minority and overlap rules) and, once the
//     faults stop, the liveness ones.
//   - Config.Names (the scenario language's "name" and "names") makes
//     every member host named elections in one group.Group, the host the
//     runtime drives: the network carries its batches (one delivery per
//     batch, faulted as a single message is) and the checker asserts every
//     property per name (named.go).
//
// The simulator is event-driven: it costs what happens, not the number of
// nodes times the virtual time. A node is ticked only at the tick on which
// a timer of its own can fire (core.Node.NextDeadline); the ticks it was
// not given are applied at once, exactly, before its next input or tick
// (core.Node.Skip), and the clock jumps from event to event. The traces
// are those of ticking every node at every tick, which the tests check
// against that reference (Config.dense) for random fault schedules.
package sim
