package election

import (
	"time"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
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
	// EventBatch: a batch of named elections' messages arrived (Batch is
	// set): what one member sent this one in one frame, a message of
	// every name that had one for it. Only a BatchTransport reports it.
	EventBatch
	// EventCandidacy: a member told this one which names it runs and
	// stands for (Candidacy is set). Only a BatchTransport reports it.
	EventCandidacy
)

// Event is what a Transport reports to the elector.
type Event struct {
	// Kind says which of the other fields is set.
	Kind EventKind
	// Message is the message received (EventMessage).
	Message core.Message
	// Peer is the member concerned (the membership kinds).
	Peer core.Peer
	// Named (EventPeerUp): the member runs named elections: a
	// BatchTransport can send it batches and candidacies. A member
	// without it (an older build, during a rolling restart) runs the
	// unnamed election only.
	Named bool
	// Batch is the batch received (EventBatch). It is the Event's own:
	// the elector may keep it.
	Batch group.Batch
	// Candidacy is the candidacy statement received (EventCandidacy).
	Candidacy *Candidacy
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

// BatchTransport is a Transport that carries named elections (optional;
// membership.Node and electiontest's Transport implement it): batches
// of (name, message) pairs, one frame per destination, and the
// candidacy statements by which members learn which names the others
// run and stand for. Without it an Elector runs the unnamed election
// only (Elector.Election refuses other names).
//
// Concurrency contract: as Send's. SendBatch and SendCandidacy are
// called from the elector's loop goroutine and must not block on the
// network. Their arguments are the elector's buffers, valid during the
// call only: a transport that keeps any part copies it (group.Batch.Clone).
// The elector sends the unnamed election's messages with Send, whatever
// the member (so that they keep one order per link, and a transport that
// wraps Send sees them as it always did), and a batch of the other names'
// pairs, or a candidacy, only to a member whose EventPeerUp had Named
// set: a member without it runs the unnamed election alone.
type BatchTransport interface {
	Transport
	// Named reports whether this member runs named elections: whether
	// the others are told so (their EventPeerUp has Named set) and it
	// takes batches and candidacies. An Elector over a BatchTransport
	// that says no runs the unnamed election alone.
	Named() bool
	// SendBatch queues b for b.To. Heartbeats and their acks may go
	// best effort (datagrams); the other pairs reliably and in order per
	// link. An error means no pair of b was queued.
	SendBatch(b group.Batch) error
	// SendCandidacy queues c for c.To, reliably and in order with the
	// batches to c.To.
	SendCandidacy(c Candidacy) error
}

// Candidacy is a candidacy statement: what one member tells another of
// the names it runs (hosts) and stands for. A member sends each other
// member its whole statement when it learns of it (EventPeerUp), and
// then the changes, numbered; a receiver that finds a change missing
// asks for the whole statement again (Ask). See docs/design.md, "Named
// elections".
type Candidacy struct {
	// From and To are the sender and the receiver.
	From, To string
	// Full: Entries are the sender's whole statement (Version's): the
	// receiver forgets what it knew of the sender's names first.
	Full bool
	// Ask: the sender asks the receiver for its whole statement (it
	// missed a change). A Candidacy may carry only this.
	Ask bool
	// Base is the version of the statement the Entries change (0 with
	// Full), Version the version they make: a receiver applies a change
	// only to the statement of version Base.
	Base, Version uint64
	// Entries are the names, each once at most.
	Entries []CandidacyEntry
}

// CandidacyEntry is one name in a Candidacy.
type CandidacyEntry struct {
	// Name is the election's name.
	Name string
	// Stand: the sender runs the name and stands for it. Without it the
	// sender runs the name without standing, or (Gone) no longer runs it.
	Stand bool
	// Gone: the sender no longer runs the name (in a change; a whole
	// statement lists only the names the sender runs).
	Gone bool
}

// Clone returns a copy of c that shares no memory with it.
func (c Candidacy) Clone() Candidacy {
	c.Entries = append([]CandidacyEntry(nil), c.Entries...)
	return c
}
