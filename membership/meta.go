package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// meta is what a member publishes in its memberlist node metadata
// (Delegate.NodeMeta, at most memberlist.MetaMaxSize = 512 bytes).
//
// Encoding, version 4 (at most 1+1+10+8+1+maxAlgorithmLen+4*10+2+MaxPayloadLen
// = 351 bytes):
//
//	version   1 byte  4: ProtocolVersion
//	flags     1 byte  bit 0: NonVoter; the other bits must be zero
//	rating    varint
//	boot      8 bytes big-endian
//	algorithm uvarint length + bytes, at most maxAlgorithmLen
//	quorum    uvarint  QuorumSize
//	heartbeat uvarint  HeartbeatInterval, ns
//	misses    uvarint  HeartbeatMisses
//	lease     uvarint  QuorumLease, ns
//	payload   uvarint length + bytes, at most MaxPayloadLen (version 3 added it)
//
// Like frames, the decoder is strict: unknown version or flags, truncation
// and trailing bytes are errors. A member without metadata is no coordelect
// member and is refused as a peer; one with another version, or with
// settings that differ from this node's (compat), is refused at join.
type meta struct {
	Rating    int64
	NonVoter  bool
	Boot      uint64
	Algorithm string
	Quorum    uint64
	Heartbeat uint64 // ns
	Misses    uint64
	Lease     uint64 // ns
	Payload   string // Config.Payload, opaque
}

// ProtocolVersion is the version of the metadata and of the frames this
// build speaks (frames carry their own version, 3, and batch frames
// theirs, 1); it leads the metadata, and members of another version are
// refused at join, so that members whose frames cannot be read by each
// other never count each other alive, nor members that would not act on
// each other's messages alike. Version 3 added the payload; version 4 the
// frames of version 3 (one meaning per message field) and batch frames;
// version 5 the active/relay ring's outcome told to each member directly
// in View mode (a member of version 4 would pass it on as a lap, and one
// of version 5 would end a lap of version 4 where it reached it); version
// 6 the ring's outcome told the same way, with no list (a member of
// version 5 would take it for a lap that does not list it).
const ProtocolVersion = 6

// MaxPayloadLen bounds Config.Payload, in bytes: the payload travels in
// memberlist's node metadata (memberlist.MetaMaxSize = 512 bytes, shared
// with the rating, boot ID and election settings) and in every gossiped
// alive message.
const MaxPayloadLen = 256

const (
	metaVersion     = ProtocolVersion
	maxAlgorithmLen = 32
)

// compat compares the settings that every member must share and returns
// the first that differs: its name (the Config field) and both values.
func (m meta) compat(o meta) (field string, ours, theirs any, ok bool) {
	switch {
	case m.Algorithm != o.Algorithm:
		return "Algorithm", m.Algorithm, o.Algorithm, false
	case m.Quorum != o.Quorum:
		return "QuorumSize", m.Quorum, o.Quorum, false
	case m.Heartbeat != o.Heartbeat:
		return "HeartbeatInterval", time.Duration(m.Heartbeat), time.Duration(o.Heartbeat), false
	case m.Misses != o.Misses:
		return "HeartbeatMisses", m.Misses, o.Misses, false
	case m.Lease != o.Lease:
		return "QuorumLease", time.Duration(m.Lease), time.Duration(o.Lease), false
	}
	return "", nil, nil, true
}

var errMeta = errors.New("membership: bad node metadata")

func (m meta) encode() []byte {
	b := make([]byte, 0, 26+len(m.Algorithm)+len(m.Payload))
	b = append(b, metaVersion, boolFlag(m.NonVoter, flagNonVoter))
	b = binary.AppendVarint(b, m.Rating)
	b = binary.BigEndian.AppendUint64(b, m.Boot)
	b = appendString(b, m.Algorithm)
	for _, v := range [...]uint64{m.Quorum, m.Heartbeat, m.Misses, m.Lease} {
		b = binary.AppendUvarint(b, v)
	}
	return appendString(b, m.Payload)
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
	m.Algorithm = r.boundedString("algorithm name", maxAlgorithmLen)
	m.Quorum, m.Heartbeat, m.Misses, m.Lease = r.uvarint(), r.uvarint(), r.uvarint(), r.uvarint()
	m.Payload = r.boundedString("payload", MaxPayloadLen)
	if err := r.end(); err != nil {
		return meta{}, fmt.Errorf("%w: %v", errMeta, err)
	}
	return m, nil
}

// boundedString reads a uvarint length and that many bytes, at most limit.
func (r *reader) boundedString(what string, limit uint64) string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > limit || n > uint64(len(r.b)-r.off) {
		r.fail("%s of %d bytes", what, n)
		return ""
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s
}
