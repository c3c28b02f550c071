// Package prefetch asks the processor for memory that is about to be
// read (the simulator's next nodes, election/sim; the core's algorithm
// state, core.Node.PrefetchState).
package prefetch
