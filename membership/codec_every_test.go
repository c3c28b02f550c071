package membership

import (
	"bytes"
	"errors"
	"testing"

	"github.com/coordelect/coordelect/election/core"
)

// Message.Every (the heartbeat period of the fan-out) travels behind flag
// bit 2 within version 2: a frame without it is byte for byte what this
// version encoded before the field existed, so small clusters, which never
// set it, talk to older builds as before.
func TestCodecEvery(t *testing.T) {
	hb := core.Message{Type: core.MsgHeartbeat, From: "1", To: "2", Term: core.MakeTerm(3, core.Tag("1")), Seq: 9}
	old := frame([]byte{frameMagic, frameVersion}, uv(0), make([]byte, 16), // header
		[]byte{byte(core.MsgHeartbeat), 0}, uv(1), []byte("1"), uv(1), []byte("2"), // type, flags, from, to
		uv(uint64(hb.Term)), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(9), uv(0)) // term .. seq, list
	b, err := encode(hb)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, old) {
		t.Fatalf("Every = 0 changed the encoding:\n got %x\nwant %x", b, old)
	}
	for _, every := range []uint32{1, 1000, 1<<32 - 1} {
		m := hb
		m.Every = every
		b, err := encode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(b)
		if err != nil || got.Every != every || got.Seq != 9 {
			t.Fatalf("Every %d: decoded %+v, %v", every, got, err)
		}
	}
	body := func(flags byte, every []byte) []byte {
		return frame([]byte{frameMagic, frameVersion}, uv(0), make([]byte, 16),
			[]byte{byte(core.MsgHeartbeat), flags}, uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0),
			uv(9), every, uv(0))
	}
	for name, b := range map[string][]byte{
		"every 0 behind its flag": body(flagEvery, uv(0)),
		"every over 32 bits":      body(flagEvery, uv(1<<32)),
		"every without its flag":  body(0, uv(5)),
	} {
		if _, err := decode(b); !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v, want errMalformed", name, err)
		}
	}
	if m, err := decode(body(flagEvery, uv(5))); err != nil || m.Every != 5 {
		t.Errorf("every 5: %+v, %v", m, err)
	}
}

// Message.Lease (a stretched quorum lease) travels behind flag bit 3 the
// same way, after Every: a heartbeat or ack that asks for or promises the
// configured lease is byte for byte what it was before the field existed.
func TestCodecLease(t *testing.T) {
	hb := core.Message{Type: core.MsgHeartbeat, From: "1", To: "2", Term: core.MakeTerm(3, core.Tag("1")), Seq: 9}
	plain, err := encode(hb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ every, lease uint32 }{{0, 1}, {0, 120}, {7, 120}, {1<<32 - 1, 1<<32 - 1}} {
		m := hb
		m.Every, m.Lease = c.every, c.lease
		b, err := encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, plain) {
			t.Fatalf("Lease %d left the encoding unchanged", c.lease)
		}
		got, err := decode(b)
		if err != nil || got.Every != c.every || got.Lease != c.lease || got.Seq != 9 {
			t.Fatalf("Every %d Lease %d: decoded %+v, %v", c.every, c.lease, got, err)
		}
	}
	body := func(flags byte, fields ...[]byte) []byte {
		parts := [][]byte{{frameMagic, frameVersion}, uv(0), make([]byte, 16),
			{byte(core.MsgHeartbeat), flags}, uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(9)}
		return frame(append(append(parts, fields...), uv(0))...)
	}
	for name, b := range map[string][]byte{
		"lease 0 behind its flag":    body(flagLease, uv(0)),
		"lease over 32 bits":         body(flagLease, uv(1<<32)),
		"lease without its flag":     body(0, uv(5)),
		"lease before every":         body(flagEvery|flagLease, uv(5)),
		"an unknown flag after them": body(1<<4, uv(5)),
	} {
		if _, err := decode(b); !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v, want errMalformed", name, err)
		}
	}
	if m, err := decode(body(flagEvery|flagLease, uv(5), uv(60))); err != nil || m.Every != 5 || m.Lease != 60 {
		t.Errorf("every 5, lease 60: %+v, %v", m, err)
	}
}
