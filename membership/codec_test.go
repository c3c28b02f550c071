package membership

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

func sampleMessage() core.Message {
	return core.Message{
		Type:        core.MsgCoordinator,
		From:        "node-a",
		To:          "node-b",
		Term:        core.MakeTerm(7, core.Tag("node-a")),
		Rating:      -42,
		Coordinator: "node-a",
		Initiator:   "node-c",
		List: []core.Peer{
			{ID: "node-c", Rating: 3},
			{ID: "node-a", Rating: -42, NonVoter: true},
		},
		Value:     core.Rank{Rating: 1 << 40, ID: "node-a"},
		Index:     9,
		Seq:       77,
		Released:  true,
		Confirmed: true,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	h := frameHeader{Seq: 300, FromBoot: 0xdeadbeefcafe, ToBoot: ^uint64(0)}
	msgs := []core.Message{
		sampleMessage(),
		{Type: core.MsgHeartbeat, From: "1", To: "2"},
		{Type: core.MsgHeartbeatAck, Rating: -1 << 63, Term: ^core.Term(0), Lease: 1<<32 - 1, Seq: ^uint64(0)},
		{Type: core.MsgPreVoteAck, From: "a", To: "b", Coordinator: "c", PromiseLeft: 12, Seq: 3},
		{Type: core.MsgElection, From: "a", To: "b", Initiator: "a", Phase: 3, Value: core.Rank{Rating: 5, ID: "a"}},
	}
	for _, m := range msgs {
		b, err := appendFrame([]byte("prefix"), h, m)
		if err != nil {
			t.Fatalf("encode %v: %v", m.Type, err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("AppendFrame lost dst")
		}
		gh, gm, err := decodeFrame(b[len("prefix"):])
		if err != nil {
			t.Fatalf("decode %v: %v", m.Type, err)
		}
		if gh != h || !reflect.DeepEqual(gm, m) {
			t.Fatalf("round trip:\n got %+v %+v\nwant %+v %+v", gh, gm, h, m)
		}
	}
}

func TestDecodeCopiesInput(t *testing.T) {
	b, err := encode(sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	m, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	if want := sampleMessage(); !reflect.DeepEqual(m, want) {
		t.Fatalf("decoded message changed with its buffer: %+v", m)
	}
}

func TestEncodeRejects(t *testing.T) {
	long := strings.Repeat("x", MaxStringLen+1)
	many := make([]core.Peer, MaxListLen+1)
	big := make([]core.Peer, MaxListLen)
	for i := range big {
		big[i].ID = strings.Repeat("y", MaxStringLen)
	}
	tests := []struct {
		name string
		m    core.Message
		want error
	}{
		{"zero type", core.Message{}, ErrInvalid},
		{"unknown type", core.Message{Type: core.MsgType(core.NumMsgTypes)}, ErrInvalid},
		{"long from", core.Message{Type: core.MsgAck, From: long}, ErrInvalid},
		{"long list id", core.Message{Type: core.MsgAck, List: []core.Peer{{ID: long}}}, ErrInvalid},
		{"long list", core.Message{Type: core.MsgAck, List: many}, ErrInvalid},
		{"over frame size", core.Message{Type: core.MsgAck, List: big}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{1, 2}
			got, err := appendFrame(dst, frameHeader{}, tt.m)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !bytes.Equal(got, dst) {
				t.Fatalf("dst changed on error: %v", got)
			}
		})
	}
}

// frame builds a raw frame from parts for the bad-input table.
func frame(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func TestDecodeRejects(t *testing.T) {
	good, _ := encode(core.Message{Type: core.MsgAck, From: "a", To: "b"})
	magic := []byte{frameMagic, frameVersion}
	boots := make([]byte, 16)
	hdr := frame(magic, uv(0), boots)      // seq 0, boots 0
	ack := []byte{byte(core.MsgAck), 0, 0} // type, flags, numbers
	tail := []byte{0, 0, 0, 0, 0, 0, 0, 0} // term .. list count, all zero
	ft := tail[:6]                         // term .. value.id
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, errMalformed},
		{"one byte", []byte{frameMagic}, errMalformed},
		{"bad magic", append([]byte{0x00}, good[1:]...), errMalformed},
		{"version 0", append([]byte{frameMagic, 0}, good[2:]...), errVersion},
		{"version 1", append([]byte{frameMagic, 1}, good[2:]...), errVersion},
		{"version 2", append([]byte{frameMagic, 2}, good[2:]...), errVersion},
		{"version 4", append([]byte{frameMagic, 4}, good[2:]...), errVersion},
		{"header only", hdr, errMalformed},
		{"type 0", frame(hdr, []byte{0, 0, 0}, uv(0), uv(0), tail), errMalformed},
		{"unknown type", frame(hdr, []byte{byte(core.NumMsgTypes), 0, 0}, uv(0), uv(0), tail), errMalformed},
		{"unknown flag", frame(hdr, []byte{byte(core.MsgAck), 1 << 6, 0}, uv(0), uv(0), tail), errMalformed},
		{"truncated", good[:len(good)-1], errMalformed},
		{"trailing byte", append(append([]byte{}, good...), 0), errMalformed},
		{"oversized frame", make([]byte, MaxFrameSize+1), ErrTooLarge},
		{"oversized message", frame(hdr, make([]byte, maxBodySize+1)), ErrTooLarge},
		{"non-minimal seq", frame(magic, []byte{0x80, 0x00}, boots, ack, uv(0), uv(0), tail), errMalformed},
		{"varint overflow", frame(magic, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}, boots, ack, tail, tail), errMalformed},
		{"boots truncated", frame(magic, uv(0), boots[:9]), errMalformed},
		{"string past end", frame(hdr, ack, uv(200), []byte("ab")), errMalformed},
		{"string over cap", frame(hdr, ack, uv(MaxStringLen+1), make([]byte, MaxStringLen+1), uv(0), tail), errMalformed},
		{"list count past end", frame(hdr, ack, uv(0), uv(0), ft, uv(0), uv(1000)), errMalformed},
		{"list over cap", frame(hdr, ack, uv(0), uv(0), ft, uv(0), uv(MaxListLen+1), make([]byte, 3*(MaxListLen+1))), errMalformed},
		{"bad peer flag", frame(hdr, ack, uv(0), uv(0), ft, uv(0), uv(1), []byte{0, 0, 2}), errMalformed},
		{"lap over 32 bits", frame(hdr, []byte{byte(core.MsgAck), 0, 1}, uv(0), uv(0), ft, uv(0), uv(1<<32), uv(0)), errMalformed},
		{"valid control", frame(hdr, ack, uv(0), uv(0), tail), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := decodeFrame(tt.b)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err != nil && !reflect.DeepEqual(m, core.Message{}) {
				t.Fatalf("message returned with error: %+v", m)
			}
		})
	}
}

