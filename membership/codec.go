package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/coordelect/coordelect/election/core"
)

// Wire format of one frame, version 3: a link header that the Node's
// per-peer sender fills in, then the core.Message.
//
//	magic    1 byte  0xCE
//	version  1 byte  3
//	seq      uvarint per-link sequence number; 0 = unordered (best effort)
//	fromBoot 8 bytes big-endian boot ID of the sender
//	toBoot   8 bytes big-endian boot ID of the receiver the sender addressed
//	type     1 byte  core.MsgType, 1..core.NumMsgTypes-1
//	flags    1 byte  bit 0: Confirmed, bit 1: Released, bit 2: Abdicated,
//	                 bit 3: Granted, bit 4: Transfer, bit 5: Preempt; the
//	                 other bits must be zero
//	numbers  1 byte  which of the message's 32-bit fields follow seq, one
//	                 bit each: bit 0: Lap, 1: Index, 2: Phase, 3: Phases,
//	                 4: Lag, 5: PromiseLeft, 6: Every, 7: Lease
//	from, to                 string
//	term                     uvarint
//	rating                   varint
//	coordinator, initiator   string
//	value.rating             varint
//	value.id                 string
//	seq                      uvarint (heartbeat or pre-vote round)
//	lap .. lease             uvarint each, 1..2^32-1, in bit order, only
//	                         those whose numbers bit is set (a field that is
//	                         0 is left out)
//	list                     uvarint count, then per peer:
//	                         id string, rating varint, flags byte (bit 0: NonVoter)
//
// A string is a uvarint length then that many bytes; a varint is zig-zag
// (binary.AppendVarint). Varints must be minimal (no 0x80 0x00 padding), so
// every frame has exactly one encoding: decodeFrame accepts only what
// appendFrame produces, and re-encoding a decoded frame gives back the same bytes. The
// decoder checks every length against the bytes left and the caps below,
// and rejects trailing bytes. A frame of another version is dropped
// (errVersion): members must run builds of one frame version.
const (
	frameMagic   = 0xCE
	frameVersion = 3

	// MaxFrameSize caps an encoded frame, in bytes.
	MaxFrameSize = 64 << 10
	// MaxStringLen caps every string in a frame (IDs), in bytes.
	MaxStringLen = 512
	// MaxListLen caps the number of peers in Message.List.
	MaxListLen = 1024

	flagNonVoter = 1 << 0
	// maxHeaderSize bounds the link header: magic, version, seq, boots.
	// The message part may take the rest of MaxFrameSize.
	maxHeaderSize = 2 + binary.MaxVarintLen64 + 16
	maxBodySize   = MaxFrameSize - maxHeaderSize
)

// The codec's errors. Every error appendFrame and decodeFrame return wraps
// exactly one of these, so errors.Is sorts drops by reason; Node.Send
// returns ErrInvalid and ErrTooLarge.
var (
	// errVersion: the frame's magic byte is right but its version is not one
	// this build reads.
	errVersion = errors.New("membership: unsupported frame version")
	// errMalformed: not a frame (bad magic), truncated, an unknown message
	// type, a length over a cap, a non-minimal varint, unknown flag bits or
	// trailing bytes.
	errMalformed = errors.New("membership: malformed frame")
	// ErrTooLarge: the frame is over MaxFrameSize.
	ErrTooLarge = errors.New("membership: frame too large")
	// ErrInvalid: Send was given a message the codec cannot represent, or
	// one that is not from this node.
	ErrInvalid = errors.New("membership: invalid message")
)

// frameHeader is the per-link part of a frame, which the Node fills in: the
// sender's per-destination sequence number and the boot IDs of both ends.
type frameHeader struct {
	// Seq orders reliable messages on one link, from 1; 0 means unordered.
	Seq uint64
	// FromBoot and ToBoot are the boot IDs of the sender and of the
	// receiver incarnation the sender addressed (see Member.BootID).
	FromBoot, ToBoot uint64
}

