package election

import (
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// EventKind says what a transport Event carries.
type EventKind uint8

// The event kinds.
const (
	// EventMessage: a message for this node arrived (Message is set).
	EventMessage EventKind = iota + 1
	// EventPeerUp: a member joined, came back, or changed its metadata
	// (Peer is set). Also sent for every member already present when the
	// elector starts.
	EventPeerUp
	// EventPeerDown: a member left or was declared dead (Peer.ID is set).
	EventPeerDown
	// EventPeerRating: a member published a new rating (Peer is set).
	EventPeerRating
)

// Event is what a Transport reports to the elector.
type Event struct {
	// Kind says which of the other fields is set.
	Kind EventKind
	// Message is the message received (EventMessage).
	Message core.Message
	// Peer is the member concerned (the other kinds).
	Peer core.Peer
}

// Transport carries election messages between nodes and reports membership.
// membership.Node implements it on hashicorp/memberlist; tests use an
// in-memory one.
//
// The local member's Identity comes from the Transport, which publishes it:
// Config has no copy of it.
//
// Concurrency contract: Send and SetRating may be called from the elector's
// loop goroutine and must not block on the network (queue and return).
// Events is read by that one goroutine only; the transport must never block
// forever writing to it (it owns the buffering, and counts what it drops).
type Transport interface {
	// Identity is this node's identity as the transport publishes it to
	// the other members: its Name is the election ID, its Rating,
	// NonVoter and Algorithm are the ones the elector runs with. New reads
	// it once; later rating changes go through SetRating.
	Identity() Identity
	// Send queues m for m.To. Heartbeats may go best effort (UDP);
	// election traffic must go reliably, and, for algorithms that need it,
	// in order per link. An error means m was not queued.
	Send(m core.Message) error
	// Events delivers messages and membership changes for this node. The
	// channel is closed when the transport is closed.
	Events() <-chan Event
	// SetRating publishes this node's new rating to the cluster.
	SetRating(rating int64) error
}

// FailingTransport is a Transport that can fail for good, for a reason the
// operator must see (membership.Node does when another member holds its
// name). After closing Events it returns that reason from Err; Run then
// returns an error that wraps both ErrTransportClosed and it.
type FailingTransport interface {
	Transport
	// Err is nil until the transport has failed.
	Err() error
}

// StartupTransport is a Transport that can tell a starting Elector how its
// cluster forms (optional; membership.Node implements it). The Elector
// uses it for the defaults of Config.ExpectVoters and Config.StartupDelay.
type StartupTransport interface {
	Transport
	// Seeds is the number of members the transport joins at start, this
	// node's own address not counted: a node with seeds that sees no other
	// voter has not found its cluster yet.
	Seeds() int
	// Spread is how long the news of a member that joined takes to reach
	// the others (memberlist: its gossip interval): a starting node's view
	// that has not changed for that long has probably stopped growing.
	Spread() time.Duration
}