// TestDecodeRejectsEveryTruncation cuts a full frame at every length.
func TestDecodeRejectsEveryTruncation(t *testing.T) {
	b, err := appendFrame(nil, frameHeader{Seq: 1 << 20, FromBoot: 1, ToBoot: 2}, sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(b) {
		if _, _, err := decodeFrame(b[:n]); !errors.Is(err, errMalformed) {
			t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrMalformed", n, len(b), err)
		}
	}
}

func TestHeartbeatFitsDatagram(t *testing.T) {
	id := strings.Repeat("n", 64)
	m := core.Message{Type: core.MsgHeartbeat, From: id, To: id, Coordinator: id,
		Term: ^core.Term(0), Rating: -1 << 63, Confirmed: true}
	b, err := appendFrame(nil, frameHeader{FromBoot: ^uint64(0), ToBoot: ^uint64(0)}, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxDatagram {
		t.Fatalf("heartbeat with 64-byte IDs is %d bytes, over the %d datagram budget", len(b), maxDatagram)
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	m := sampleMessage()
	h := frameHeader{Seq: 1000, FromBoot: 1, ToBoot: 2}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendFrame(buf[:0], h, m)
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	buf, _ := appendFrame(nil, frameHeader{Seq: 1000, FromBoot: 1, ToBoot: 2}, sampleMessage())
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, _, err := decodeFrame(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// encode is the wire form of m with a zero header.
func encode(m core.Message) ([]byte, error) { return appendFrame(nil, frameHeader{}, m) }

// decode is the message of frame b, its header ignored.
func decode(b []byte) (core.Message, error) {
	_, m, err := decodeFrame(b)
	return m, err
}
