package membership

import (
	"encoding/binary"
	"fmt"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// Wire format of a batch frame, version 1: what a member sends another
// for many named elections at once (group.Batch): the link header of a
// frame, the sender and the receiver once, then (name, message) pairs.
//
//	magic    1 byte  0xCB
//	version  1 byte  1
//	seq      uvarint per-link sequence number; 0 = unordered (best effort)
//	fromBoot 8 bytes big-endian boot ID of the sender
//	toBoot   8 bytes big-endian boot ID of the receiver the sender addressed
//	from, to string  the batch's sender and receiver: every message's From and To
//	count    uvarint number of pairs, 1..MaxBatchPairs
//	count times:
//	  name   string  the election's name (group.ValidateName: 1..group.MaxNameLen bytes)
//	  type, flags, numbers, then the fields of a frame's message after
//	         from and to (term, rating, coordinator, ..., list), in the
//	         same encoding, but for flag bit 6 (pairs only): the
//	         coordinator is the batch's sender and is not written (set
//	         exactly when it is: a coordinator's heartbeats and
//	         announcements, most pairs)
//
// A name is written in full in each pair: a batch carries one pair per
// name most of the time (a heartbeat round, or an acknowledgement), for
// which a table of names would only add an index per pair. The format is
// canonical, as frames are: decodeBatch accepts only what appendBatch
// produces, and checks every length against the bytes left and the caps.
const (
	batchMagic   = 0xCB
	batchVersion = 1
	// MaxBatchPairs caps the pairs of a batch frame.
	MaxBatchPairs = 8192
	// minPairSize is the fewest bytes a pair takes: a one-byte name and
	// its length, the type, flags and numbers bytes, and seven fields of
	// one byte (term, rating, the empty strings' lengths, seq, the list's
	// count; the coordinator omitted).
	minPairSize = 2 + 3 + 7
	// flagCoordinatorFrom is a pair's flag, in its flags byte above the
	// message's own (msgFlags, bits 0-5): its coordinator is the batch's
	// sender, not written.
	flagCoordinatorFrom = 1 << 6
)

// appendPair appends one pair of a batch from from.
func appendPair(b []byte, from string, p group.Pair) []byte {
	m := p.Msg
	self := m.Coordinator != "" && m.Coordinator == from
	b = appendHead(appendString(b, p.Name), m)
	if self {
		b[len(b)-2] |= flagCoordinatorFrom // the flags byte, before the numbers byte
	}
	b = binary.AppendUvarint(b, uint64(m.Term))
	b = binary.AppendVarint(b, m.Rating)
	if !self {
		b = appendString(b, m.Coordinator)
	}
	return appendAfterCoordinator(b, m)
}

// pair reads one pair of a batch from from.
func (r *reader) pair(p *group.Pair, i int, from string) {
	p.Name = r.str()
	if r.err == nil {
		if err := group.ValidateName(p.Name); err != nil {
			r.fail("batch pair %d: %v", i, err)
		}
	}
	m := &p.Msg
	nums, self := r.headWith(m, flagCoordinatorFrom)
	m.Term = core.Term(r.uvarint())
	m.Rating = r.varint()
	if self != 0 {
		m.Coordinator = from
	} else if m.Coordinator = r.str(); r.err == nil && m.Coordinator != "" && m.Coordinator == from {
		r.fail("batch pair %d: the sender written as coordinator", i) // one encoding only
	}
	r.afterCoordinator(m, nums)
}

// appendBatch appends the batch frame of h and b to dst. It fails with
// ErrInvalid for a batch with no pairs or more than MaxBatchPairs, a
// pair whose name group.ValidateName refuses or whose message is not
// from b.From to b.To or does not encode (see appendFrame), and with
// ErrTooLarge when the frame would exceed MaxFrameSize; dst is then
// returned unchanged.
func appendBatch(dst []byte, h frameHeader, b group.Batch) ([]byte, error) {
	out, n, err := appendBatchUpTo(dst, h, b, MaxFrameSize)
	if err == nil && n < len(b.Pairs) {
		return dst, fmt.Errorf("%w: batch of %d pairs: only %d fit in %d bytes", ErrTooLarge, len(b.Pairs), n, MaxFrameSize)
	}
	return out, err
}

// appendBatchUpTo appends the batch frame of h and as many of b's first
// pairs as fit in limit bytes (at most MaxFrameSize), and returns how
// many it took: a sender splits a batch into datagrams (limit: the
// path's datagram size) or frames with it. It fails as appendBatch does,
// and with ErrTooLarge when not even the first pair fits.
func appendBatchUpTo(dst []byte, h frameHeader, b group.Batch, limit int) ([]byte, int, error) {
	limit = min(limit, MaxFrameSize)
	if err := checkBatch(b); err != nil {
		return dst, 0, err
	}
	head := appendHeaderAs(dst, batchMagic, batchVersion, h)
	out, n, err := appendBatchBody(head, b, limit-(len(head)-len(dst)))
	if err != nil {
		return dst, 0, err
	}
	return out, n, nil
}

// appendBatchBody appends the part of a batch frame after its link
// header (from, to, count, pairs) with as many of b's first pairs as fit
// in limit bytes, and returns how many it took; b has been checked
// (checkBatch). A sender encodes the body once and prepends the header
// when it transmits (the sequence number is known only then).
func appendBatchBody(dst []byte, b group.Batch, limit int) ([]byte, int, error) {
	start := len(dst)
	out := appendString(appendString(dst, b.From), b.To)
	// The count goes before the pairs: room for the widest count that a
	// frame can hold, then the pairs, then the count moved into place.
	countAt := len(out)
	out = append(out, make([]byte, binary.MaxVarintLen16)...)
	pairsAt := len(out)
	n := 0
	for _, p := range b.Pairs {
		before := len(out)
		out = appendPair(out, b.From, p)
		if len(out)-start-(binary.MaxVarintLen16-uvarintLen(uint64(n+1))) > limit {
			out = out[:before]
			break
		}
		n++
	}
	if n == 0 {
		return dst[:start], 0, fmt.Errorf("%w: batch pair 0 (name %q) does not fit in %d bytes", ErrTooLarge, b.Pairs[0].Name, limit)
	}
	var count [binary.MaxVarintLen16]byte
	k := binary.PutUvarint(count[:], uint64(n))
	copy(out[countAt:], count[:k])
	out = append(out[:countAt+k], out[pairsAt:]...) // overlapping, leftwards: copy semantics
	return out, n, nil
}

// checkBatch reports a batch that the format cannot carry, naming the
// pair and the field.
func checkBatch(b group.Batch) error {
	switch {
	case len(b.Pairs) == 0:
		return fmt.Errorf("%w: batch from %q to %q has no pairs", ErrInvalid, b.From, b.To)
	case len(b.Pairs) > MaxBatchPairs:
		return fmt.Errorf("%w: batch of %d pairs (max %d)", ErrInvalid, len(b.Pairs), MaxBatchPairs)
	case len(b.From) > MaxStringLen || len(b.To) > MaxStringLen:
		return fmt.Errorf("%w: batch From or To over %d bytes", ErrInvalid, MaxStringLen)
	}
	for i, p := range b.Pairs {
		if err := group.ValidateName(p.Name); err != nil {
			return fmt.Errorf("%w: batch pair %d: %v", ErrInvalid, i, err)
		}
		if p.Msg.From != b.From {
			return fmt.Errorf("%w: batch pair %d (%q): Msg.From = %q, want the batch's From %q", ErrInvalid, i, p.Name, p.Msg.From, b.From)
		}
		if p.Msg.To != b.To {
			return fmt.Errorf("%w: batch pair %d (%q): Msg.To = %q, want the batch's To %q", ErrInvalid, i, p.Name, p.Msg.To, b.To)
		}
		if err := checkEncodable(p.Msg); err != nil {
			return fmt.Errorf("batch pair %d (%q): %w", i, p.Name, err)
		}
	}
	return nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// decodeBatch parses a batch frame. It never panics and never retains
// b: names, strings and lists are fresh copies. Every message's From and
// To are the batch's. Errors wrap errVersion, ErrTooLarge or
// errMalformed and say where and what.
func decodeBatch(b []byte) (frameHeader, group.Batch, error) {
	var out group.Batch
	r, h, err := openFrame(b, "batch", batchMagic, batchVersion)
	if err != nil {
		return h, out, err
	}
	out.From, out.To = r.str(), r.str()
	n := r.uvarint()
	if r.err == nil && (n == 0 || n > MaxBatchPairs || n > uint64(len(b)-r.off)/minPairSize) {
		r.fail("batch of %d pairs", n)
	}
	if r.err == nil {
		out.Pairs = make([]group.Pair, n)
	}
	for i := range out.Pairs {
		p := &out.Pairs[i]
		r.pair(p, i, out.From)
		p.Msg.From, p.Msg.To = out.From, out.To
		if r.err != nil {
			break
		}
	}
	if err := r.end(); err != nil {
		return frameHeader{}, group.Batch{}, err
	}
	return h, out, nil
}
