package membership

import (
	"encoding/binary"
	"fmt"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/group"
)

// Wire format of a candidacy frame, version 1: a member's candidacy
// statement for another (election.Candidacy), on the link's batch stream.
//
//	magic    1 byte  0xCC
//	version  1 byte  1
//	seq      uvarint the batch stream's sequence number (always reliable: > 0)
//	fromBoot 8 bytes big-endian boot ID of the sender
//	toBoot   8 bytes big-endian boot ID of the receiver the sender addressed
//	from, to string
//	flags    1 byte  bit 0: Full, bit 1: Ask; the other bits must be zero
//	base     uvarint
//	version  uvarint
//	count    uvarint number of entries, 0..MaxCandidacyEntries
//	count times:
//	  name   string  group.ValidateName
//	  state  1 byte  0: runs the name, does not stand; 1: stands; 2: gone
//
// Canonical, as frames are: decodeCandidacy accepts only what
// appendCandidacy produces.
const (
	candidacyMagic   = 0xCC
	candidacyVersion = 1
	// MaxCandidacyEntries caps the entries of a candidacy frame (the
	// elector sends at most 512 at once).
	MaxCandidacyEntries = 1024

	flagFull = 1 << 0
	flagAsk  = 1 << 1

	stateRuns  = 0
	stateStand = 1
	stateGone  = 2
)

// appendCandidacyBody appends the part of a candidacy frame after its
// link header. It fails with ErrInvalid for a candidacy the format cannot
// carry and with ErrTooLarge past MaxFrameSize; dst is then returned
// unchanged.
func appendCandidacyBody(dst []byte, c election.Candidacy) ([]byte, error) {
	switch {
	case len(c.Entries) > MaxCandidacyEntries:
		return dst, fmt.Errorf("%w: candidacy of %d entries (max %d)", ErrInvalid, len(c.Entries), MaxCandidacyEntries)
	case len(c.From) > MaxStringLen || len(c.To) > MaxStringLen:
		return dst, fmt.Errorf("%w: candidacy From or To over %d bytes", ErrInvalid, MaxStringLen)
	}
	start := len(dst)
	b := appendString(appendString(dst, c.From), c.To)
	b = append(b, boolFlag(c.Full, flagFull)|boolFlag(c.Ask, flagAsk))
	b = binary.AppendUvarint(b, c.Base)
	b = binary.AppendUvarint(b, c.Version)
	b = binary.AppendUvarint(b, uint64(len(c.Entries)))
	for i, e := range c.Entries {
		if err := group.ValidateName(e.Name); err != nil {
			return dst, fmt.Errorf("%w: candidacy entry %d: %v", ErrInvalid, i, err)
		}
		state := byte(stateRuns)
		switch {
		case e.Gone:
			state = stateGone
		case e.Stand:
			state = stateStand
		}
		b = append(appendString(b, e.Name), state)
	}
	if n := len(b) - start; n > maxBodySize {
		return dst, fmt.Errorf("%w: candidacy of %d bytes (max %d)", ErrTooLarge, n, maxBodySize)
	}
	return b, nil
}

// appendCandidacy appends a whole candidacy frame.
func appendCandidacy(dst []byte, h frameHeader, c election.Candidacy) ([]byte, error) {
	b, err := appendCandidacyBody(appendHeaderAs(dst, candidacyMagic, candidacyVersion, h), c)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// decodeCandidacy parses a candidacy frame. It never panics and never
// retains b. Errors wrap errVersion, ErrTooLarge or errMalformed.
func decodeCandidacy(b []byte) (frameHeader, election.Candidacy, error) {
	var c election.Candidacy
	r, h, err := openFrame(b, "candidacy", candidacyMagic, candidacyVersion)
	if err != nil {
		return h, c, err
	}
	c.From, c.To = r.str(), r.str()
	f := r.flags(flagFull | flagAsk)
	c.Full, c.Ask = f&flagFull != 0, f&flagAsk != 0
	c.Base, c.Version = r.uvarint(), r.uvarint()
	n := r.uvarint()
	if r.err == nil && (n > MaxCandidacyEntries || n > uint64(len(b)-r.off)/3) {
		r.fail("candidacy of %d entries", n)
	}
	if r.err == nil && n > 0 {
		c.Entries = make([]election.CandidacyEntry, n)
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		e.Name = r.str()
		if r.err == nil {
			if err := group.ValidateName(e.Name); err != nil {
				r.fail("candidacy entry %d: %v", i, err)
			}
		}
		switch s := r.byte(); {
		case r.err != nil:
		case s == stateStand:
			e.Stand = true
		case s == stateGone:
			e.Gone = true
		case s != stateRuns:
			r.fail("candidacy entry %d: state %d", i, s)
		}
		if r.err != nil {
			break
		}
	}
	if err := r.end(); err != nil {
		return frameHeader{}, election.Candidacy{}, err
	}
	return h, c, nil
}
