// Package membership runs a hashicorp/memberlist (v0.7.0) member and adapts
// it to election.Transport: memberlist's SWIM gossip says who is alive, the
// node metadata carries each member's rating, and memberlist's user
// messages carry the core.Messages of the election.
//
// Start with DefaultConfig and New (Example): the Node is the
// election.Transport an election.Elector runs on. Options holds what a
// service tunes (profile, encryption key, label, queues), Config.SetElection
// the election settings every member must share; coordelect.Start does
// both for most services.
//
// # Events
//
// memberlist calls its delegates from its own goroutines, the membership
// ones under its node lock. The Node's callbacks only copy what they are
// given into an inbox and return; one dispatcher goroutine turns the inbox
// into Events, in order:
//
//   - EventPeerUp when a member joins or comes back (also for every member
//     already present when the node starts), EventPeerDown when it leaves
//     or is declared dead, EventPeerRating when it publishes a new rating.
//     This node itself never appears.
//   - A restart under the same name is a new boot ID in the metadata. It
//     resets the node's links to the member and is reported as an
//     EventPeerUp alone (a PeerDown would make the followers of a restarted
//     coordinator, which has usually taken over again by then, elect). A
//     restart at a new address (a pod recreated with a new IP) is one too,
//     once a ping shows the old address silent (restart.go).
//   - A member whose core.Tag equals another live member's (terms embed the
//     tag) is refused: among colliding members the lowest ID is admitted,
//     the others are logged as errors, counted and kept from the elector.
//   - EventMessage for each message received from an admitted member.
//
// Membership events are never dropped. Messages are dropped, and counted by
// DropReason in Stats, when they do not decode, come from a non-member or
// another incarnation of one, or when Config.QueueSize of them already wait.
//
// # Sending
//
// Send never waits on the network: each peer has a FIFO queue, and a sender
// goroutine while the queue holds frames (the Send that finds it idle
// starts one; it returns when the queue is empty); the queue is dropped
// when the peer leaves.
// Heartbeats go as one UDP datagram (SendBestEffort); everything else over
// TCP (SendReliable). memberlist opens a connection per reliable message,
// so two of them can arrive swapped: the sender numbers them per link and
// the receiver restores the order, holding an early message up to
// Config.ReorderTimeout for the one before it. An election message the
// elector marks core.Message.BestEffort (a coordinator's announcement to a
// member that hears its heartbeats only in rotation) goes as one datagram,
// numbered like the rest: one lost is a gap, skipped like any other.
//
// # Wire format
//
// Frames are versioned and strictly decoded; the layout is in codec.go.
// What does not decode is dropped and counted (Stats.Dropped).
//
// # Partitions and shutdown
//
// Every Config.RejoinInterval the node joins its seeds again, so that the
// two sides of a healed partition find each other after memberlist has
// forgotten its dead. A seed's DNS name is resolved again at each join
// (Config.Resolver), to every address it has. Leave announces a graceful exit; Close alone looks
// like a crash to the others.
//
// # Tests
//
// Package membershiptest's FaultNetwork gives each member of a test cluster
// a real transport (Config.Transport) whose traffic can be blocked,
// partitioned, lost or delayed.
package membership
