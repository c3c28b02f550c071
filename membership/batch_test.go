package membership

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

// heartbeats is a batch of one heartbeat round of k names from a
// coordinator "node-07" to "node-12", as group.Ready hands it over.
func heartbeats(k int) group.Batch {
	b := group.Batch{From: "node-07", To: "node-12"}
	for i := range k {
		b.Pairs = append(b.Pairs, group.Pair{Name: "job-" + strconv.Itoa(i),
			Msg: core.Message{Type: core.MsgHeartbeat, From: b.From, To: b.To, Coordinator: b.From,
				Term: core.MakeTerm(3, core.Tag(b.From)), Rating: 1<<44 + 123456789, Seq: uint64(1000 + i), Every: 15}})
	}
	return b
}

func sampleBatch() group.Batch {
	b := heartbeats(3)
	m := sampleMessage()
	m.From, m.To = b.From, b.To
	b.Pairs = append(b.Pairs, group.Pair{Name: group.DefaultName, Msg: m},
		group.Pair{Name: "job-0", Msg: core.Message{Type: core.MsgHeartbeatAck, From: b.From, To: b.To, Seq: 9, Lease: 40}})
	return b
}

// A batch encodes and decodes back to itself, header and all, and its
// encoding is the same each time.
func TestBatchRoundTrip(t *testing.T) {
	h := frameHeader{Seq: 7, FromBoot: 1 << 40, ToBoot: 99}
	for _, b := range []group.Batch{sampleBatch(), heartbeats(1), heartbeats(200)} {
		enc, err := appendBatch([]byte("prefix"), h, b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(enc, []byte("prefix")) {
			t.Fatalf("dst not kept")
		}
		gh, gb, err := decodeBatch(enc[len("prefix"):])
		if err != nil {
			t.Fatal(err)
		}
		if gh != h || !reflect.DeepEqual(gb, b) {
			t.Fatalf("round trip:\n got %+v %+v\nwant %+v %+v", gh, gb, h, b)
		}
		again, _ := appendBatch(nil, gh, gb)
		if !bytes.Equal(again, enc[len("prefix"):]) {
			t.Fatalf("not canonical")
		}
	}
}

// The size of a heartbeat round of k names in one batch frame, and how
// many fit in a 1,400-byte datagram.
func TestBatchSize(t *testing.T) {
	for _, k := range []int{1, 24, 50} {
		enc, err := appendBatch(nil, frameHeader{}, heartbeats(k))
		if err != nil {
			t.Fatal(err)
		}
		_, fit, err := appendBatchUpTo(nil, frameHeader{}, heartbeats(k), 1400)
		if err != nil {
			t.Fatal(err)
		}
		one, _ := appendFrame(nil, frameHeader{}, heartbeats(1).Pairs[0].Msg)
		t.Logf("%d heartbeats: %d bytes (%.1f a pair; one heartbeat alone in a frame: %d bytes); %d fit in 1,400 bytes",
			k, len(enc), float64(len(enc))/float64(k), len(one), fit)
	}
}

// appendBatchUpTo takes the pairs that fit, and the rest go in further
// frames: the frames' pairs, in order, are the batch's.
func TestBatchSplit(t *testing.T) {
	b := heartbeats(300)
	var got []group.Pair
	rest := b
	for frames := 0; len(rest.Pairs) > 0; frames++ {
		enc, n, err := appendBatchUpTo(nil, frameHeader{}, rest, 1400)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > 1400 || n == 0 {
			t.Fatalf("frame %d: %d bytes, %d pairs", frames, len(enc), n)
		}
		_, part, err := decodeBatch(enc)
		if err != nil || len(part.Pairs) != n {
			t.Fatalf("frame %d: %v, %d pairs of %d", frames, err, len(part.Pairs), n)
		}
		got = append(got, part.Pairs...)
		rest.Pairs = rest.Pairs[n:]
	}
	if !reflect.DeepEqual(got, b.Pairs) {
		t.Fatalf("the frames' pairs differ from the batch's")
	}
	if _, _, err := appendBatchUpTo(nil, frameHeader{}, b, 20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a limit no pair fits in: %v", err)
	}
}

// A batch the format cannot carry is refused with ErrInvalid or
// ErrTooLarge, naming the pair, the field and the value.
func TestBatchEncodeErrors(t *testing.T) {
	mod := func(f func(*group.Batch)) group.Batch {
		b := sampleBatch()
		f(&b)
		return b
	}
	for _, tc := range []struct {
		what string
		b    group.Batch
		is   error
		want string
	}{
		{"empty", group.Batch{From: "a", To: "b"}, ErrInvalid, "no pairs"},
		{"name", mod(func(b *group.Batch) { b.Pairs[1].Name = "" }), ErrInvalid, `batch pair 1: group: name ""`},
		{"long name", mod(func(b *group.Batch) { b.Pairs[2].Name = strings.Repeat("n", group.MaxNameLen+1) }), ErrInvalid, "batch pair 2"},
		{"from", mod(func(b *group.Batch) { b.Pairs[0].Msg.From = "x" }), ErrInvalid, `Msg.From = "x", want the batch's From "node-07"`},
		{"to", mod(func(b *group.Batch) { b.Pairs[3].Msg.To = "y" }), ErrInvalid, `Msg.To = "y"`},
		{"type", mod(func(b *group.Batch) { b.Pairs[0].Msg.Type = 0 }), ErrInvalid, "batch pair 0"},
		{"too many", heartbeats(MaxBatchPairs + 1), ErrInvalid, "8193 pairs"},
		{"too large", heartbeats(MaxBatchPairs), ErrTooLarge, "fit in 65536 bytes"},
	} {
		out, err := appendBatch([]byte{1}, frameHeader{}, tc.b)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v saying %q", tc.what, err, tc.is, tc.want)
		}
		if !bytes.Equal(out, []byte{1}) {
			t.Errorf("%s: dst changed on error", tc.what)
		}
	}
}

