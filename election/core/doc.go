// Package core holds the election algorithms as deterministic state
// machines: bully (docs/algorithms.md, bully), the ring with a list of live members
// (§2) and the active/relay ring (§3).
//
// A Node has no goroutines, no clock, no sockets and no randomness. Its
// owner feeds it events and, after each, takes what changed (a Ready: the
// messages to send, the node's status, what it counted):
//
//	n, err := core.NewNode(cfg)
//	for {
//		select {
//		case <-ticker.C:
//			n.Tick()
//		case m := <-received:
//			n.Step(m)
//		case ev := <-membership:
//			n.PeerUp(ev.Peer) // or PeerDown, PeerRating
//		}
//		rd := n.Ready()
//		for _, m := range rd.Messages {
//			transport.Send(m.Clone())
//		}
//		report(rd.Status, rd.Counters)
//	}
//
// A driver need not tick at every tick: NextDeadline says when the next
// tick that may do something is, and Skip does what the ticks before it
// do. The event-driven simulator and the runtime driver sleep until it.
//
// The simulator (election/sim), the scenario tests, the benchmarks and the
// runtime driver (package election) all run this same code.
//
// Terms. Every coordinator has a Term that only grows: the high 32 bits
// count elections, the low 32 bits are the winner's Tag, so two coordinators
// never share a term even in a split brain. A node ignores (and counts)
// claims of a lower term than it has seen; a stale ELECTION is still
// answered so that its sender learns the newer term.
//
// Failure detection. The coordinator sends a heartbeat every
// HeartbeatInterval ticks; a follower that misses HeartbeatMisses of them in
// a row starts an election (the source texts' "waited too long for a message from
// the coordinator"). In View mode a PeerDown for the coordinator does too.
package core
