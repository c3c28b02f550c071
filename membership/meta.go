package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// meta is what a member publishes in its memberlist node metadata
// (Delegate.NodeMeta, at most memberlist.MetaMaxSize = 512 bytes).
//
// Encoding, version 1 (at most 1+1+10+8+1+maxAlgorithmLen = 53 bytes):
//
//	version   1 byte  1
//	flags     1 byte  bit 0: NonVoter; the other bits must be zero
//	rating    varint
//	boot      8 bytes big-endian
//	algorithm uvarint length + bytes, at most maxAlgorithmLen
//
// Like frames, the decoder is strict: unknown version or flags, truncation
// and trailing bytes are errors, and the member is refused.
type meta struct {
	Rating    int64
	NonVoter  bool
	Boot      uint64
	Algorithm string
}

const (
	metaVersion     = 1
	maxAlgorithmLen = 32
)

var errMeta = errors.New("membership: bad node metadata")

func (m meta) encode() []byte {
	b := make([]byte, 0, 24+len(m.Algorithm))
	b = append(b, metaVersion, boolFlag(m.NonVoter, flagNonVoter))
	b = binary.AppendVarint(b, m.Rating)
	b = binary.BigEndian.AppendUint64(b, m.Boot)
	return appendString(b, m.Algorithm)
}

func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) == 0 {
		return m, fmt.Errorf("%w: empty (not a coordelect member?)", errMeta)
	}
	if b[0] != metaVersion {
		return m, fmt.Errorf("%w: version %d (this build reads %d)", errMeta, b[0], metaVersion)
	}
	r := reader{b: b, off: 1}
	m.NonVoter = r.flag(flagNonVoter)
	m.Rating = r.varint()
	m.Boot = r.u64()
	if n := r.uvarint(); r.err == nil && (n > maxAlgorithmLen || n > uint64(len(b)-r.off)) {
		r.fail("algorithm name of %d bytes", n)
	} else if r.err == nil {
		m.Algorithm = string(b[r.off : r.off+int(n)])
		r.off += int(n)
	}
	if r.err == nil && r.off != len(b) {
		r.fail("%d trailing bytes", len(b)-r.off)
	}
	if r.err != nil {
		return meta{}, fmt.Errorf("%w: %v", errMeta, r.err)
	}
	return m, nil
}