// Malformed batch frames are refused with a reason that says where.
func TestBatchDecodeErrors(t *testing.T) {
	good, err := appendBatch(nil, frameHeader{Seq: 1}, sampleBatch())
	if err != nil {
		t.Fatal(err)
	}
	one, _ := appendBatch(nil, frameHeader{}, heartbeats(1))
	nameAt := bytes.Index(one, []byte("job-0"))
	for _, tc := range []struct {
		what string
		b    []byte
		is   error
		want string
	}{
		{"magic", append([]byte{frameMagic}, good[1:]...), errMalformed, "bad batch magic"},
		{"version", append([]byte{batchMagic, 9}, good[2:]...), errVersion, "batch version 9"},
		{"truncated", good[:len(good)-1], errMalformed, ""},
		{"trailing", append(append([]byte(nil), good...), 0), errMalformed, "1 trailing bytes"},
		{"control in name", replaceAt(one, nameAt+3, '\n'), errMalformed, "batch pair 0: group: name \"job\\n0\""},
		{"empty name", append(append(append([]byte(nil), one[:nameAt-1]...), 0), one[nameAt+5:]...), errMalformed, "batch pair 0"},
		{"zero pairs", append(append([]byte(nil), one[:nameAt-2]...), 0), errMalformed, "batch of 0 pairs"},
		{"huge", make([]byte, MaxFrameSize+1), ErrTooLarge, "max 65536"},
	} {
		_, _, err := decodeBatch(tc.b)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v saying %q", tc.what, err, tc.is, tc.want)
		}
	}
}

func replaceAt(b []byte, i int, c byte) []byte {
	out := append([]byte(nil), b...)
	out[i] = c
	return out
}

// FuzzDecodeBatch: decodeBatch never panics, every error has a reason,
// and a batch it accepts re-encodes to the same bytes (the format is
// canonical) and decodes again to the same batch.
func FuzzDecodeBatch(f *testing.F) {
	for _, b := range []group.Batch{sampleBatch(), heartbeats(1), heartbeats(30)} {
		enc, err := appendBatch(nil, frameHeader{Seq: 3, FromBoot: 1, ToBoot: 2}, b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, batch, err := decodeBatch(b)
		if err != nil {
			if !errors.Is(err, errMalformed) && !errors.Is(err, errVersion) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		again, err := appendBatch(nil, h, batch)
		if err != nil {
			t.Fatalf("decoded batch does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("not canonical:\n  in %x\n out %x", b, again)
		}
		h2, b2, err := decodeBatch(again)
		if err != nil || h2 != h || !reflect.DeepEqual(b2, batch) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzBatchRoundTrip builds batches from fuzzed fields: every batch that
// encodes decodes back to itself.
func FuzzBatchRoundTrip(f *testing.F) {
	f.Add("job-1", "job-2", uint8(core.MsgHeartbeat), "a", "b", uint64(1<<32|7), int64(-3), uint64(4), uint8(2))
	f.Fuzz(func(t *testing.T, n1, n2 string, typ uint8, from, to string, term uint64, rating int64, seq uint64, k uint8) {
		b := group.Batch{From: from, To: to}
		for i := range int(k%6) + 1 {
			name := n1
			if i%2 == 1 {
				name = n2
			}
			b.Pairs = append(b.Pairs, group.Pair{Name: name, Msg: core.Message{Type: core.MsgType(typ), From: from, To: to,
				Term: core.Term(term), Rating: rating + int64(i), Coordinator: from, Seq: seq, Confirmed: i%3 == 0}})
		}
		enc, err := appendBatch(nil, frameHeader{Seq: seq}, b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("encode error without a reason: %v", err)
			}
			return
		}
		_, got, err := decodeBatch(enc)
		if err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, b)
		}
	})
}

// splitQuick keeps each part's order, and hands back a batch that is all
// one kind without copying it.
func TestSplitQuick(t *testing.T) {
	hb := func(name string) group.Pair {
		return group.Pair{Name: name, Msg: core.Message{Type: core.MsgHeartbeat}}
	}
	el := func(name string, unordered bool) group.Pair {
		return group.Pair{Name: name, Msg: core.Message{Type: core.MsgElection, Unordered: unordered}}
	}
	names := func(ps []group.Pair) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Name)
		}
		return strings.Join(s, ",")
	}
	all := []group.Pair{hb("a"), hb("b"), el("c", true)}
	if q, r := splitQuick(all); &q[0] != &all[0] || len(q) != 3 || r != nil {
		t.Errorf("all quick: %q / %q, copied or split", names(q), names(r))
	}
	none := []group.Pair{el("a", false), el("b", false)}
	if q, r := splitQuick(none); q != nil || &r[0] != &none[0] {
		t.Errorf("none quick: %q / %q, copied or split", names(q), names(r))
	}
	mixed := []group.Pair{el("a", false), hb("b"), el("c", false), el("d", true)}
	if q, r := splitQuick(mixed); names(q) != "b,d" || names(r) != "a,c" {
		t.Errorf("mixed: %q / %q; want b,d / a,c", names(q), names(r))
	}
}
