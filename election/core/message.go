package core

import "strconv"

// MsgType is the kind of a message between nodes.
type MsgType uint8

// The message types. Election, Answer and Coordinator are the ones the source texts
// name; Ack is the ring's hop acknowledgement ("the successor responds");
// Resign is a coordinator's hand-off to its successor;
// Heartbeat and HeartbeatAck are the coordinator heartbeat the project adds
// (the source texts' "waited too long for a message from the coordinator").
const (
	MsgElection MsgType = iota + 1
	MsgAnswer
	MsgCoordinator
	MsgAck
	MsgResign
	MsgHeartbeat
	MsgHeartbeatAck
	// MsgPreVote asks a member whether this node may raise the term (View
	// mode, docs/algorithms.md "Pre-vote"); MsgPreVoteAck answers it.
	MsgPreVote
	MsgPreVoteAck
	// MsgPreempt asks the coordinator to hand the role over to its sender,
	// which outranks it by the preemption policy.
	MsgPreempt
	numMsgTypes
)

// NumMsgTypes bounds MsgType values; arrays indexed by MsgType use it.
const NumMsgTypes = int(numMsgTypes)

var msgNames = [...]string{"", "election", "answer", "coordinator", "ack", "resign", "heartbeat", "heartbeat_ack",
	"prevote", "prevote_ack", "preempt"}

// String returns the message type's name, as the metrics label it.
func (t MsgType) String() string {
	if t > 0 && t < numMsgTypes {
		return msgNames[t]
	}
	return "msg(" + strconv.Itoa(int(t)) + ")"
}

// MsgTypes lists every valid message type.
func MsgTypes() []MsgType {
	out := make([]MsgType, 0, numMsgTypes-1)
	for t := MsgElection; t < numMsgTypes; t++ {
		out = append(out, t)
	}
	return out
}

// ElectionTraffic reports whether t is part of an election (everything but
// heartbeats and their acks).
func (t MsgType) ElectionTraffic() bool {
	return t >= MsgElection && t < numMsgTypes && t != MsgHeartbeat && t != MsgHeartbeatAck
}

// Message is what nodes exchange. Which fields mean something depends on
// Type and the algorithm; unused fields are zero. Each field has one
// meaning: a field that two message types carry means the same on both
// (an Ack echoes the fields that identify the hop it answers, link.ack).
type Message struct {
	Type MsgType
	// Confirmed: on a Heartbeat, and on a Coordinator in the coordinator's
	// own name, the coordinator holds its quorum lease (with the quorum
	// guard; without it every coordinator sets it).
	Confirmed bool
	// Released is set on the last heartbeat of a coordinator that has
	// stepped down: its followers stop following it and are free of the
	// promise their acknowledgements made (quorum guard).
	Released bool
	// Abdicated: on a Released heartbeat, the coordinator passes the role
	// to nobody, so its followers elect at once.
	Abdicated bool
	// Granted: on a PreVoteAck, the answer: the sender grants the pre-vote.
	Granted bool
	// Transfer: on a Resign, the role is transferred to the receiver,
	// which declares at once rather than hold an election.
	Transfer bool
	// Preempt: on a PreVote, the round asks only whether the sender
	// reaches a majority (preemption), not leave to raise the term.
	Preempt bool
	// BestEffort is a hint to the transport, never sent on the wire: the
	// sender can do without this message's delivery, so it may go as one
	// datagram that nothing retransmits (membership sends it by UDP, in
	// its link's order). A coordinator in a fanned-out view sets it on its
	// announcement to the members that hear its heartbeats only in
	// rotation (fanout.go): their next heartbeat makes up for a lost one.
	BestEffort bool
	// Unordered is a hint to the transport, never sent on the wire: the
	// message needs no order with its link's others and no delivery
	// either, so it may go as one datagram outside the link's numbering
	// (membership sends it by UDP, unnumbered, as a heartbeat): in View
	// mode a ring's ELECTION hop that asks for an Ack (its link holds the
	// messages behind it until the Ack, and sends it again if the Ack does
	// not come: ringlink.go, resend) and that Ack.
	Unordered bool
	From      string
	To        string
	// Term: for Coordinator and Heartbeat the coordinator's term; for the
	// others the highest term the sender has seen.
	Term Term
	// Rating is the sender's rating, so that receivers learn rating changes.
	Rating int64
	// Coordinator names the coordinator (Coordinator, Heartbeat). On a ring
	// ELECTION in View mode it names the receiver when the sender wants the
	// hop acknowledged (ringlink.go).
	Coordinator string
	// Initiator is the node that started a ring election or lap.
	Initiator string
	// List is the ring's list of working participants in ring order. A node
	// may append to it in place when forwarding: a transport that delivers a
	// message twice must Clone it first.
	List []Peer
	// Value is the active/relay ring's value d (a rank); on Coordinator
	// messages of either ring, the coordinator's rank.
	Value Rank
	// Lap: on a ring ELECTION, the epoch of the lap, which with Initiator
	// identifies it (ring.go).
	Lap uint32
	// Index: on a ring COORDINATOR, the receiver's index in List.
	Index uint32
	// Phase: on an active/relay ELECTION, the phase and which of its two
	// messages this is, packed (packPhase: 2p-1 or 2p); 0 is a hand-off's
	// wake-up call.
	Phase uint32
	// Phases: on an active/relay COORDINATOR, the number of phases the
	// election took (Node.Phases).
	Phases uint32
	// Lag: on a Heartbeat, how many ticks late the coordinator's loop ran
	// (Node.Advance): its followers give it that much longer.
	Lag uint32
	// PromiseLeft: on a PreVoteAck refused for a promise (quorum guard),
	// the ticks until that promise runs out: the sender may grant then.
	PromiseLeft uint32
	// Every: on a Heartbeat, the ticks within which the receiver should
	// expect the coordinator's next heartbeat; 0 means HeartbeatInterval
	// (every round). Members outside the coordinator's watchers hear it
	// less often (fanout.go).
	Every uint32
	// Lease: on a Heartbeat, the lease in ticks the coordinator asks its
	// voters to promise, when its round trips made it stretch the lease
	// beyond QuorumLease; on a HeartbeatAck, the lease the voter promised.
	// 0 means QuorumLease (quorum guard only; guard.go).
	Lease uint32
	// Seq: on a Heartbeat the coordinator's round number in its term (1,
	// 2, ...); on a HeartbeatAck the round acknowledged; on a Confirmed
	// Coordinator the last round sent before the lease held; on a PreVote
	// and its PreVoteAck the pre-vote's round. The quorum lease runs from the
	// send time of the newest round a majority acknowledged. (The flags
	// pack beside Type and the 32-bit fields in pairs: a Message is 176
	// bytes.)
	Seq uint64
}

// Clone returns a copy that shares no memory with m.
func (m Message) Clone() Message {
	if m.List != nil {
		m.List = append([]Peer(nil), m.List...)
	}
	return m
}
