package membership

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election/core"
)

// rawHeartbeat is the frame of a heartbeat whose strings and term are
// empty and whose seq is 9, from parts: its flags and numbers bytes, and
// the numbers' encodings.
func rawHeartbeat(flags, nums byte, numbers ...[]byte) []byte {
	parts := [][]byte{{frameMagic, frameVersion}, uv(0), make([]byte, 16),
		{byte(core.MsgHeartbeat), flags, nums}, uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(9)}
	return frame(append(append(parts, numbers...), uv(0))...)
}

// Each 32-bit field of core.Message travels behind its bit of the numbers
// byte, in bit order, and only when it is not 0: a message that leaves
// them all 0 takes one byte for them.
func TestCodecNumbers(t *testing.T) {
	hb := core.Message{Type: core.MsgHeartbeat, Seq: 9}
	plain := rawHeartbeat(0, 0)
	if b, err := encode(hb); err != nil || !bytes.Equal(b, plain) {
		t.Fatalf("no numbers:\n got %x %v\nwant %x", b, err, plain)
	}
	for i, name := range numberNames {
		for _, v := range []uint32{1, 1000, 1<<32 - 1} {
			m := hb
			*msgNumbers(&m)[i] = v
			b, err := encode(m)
			if err != nil {
				t.Fatal(err)
			}
			if want := rawHeartbeat(0, 1<<i, uv(uint64(v))); !bytes.Equal(b, want) {
				t.Fatalf("%s %d:\n got %x\nwant %x", name, v, b, want)
			}
			if got, err := decode(b); err != nil || *msgNumbers(&got)[i] != v || got.Seq != 9 {
				t.Fatalf("%s %d: decoded %+v, %v", name, v, got, err)
			}
		}
	}
	all := hb
	for i, p := range msgNumbers(&all) {
		*p = uint32(i + 1)
	}
	b, err := encode(all)
	if err != nil {
		t.Fatal(err)
	}
	if want := rawHeartbeat(0, 0xff, uv(1), uv(2), uv(3), uv(4), uv(5), uv(6), uv(7), uv(8)); !bytes.Equal(b, want) {
		t.Fatalf("every number:\n got %x\nwant %x", b, want)
	}
	if got, err := decode(b); err != nil || !reflect.DeepEqual(got, all) {
		t.Fatalf("every number: decoded %+v, %v", got, err)
	}
}

func TestCodecNumbersRejected(t *testing.T) {
	for i, name := range numberNames {
		bit := byte(1) << i
		for what, b := range map[string][]byte{
			"0 behind its bit":  rawHeartbeat(0, bit, uv(0)),
			"over 32 bits":      rawHeartbeat(0, bit, uv(1<<32)),
			"without its bit":   rawHeartbeat(0, 0, uv(5)),
			"its bit, no value": rawHeartbeat(0, bit),
		} {
			if _, err := decode(b); !errors.Is(err, errMalformed) {
				t.Errorf("%s %s: err = %v, want errMalformed", name, what, err)
			}
		}
	}
}

// Each flag of core.Message travels as its bit of the flags byte; the
// other bits are refused.
func TestCodecFlags(t *testing.T) {
	hb := core.Message{Type: core.MsgHeartbeat, Seq: 9}
	flags := msgFlags(&hb)
	for i := range flags {
		m := hb
		*msgFlags(&m)[i] = true
		b, err := encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if want := rawHeartbeat(1<<i, 0); !bytes.Equal(b, want) {
			t.Fatalf("flag %d:\n got %x\nwant %x", i, b, want)
		}
		if got, err := decode(b); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("flag %d: decoded %+v, %v", i, got, err)
		}
	}
	for bit := len(flags); bit < 8; bit++ {
		t.Run(fmt.Sprint("bit ", bit), func(t *testing.T) {
			if _, err := decode(rawHeartbeat(1<<bit, 0)); !errors.Is(err, errMalformed) {
				t.Errorf("err = %v, want errMalformed", err)
			}
		})
	}
}

// BestEffort and Unordered are hints to the sender's transport: they do
// not travel.
func TestCodecBestEffortStaysHome(t *testing.T) {
	m := core.Message{Type: core.MsgCoordinator, Coordinator: "1", BestEffort: true, Unordered: true}
	b, err := encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decode(b); err != nil || got.BestEffort || got.Unordered {
		t.Fatalf("decoded %+v, %v; want BestEffort and Unordered false", got, err)
	}
}

// A message marked Unordered goes at once as one unnumbered datagram, as
// a heartbeat does, taking no place in the link's queue nor a sequence
// number; one marked BestEffort only is queued, numbered.
func TestSendUnorderedIsDatagram(t *testing.T) {
	d, l := heldLink(t, false)
	s := d.out
	var sent []frameHeader
	s.udp = func(_ *memberlist.Node, frame []byte) error {
		h, _, err := decodeFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, h)
		return nil
	}
	hop := core.Message{Type: core.MsgElection, From: "self", To: "b", Term: 9, Coordinator: "b", Unordered: true}
	ack := core.Message{Type: core.MsgAck, From: "self", To: "b", Term: 9, Unordered: true}
	announce := core.Message{Type: core.MsgCoordinator, From: "self", To: "b", Term: 9, Coordinator: "self", BestEffort: true}
	for _, m := range []core.Message{hop, ack, announce} {
		if err := s.send(m); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent) != 2 || sent[0].Seq != 0 || sent[1].Seq != 0 {
		t.Fatalf("datagrams sent at once: %+v; want the hop and the Ack, unnumbered", sent)
	}
	if len(l.queue) != 1 || !l.queue[0].ordered || !l.queue[0].bestEffort {
		t.Fatalf("queue %+v; want the announcement alone, numbered, by UDP", l.queue)
	}
}
