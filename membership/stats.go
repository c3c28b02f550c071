package membership

import (
	"errors"
	"sync/atomic"
)

// DropReason says why a received frame never reached Events.
type DropReason uint8

// The reasons.
const (
	// DropMalformed: the frame failed to decode: not a frame, truncated,
	// or a field out of range.
	DropMalformed DropReason = iota
	// DropVersion: the frame has a version this build does not read.
	DropVersion
	// DropUnknownSender: From is not an admitted live member (not joined
	// yet, declared dead, or refused).
	DropUnknownSender
	// DropStale: the frame was sent by, or addressed to, another
	// incarnation (boot ID) of its sender or of this node.
	DropStale
	// DropDuplicate: its sequence number was already delivered or skipped.
	DropDuplicate
	// DropQueueFull: Config.QueueSize received messages were already
	// waiting for the elector.
	DropQueueFull
	// DropTooLarge: the frame is over MaxFrameSize (ErrTooLarge); no
	// member sends one, so it is an attack or a foreign program.
	DropTooLarge
	// NumDropReasons bounds DropReason values.
	NumDropReasons
)

var dropNames = [...]string{"malformed", "version", "unknown_sender", "stale", "duplicate", "queue_full", "too_large"}

// String returns the reason's name, the value of the reason label.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "drop"
}

// DropReasons lists every reason, for metrics labels.
func DropReasons() []DropReason {
	out := make([]DropReason, NumDropReasons)
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}

// decodeDropReason sorts a decodeFrame error.
func decodeDropReason(err error) DropReason {
	switch {
	case errors.Is(err, errVersion):
		return DropVersion
	case errors.Is(err, ErrTooLarge):
		return DropTooLarge
	}
	return DropMalformed
}

// Stats are a Node's cumulative counts since New. The metrics package
// exports their changes; all fields only grow.
type Stats struct {
	// Received counts messages that passed every check and were queued,
	// in order, for Events.
	Received uint64
	// Dropped counts received frames discarded, by reason.
	Dropped [NumDropReasons]uint64
	// Reordered counts messages held back because an earlier sequence
	// number had not arrived yet; GapsSkipped counts sequence numbers given
	// up on after Config.ReorderTimeout.
	Reordered   uint64
	GapsSkipped uint64

	// Sent counts frames memberlist accepted (reliable: written to a TCP
	// stream; best effort: handed to UDP).
	Sent uint64
	// SendFailed counts frames memberlist failed to send.
	SendFailed uint64
	// SendQueueFull counts Send calls refused because the peer's queue held
	// Config.SendQueueSize frames.
	SendQueueFull uint64
	// SendAbandoned counts queued frames discarded because their peer left
	// or the node closed.
	SendAbandoned uint64

	// RefusedTagCollision counts members refused because core.Tag of their
	// name equals another live member's; RefusedBadMeta counts members
	// whose metadata did not decode (not coordelect, or another version).
	RefusedTagCollision uint64
	RefusedBadMeta      uint64
	// RefusedDuplicateName counts members refused because a live member
	// (maybe this node) already holds their name at another address.
	RefusedDuplicateName uint64
	// RefusedIncompatible counts members refused because their protocol
	// version or shared election settings differ (IncompatibleError).
	RefusedIncompatible uint64
	// KeyMismatch counts packets and streams that no installed key could
	// decrypt (memberlist drops them): someone uses another SecretKey.
	KeyMismatch uint64

	// Rejoins counts periodic re-joins of the seeds; RejoinFailures those
	// that reached no seed. RejoinsSkipped counts the periods with nobody
	// for this node to join: every seed a live member already and no
	// member departed lately, or, in a cluster of more than four members
	// where some seed is alive, the dead seeds and departed members left
	// to the about four members whose turn it was.
	Rejoins        uint64
	RejoinFailures uint64
	RejoinsSkipped uint64
}

// counters is the atomic form of Stats.
type counters struct {
	received, reordered, gapsSkipped                                 atomic.Uint64
	dropped                                                          [NumDropReasons]atomic.Uint64
	sent, sendFailed, sendQueueFull, sendAbandoned                   atomic.Uint64
	refusedTag, refusedMeta, rejoins, rejoinFailures, rejoinsSkipped atomic.Uint64
	refusedName, refusedCompat, keyMismatch                          atomic.Uint64
}

func (c *counters) drop(r DropReason) { c.dropped[r].Add(1) }

func (c *counters) snapshot() Stats {
	s := Stats{
		Received:             c.received.Load(),
		Reordered:            c.reordered.Load(),
		GapsSkipped:          c.gapsSkipped.Load(),
		Sent:                 c.sent.Load(),
		SendFailed:           c.sendFailed.Load(),
		SendQueueFull:        c.sendQueueFull.Load(),
		SendAbandoned:        c.sendAbandoned.Load(),
		RefusedTagCollision:  c.refusedTag.Load(),
		RefusedBadMeta:       c.refusedMeta.Load(),
		RefusedDuplicateName: c.refusedName.Load(),
		RefusedIncompatible:  c.refusedCompat.Load(),
		KeyMismatch:          c.keyMismatch.Load(),
		Rejoins:              c.rejoins.Load(),
		RejoinFailures:       c.rejoinFailures.Load(),
		RejoinsSkipped:       c.rejoinsSkipped.Load(),
	}
	for i := range c.dropped {
		s.Dropped[i] = c.dropped[i].Load()
	}
	return s
}
