package membership

import (
	"time"

	"github.com/coordelect/coordelect/election/core"
)

// maxHeld caps the messages one link holds behind a gap; past it the gap
// is skipped at once.
const maxHeld = 256

// inLink restores, at the receiver, the order in which one sender sent its
// reliable messages to this node. memberlist's SendReliable opens a TCP
// connection per message and the receiving side handles each on its own
// goroutine, so two messages sent one after the other can arrive swapped.
// The sender numbers them per destination from 1 (frameHeader.Seq); inLink
// delivers them in that order.
//
// A message can also be lost (written, then the connection broke). When a
// message arrives ahead of a missing one, it is held; if the gap is still
// open after the hold time it is skipped, so one lost message delays the
// link by at most the hold time and never stalls it. Duplicates and
// messages behind the delivered point are dropped.
//
// A link belongs to one incarnation of the sender (its boot ID); a sender
// that restarts numbers from 1 again, on a new link. inLink is a pure
// data structure: the dispatcher owns it and passes the time in.
//
// A sender has two streams to each receiver, each numbered on its own:
// its frames (Node.Send: core.Messages, an inLink) and its batch stream
// (Node.SendBatch and Node.SendCandidacy: batches and candidacy
// statements, a seqLink of streamItems).
type inLink = seqLink[core.Message]

// seqLink is the receive side of one numbered stream of one sender: what
// inLink says, for items of type T.
type seqLink[T any] struct {
	boot   uint64 // the sender's boot ID
	toBoot uint64 // the boot ID of ours the sender addresses
	next   uint64 // next sequence number to deliver
	// held holds the items behind a gap; nil while none is (a link in
	// order, the usual case, keeps no map: a member has a link from
	// every other).
	held     map[uint64]T
	deadline time.Time // when the open gap is skipped; zero if none
	hold     time.Duration
	stats    *counters
}

func newInLink(boot uint64, hold time.Duration, stats *counters) *inLink {
	return newSeqLink[core.Message](boot, hold, stats)
}

func newSeqLink[T any](boot uint64, hold time.Duration, stats *counters) *seqLink[T] {
	return &seqLink[T]{boot: boot, next: 1, hold: hold, stats: stats}
}

// accept takes item seq and appends to out the items now deliverable,
// in order.
func (l *seqLink[T]) accept(seq uint64, m T, now time.Time, out []T) []T {
	_, dup := l.held[seq]
	switch {
	case seq < l.next || dup:
		l.stats.drop(DropDuplicate)
		return out
	case seq == l.next:
		l.next++
		return l.drain(append(out, m), now)
	}
	if l.held == nil {
		l.held = make(map[uint64]T)
	}
	l.held[seq] = m
	l.stats.reordered.Add(1)
	if l.deadline.IsZero() {
		l.deadline = now.Add(l.hold)
	}
	if len(l.held) > maxHeld {
		return l.skip(out, now)
	}
	return out
}

// expire skips the open gap if its hold time is over.
func (l *seqLink[T]) expire(now time.Time, out []T) []T {
	if l.deadline.IsZero() || now.Before(l.deadline) {
		return out
	}
	return l.skip(out, now)
}

// flush delivers every held message, skipping all gaps: the sender is gone.
func (l *seqLink[T]) flush(out []T) []T {
	for len(l.held) > 0 {
		out = l.skip(out, time.Time{})
	}
	return out
}

// skip gives up on the sequence numbers below the lowest held message.
func (l *seqLink[T]) skip(out []T, now time.Time) []T {
	lowest := uint64(0)
	for seq := range l.held {
		if lowest == 0 || seq < lowest {
			lowest = seq
		}
	}
	if lowest == 0 {
		l.deadline = time.Time{}
		return out
	}
	l.stats.gapsSkipped.Add(lowest - l.next)
	l.next = lowest
	return l.drain(out, now)
}

// drain delivers held messages that have become next in line, and re-arms
// the deadline for a further gap.
func (l *seqLink[T]) drain(out []T, now time.Time) []T {
	for {
		m, ok := l.held[l.next]
		if !ok {
			break
		}
		delete(l.held, l.next)
		out = append(out, m)
		l.next++
	}
	l.deadline = time.Time{}
	if len(l.held) > 0 {
		l.deadline = now.Add(l.hold)
	} else {
		l.held = nil // a map keeps the room it grew to
	}
	return out
}
