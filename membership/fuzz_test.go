package membership

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// FuzzDecode checks that DecodeFrame never panics on arbitrary bytes, that
// every error it returns has a reason (ErrVersion, ErrTooLarge or
// ErrMalformed), and that the format is canonical: a frame it accepts
// re-encodes to the same bytes and decodes again to the same message, so
// decode(encode(m)) == m for every message the decoder can produce.
// The checked-in corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, m := range []core.Message{sampleMessage(), {Type: core.MsgHeartbeat, From: "1", To: "2"}} {
		b, err := appendFrame(nil, frameHeader{Seq: 5, FromBoot: 11, ToBoot: 12}, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, m, err := decodeFrame(b)
		if err != nil {
			if !errors.Is(err, errMalformed) && !errors.Is(err, errVersion) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		again, err := appendFrame(nil, h, m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v (%+v)", err, m)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("not canonical:\n  in %x\n out %x", b, again)
		}
		h2, m2, err := decodeFrame(again)
		if err != nil || h2 != h || !reflect.DeepEqual(m2, m) {
			t.Fatalf("round trip: %v\n got %+v %+v\nwant %+v %+v", err, h2, m2, h, m)
		}
	})
}

// FuzzRoundTrip builds messages from fuzzed fields: every message that
// encodes decodes back to itself.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(core.MsgElection), "a", "b", uint64(1<<32|7), int64(-3), "c", uint32(2), uint8(3), uint8(0x15), uint8(2), uint64(9))
	f.Fuzz(func(t *testing.T, typ uint8, from, to string, term uint64, rating int64, id string,
		number uint32, numbers, flags, listLen uint8, seq uint64) {
		m := core.Message{Type: core.MsgType(typ), From: from, To: to, Term: core.Term(term),
			Rating: rating, Coordinator: id, Initiator: from, Value: core.Rank{Rating: -rating, ID: id}, Seq: seq}
		for i, p := range msgNumbers(&m) {
			if numbers&(1<<i) != 0 {
				*p = number + uint32(i)
			}
		}
		for i, p := range msgFlags(&m) {
			*p = flags&(1<<i) != 0
		}
		for i := range int(listLen % 8) {
			m.List = append(m.List, core.Peer{ID: id, Rating: rating + int64(i), NonVoter: i%2 == 1})
		}
		h := frameHeader{Seq: seq, FromBoot: term, ToBoot: uint64(rating)}
		b, err := appendFrame(nil, h, m)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("encode error without a reason: %v", err)
			}
			return
		}
		gh, gm, err := decodeFrame(b)
		if err != nil || gh != h || !reflect.DeepEqual(gm, m) {
			t.Fatalf("round trip: %v\n got %+v %+v\nwant %+v %+v", err, gh, gm, h, m)
		}
	})
}