// appendFrame appends the wire form of h and m to dst. It fails with
// ErrInvalid for an unknown type, a string over MaxStringLen, a List over
// MaxListLen, and with ErrTooLarge when the frame would exceed
// MaxFrameSize; dst is then returned unchanged.
func appendFrame(dst []byte, h frameHeader, m core.Message) ([]byte, error) {
	b, err := appendMessage(appendHeader(dst, h), m)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// appendHeader appends the link header of a frame.
func appendHeader(dst []byte, h frameHeader) []byte {
	return appendHeaderAs(dst, frameMagic, frameVersion, h)
}

// appendHeaderAs appends a link header with the given magic and version:
// that of a frame, a batch or a candidacy (openFrame reads it).
func appendHeaderAs(dst []byte, magic, version byte, h frameHeader) []byte {
	b := append(dst, magic, version)
	b = binary.AppendUvarint(b, h.Seq)
	b = binary.BigEndian.AppendUint64(b, h.FromBoot)
	return binary.BigEndian.AppendUint64(b, h.ToBoot)
}

// appendMessage appends the message part of a frame. The sender encodes it
// once, in Send, and prepends the header when it transmits.
func appendMessage(dst []byte, m core.Message) ([]byte, error) {
	if err := checkEncodable(m); err != nil {
		return dst, err
	}
	start := len(dst)
	b := appendHead(dst, m)
	b = appendString(appendString(b, m.From), m.To)
	b = appendFields(b, m)
	if n := len(b) - start; n > maxBodySize {
		return dst, fmt.Errorf("%w: message of %d bytes (max %d)", ErrTooLarge, n, maxBodySize)
	}
	return b, nil
}

// appendHead appends a message's type, its flags and the byte that says
// which of its 32-bit fields follow.
func appendHead(b []byte, m core.Message) []byte {
	flags, nums := msgFlags(&m), msgNumbers(&m)
	return append(b, byte(m.Type), setBits(flags[:]), nonZeroBits(nums[:]))
}

// appendFields appends a message's fields after From and To.
func appendFields(b []byte, m core.Message) []byte {
	b = binary.AppendUvarint(b, uint64(m.Term))
	b = binary.AppendVarint(b, m.Rating)
	return appendAfterCoordinator(appendString(b, m.Coordinator), m)
}

// appendAfterCoordinator appends a message's fields after Coordinator.
func appendAfterCoordinator(b []byte, m core.Message) []byte {
	b = appendString(b, m.Initiator)
	b = binary.AppendVarint(b, m.Value.Rating)
	b = appendString(b, m.Value.ID)
	b = binary.AppendUvarint(b, m.Seq)
	for _, v := range msgNumbers(&m) {
		if *v != 0 {
			b = binary.AppendUvarint(b, uint64(*v))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(m.List)))
	for _, p := range m.List {
		b = appendString(b, p.ID)
		b = binary.AppendVarint(b, p.Rating)
		b = append(b, boolFlag(p.NonVoter, flagNonVoter))
	}
	return b
}

func checkEncodable(m core.Message) error {
	if m.Type == 0 || int(m.Type) >= core.NumMsgTypes {
		return fmt.Errorf("%w: type %d", ErrInvalid, m.Type)
	}
	if len(m.List) > MaxListLen {
		return fmt.Errorf("%w: list of %d peers (max %d)", ErrInvalid, len(m.List), MaxListLen)
	}
	for _, s := range [...]string{m.From, m.To, m.Coordinator, m.Initiator, m.Value.ID} {
		if len(s) > MaxStringLen {
			return fmt.Errorf("%w: string of %d bytes (max %d)", ErrInvalid, len(s), MaxStringLen)
		}
	}
	for _, p := range m.List {
		if len(p.ID) > MaxStringLen {
			return fmt.Errorf("%w: list ID of %d bytes (max %d)", ErrInvalid, len(p.ID), MaxStringLen)
		}
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func boolFlag(v bool, bit byte) byte {
	if v {
		return bit
	}
	return 0
}

// msgFlags returns m's flags in the order of the bits of a frame's flags
// byte.
func msgFlags(m *core.Message) [6]*bool {
	return [...]*bool{&m.Confirmed, &m.Released, &m.Abdicated, &m.Granted, &m.Transfer, &m.Preempt}
}

// msgNumbers returns m's 32-bit fields in the order of the bits of a
// frame's numbers byte, which is the order they follow seq in.
func msgNumbers(m *core.Message) [8]*uint32 {
	return [...]*uint32{&m.Lap, &m.Index, &m.Phase, &m.Phases, &m.Lag, &m.PromiseLeft, &m.Every, &m.Lease}
}

// numberNames name msgNumbers in decode errors.
var numberNames = [8]string{"lap", "index", "phase", "phases", "lag", "promise_left", "every", "lease"}

// setBits returns a byte with bit i set for each set flag i.
func setBits(flags []*bool) byte {
	var b byte
	for i, f := range flags {
		b |= boolFlag(*f, 1<<i)
	}
	return b
}

// nonZeroBits returns a byte with bit i set for each non-zero number i.
func nonZeroBits(nums []*uint32) byte {
	var b byte
	for i, v := range nums {
		b |= boolFlag(*v != 0, 1<<i)
	}
	return b
}

// decodeFrame parses a frame. It never panics and never retains b: the
// message's strings and List are fresh copies. Errors wrap errVersion,
// ErrTooLarge or errMalformed.
func decodeFrame(b []byte) (frameHeader, core.Message, error) {
	var m core.Message
	r, h, err := openFrame(b, "frame", frameMagic, frameVersion)
	if err != nil {
		return h, m, err
	}
	if n := len(b) - r.off; r.err == nil && n > maxBodySize {
		return frameHeader{}, m, fmt.Errorf("%w: message of %d bytes (max %d)", ErrTooLarge, n, maxBodySize)
	}
	r.body(&m, r.head(&m))
	if err := r.end(); err != nil {
		return frameHeader{}, core.Message{}, err
	}
	return h, m, nil
}

// openFrame checks what every kind of frame begins with, its size, its
// magic byte and its version (kind names the kind in errors), and reads
// its link header. It returns a reader at the first byte after the
// header, whose sticky error says if the header was truncated; its error
// wraps ErrTooLarge, errMalformed (bad magic) or errVersion.
func openFrame(b []byte, kind string, magic, version byte) (reader, frameHeader, error) {
	var h frameHeader
	if len(b) > MaxFrameSize {
		return reader{}, h, fmt.Errorf("%w: %s of %d bytes (max %d)", ErrTooLarge, kind, len(b), MaxFrameSize)
	}
	if len(b) < 2 || b[0] != magic {
		return reader{}, h, fmt.Errorf("%w: bad %s magic", errMalformed, kind)
	}
	if b[1] != version {
		return reader{}, h, fmt.Errorf("%w: %s version %d (this build reads %d)", errVersion, kind, b[1], version)
	}
	r := reader{b: b, off: 2}
	h.Seq = r.uvarint()
	h.FromBoot, h.ToBoot = r.u64(), r.u64()
	return r, h, nil
}

// end returns the reader's first error or, if there is none, an error for
// bytes left after the last field: each format here is read to its end.
func (r *reader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d trailing bytes", len(r.b)-r.off)
	}
	return r.err
}

// head reads a message's type and flags, and returns the byte that says
// which of its 32-bit fields follow.
func (r *reader) head(m *core.Message) (nums byte) {
	nums, _ = r.headWith(m, 0)
	return nums
}

// headWith is head for a frame whose flags byte may also carry the bits
// of extra, above the message's own; it returns those that were set.
func (r *reader) headWith(m *core.Message, extra byte) (nums, got byte) {
	m.Type = core.MsgType(r.byte())
	if r.err == nil && (m.Type == 0 || int(m.Type) >= core.NumMsgTypes) {
		r.fail("unknown message type %d", m.Type)
	}
	flags := msgFlags(m)
	f := r.flags(1<<len(flags) - 1 | extra)
	for i, p := range flags {
		*p = f&(1<<i) != 0
	}
	return r.byte(), f & extra
}

// body reads the message fields after its head; nums is the numbers
// byte, which says which of the 32-bit fields are there.
func (r *reader) body(m *core.Message, nums byte) {
	m.From, m.To = r.str(), r.str()
	r.fields(m, nums)
}

// fields reads the message fields after From and To.
func (r *reader) fields(m *core.Message, nums byte) {
	m.Term = core.Term(r.uvarint())
	m.Rating = r.varint()
	m.Coordinator = r.str()
	r.afterCoordinator(m, nums)
}

// afterCoordinator reads a message's fields after Coordinator; nums is
// the numbers byte.
func (r *reader) afterCoordinator(m *core.Message, nums byte) {
	m.Initiator = r.str()
	m.Value.Rating = r.varint()
	m.Value.ID = r.str()
	m.Seq = r.uvarint()
	for i, p := range msgNumbers(m) {
		if nums&(1<<i) != 0 {
			*p = r.optU32(numberNames[i])
		}
	}
	m.List = r.list()
}

// optU32 reads an optional field that its bit says is there: 1..2^32-1
// (0 would have two encodings, with the bit and without it).
func (r *reader) optU32(name string) uint32 {
	switch v := r.uvarint(); {
	case v == 0:
		r.fail("%s 0 with its bit set", name)
	case v > math.MaxUint32:
		r.fail("%s %d over 2^32-1", name, v)
	default:
		return uint32(v)
	}
	return 0
}

func (r *reader) list() []core.Peer {
	n := r.uvarint()
	// Each peer takes at least 3 bytes, which bounds n before allocating.
	if n > MaxListLen || n > uint64(len(r.b)-r.off)/3 {
		r.fail("list of %d peers", n)
		return nil
	}
	if n == 0 || r.err != nil {
		return nil
	}
	list := make([]core.Peer, n)
	for i := range list {
		list[i].ID = r.str()
		list[i].Rating = r.varint()
		list[i].NonVoter = r.flag(flagNonVoter)
	}
	return list
}

// reader is a bounds-checked cursor with a sticky error: after the first
// failure every read returns a zero value, so callers check once at the end.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", errMalformed, r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

// flag reads a flags byte that may have only bit set.
func (r *reader) flag(bit byte) bool { return r.flags(bit) != 0 }

// flags reads a flags byte that may have only the bits in mask set.
func (r *reader) flags(mask byte) byte {
	f := r.byte()
	if f&^mask != 0 {
		r.fail("unknown flag bits %#x", f&^mask)
	}
	return f & mask
}

func (r *reader) u64() uint64 {
	if r.err != nil || len(r.b)-r.off < 8 {
		r.fail("truncated")
		return 0
	}
	r.off += 8
	return binary.BigEndian.Uint64(r.b[r.off-8:])
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail("truncated varint")
		return 0
	case n < 0:
		r.fail("varint overflows 64 bits")
		return 0
	case n > 1 && r.b[r.off+n-1] == 0:
		r.fail("non-minimal varint")
		return 0
	}
	r.off += n
	return v
}

// varint reads a zig-zag signed varint (binary.AppendVarint's encoding).
func (r *reader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > MaxStringLen || n > uint64(len(r.b)-r.off) {
		r.fail("string of %d bytes", n)
		return ""
	}
	r.off += int(n)
	return string(r.b[r.off-int(n) : r.off])
}
