package membership

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
)

func sampleCandidacy() election.Candidacy {
	return election.Candidacy{From: "node-07", To: "node-12", Full: true, Ask: true, Base: 0, Version: 41,
		Entries: []election.CandidacyEntry{{Name: "default", Stand: true}, {Name: "job-1"}, {Name: "job-2", Gone: true}}}
}

// A candidacy encodes and decodes back to itself; its encoding is
// canonical.
func TestCandidacyRoundTrip(t *testing.T) {
	h := frameHeader{Seq: 3, FromBoot: 7, ToBoot: 9}
	for _, c := range []election.Candidacy{sampleCandidacy(), {From: "a", To: "b", Ask: true, Base: 5}} {
		enc, err := appendCandidacy(nil, h, c)
		if err != nil {
			t.Fatal(err)
		}
		gh, gc, err := decodeCandidacy(enc)
		if err != nil {
			t.Fatal(err)
		}
		if gh != h || !reflect.DeepEqual(gc, c) {
			t.Fatalf("round trip:\n got %+v %+v\nwant %+v %+v", gh, gc, h, c)
		}
		again, _ := appendCandidacy(nil, gh, gc)
		if !bytes.Equal(again, enc) {
			t.Fatal("not canonical")
		}
	}
}

// Malformed candidacies are refused with the reason.
func TestCandidacyMalformed(t *testing.T) {
	enc, err := appendCandidacy(nil, frameHeader{Seq: 1}, sampleCandidacy())
	if err != nil {
		t.Fatal(err)
	}
	flags := 2 + 1 + 16 + 1 + len("node-07") + 1 + len("node-12")
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", enc[:len(enc)-1], "truncated"},
		{"trailing", append(bytes.Clone(enc), 0), "trailing"},
		{"version", append([]byte{candidacyMagic, 9}, enc[2:]...), "version 9"},
		{"flags", func() []byte { b := bytes.Clone(enc); b[flags] |= 0x80; return b }(), "flag bits"},
		{"state", func() []byte { b := bytes.Clone(enc); b[len(b)-1] = 7; return b }(), "state 7"},
	} {
		if _, _, err := decodeCandidacy(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	bad := sampleCandidacy()
	bad.Entries[1].Name = ""
	if _, err := appendCandidacy(nil, frameHeader{}, bad); err == nil {
		t.Error("an empty name encoded")
	}
}

func FuzzDecodeCandidacy(f *testing.F) {
	enc, _ := appendCandidacy(nil, frameHeader{Seq: 1, FromBoot: 2, ToBoot: 3}, sampleCandidacy())
	f.Add(enc)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, c, err := decodeCandidacy(b)
		if err != nil {
			return
		}
		again, err := appendCandidacy(nil, h, c)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v, re-encoded %x (%v), want %x", c, again, err, b)
		}
	})
}

// SendBatch splits a batch: its heartbeats and acks into datagrams of at
// most maxDatagram bytes, unnumbered; the other pairs into one numbered
// frame of the batch stream, by TCP, numbered apart from the frames.
func TestSendBatchSplits(t *testing.T) {
	d, l := heldLink(t, true)
	s := d.out
	var sent []outItem // the datagrams, sent at once, not queued
	s.udp = func(_ *memberlist.Node, frame []byte) error {
		body := frame[len(appendHeaderAs(nil, batchMagic, batchVersion, frameHeader{FromBoot: s.selfBoot, ToBoot: 5})):]
		sent = append(sent, outItem{body: append([]byte(nil), body...), kind: frameBatch, bestEffort: true})
		return nil
	}
	b := heartbeats(60)
	b.From, b.To = "self", "b"
	for i := range b.Pairs {
		b.Pairs[i].Msg.From, b.Pairs[i].Msg.To = "self", "b"
	}
	b.Pairs = append(b.Pairs, group.Pair{Name: "x", Msg: core.Message{Type: core.MsgElection, From: "self", To: "b", Term: 9}})
	if err := s.sendBatch(b); err != nil {
		t.Fatal(err)
	}
	var datagrams, frames, pairs int
	for _, it := range append(sent, l.queue...) {
		if it.kind != frameBatch {
			t.Fatalf("item of kind %d", it.kind)
		}
		_, body, err := decodeBatchBody(it.body)
		if err != nil {
			t.Fatal(err)
		}
		pairs += len(body.Pairs)
		switch {
		case it.bestEffort && !it.ordered:
			datagrams++
			if len(it.body)+maxHeaderSize > maxDatagram {
				t.Errorf("a datagram of %d bytes", len(it.body)+maxHeaderSize)
			}
		case !it.bestEffort && it.ordered:
			frames++
		default:
			t.Errorf("item bestEffort %v ordered %v", it.bestEffort, it.ordered)
		}
	}
	if datagrams < 2 || frames != 1 || pairs != 61 {
		t.Errorf("%d datagrams, %d frames, %d pairs; want several, 1, 61", datagrams, frames, pairs)
	}
	// A member that does not announce named elections takes none.
	d.handle([]inboxItem{{kind: itemJoin, node: nodeInfo{Name: "old", Meta: meta{Rating: 1, Boot: 6}.encode()}}}, time.Unix(0, 0))
	b.To = "old"
	for i := range b.Pairs {
		b.Pairs[i].Msg.To = "old"
	}
	if err := s.sendBatch(b); err == nil || !strings.Contains(err.Error(), "runs no named elections") {
		t.Errorf("a batch to an older member: %v", err)
	}
	if err := s.sendCandidacy(election.Candidacy{From: "self", To: "old"}); err == nil {
		t.Error("a candidacy to an older member was queued")
	}
}

// decodeBatchBody decodes what appendBatchBody wrote, behind a header.
func decodeBatchBody(body []byte) (frameHeader, group.Batch, error) {
	return decodeBatch(append(appendHeaderAs(nil, batchMagic, batchVersion, frameHeader{}), body...))
}

// The dispatcher delivers batch and candidacy frames as events, the
// numbered ones in the order of the sender's batch stream, apart from its
// frames; a PeerUp says whether the member runs named elections.
func TestDispatcherBatchStream(t *testing.T) {
	d := newTestDispatcher(100)
	now := time.Unix(0, 0)
	d.handle([]inboxItem{{kind: itemJoin, node: nodeInfo{Name: "a", Meta: meta{Rating: 1, Boot: 5}.encode(), Named: true}}}, now)
	batch := func(seq uint64, term core.Term) inboxItem {
		b := group.Batch{From: "a", To: "self", Pairs: []group.Pair{{Name: "x",
			Msg: core.Message{Type: core.MsgElection, From: "a", To: "self", Term: term}}}}
		enc, err := appendBatch(nil, frameHeader{Seq: seq, FromBoot: 5, ToBoot: selfBoot}, b)
		if err != nil {
			t.Fatal(err)
		}
		return inboxItem{kind: itemMessage, msg: enc}
	}
	cand, err := appendCandidacy(nil, frameHeader{Seq: 2, FromBoot: 5, ToBoot: selfBoot},
		election.Candidacy{From: "a", To: "self", Full: true, Version: 1, Entries: []election.CandidacyEntry{{Name: "x", Stand: true}}})
	if err != nil {
		t.Fatal(err)
	}
	frame := msgItem(t, frameHeader{Seq: 1, FromBoot: 5, ToBoot: selfBoot},
		core.Message{Type: core.MsgElection, From: "a", To: "self", Phase: 1})
	// 3 before 2 before 1 on the batch stream; the frame numbered 1 is
	// of the other stream and goes at once.
	d.handle([]inboxItem{batch(3, 7), {kind: itemMessage, msg: cand}, frame, batch(1, 5)}, now)
	var got []string
	for _, ev := range d.pending {
		switch ev.Kind {
		case election.EventPeerUp:
			got = append(got, "up named="+strconv.FormatBool(ev.Named))
		case election.EventMessage:
			got = append(got, "message")
		case election.EventBatch:
			got = append(got, "batch "+ev.Batch.Pairs[0].Name+"@"+strconv.Itoa(int(ev.Batch.Pairs[0].Msg.Term)))
		case election.EventCandidacy:
			got = append(got, "candidacy v"+strconv.Itoa(int(ev.Candidacy.Version)))
		}
	}
	want := []string{"up named=true", "message", "batch x@5", "candidacy v1", "batch x@7"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// Numbered batch frames queued for a link whose goroutine is busy merge
// into one frame: the pairs of both, in order.
func TestSendBatchMerges(t *testing.T) {
	d, l := heldLink(t, true)
	s := d.out
	election := func(name string, term core.Term) group.Batch {
		return group.Batch{From: "self", To: "b", Pairs: []group.Pair{{Name: name,
			Msg: core.Message{Type: core.MsgElection, From: "self", To: "b", Term: term}}}}
	}
	for i := range 300 {
		if err := s.sendBatch(election("job-"+strconv.Itoa(i), core.Term(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.queue) != 1 {
		t.Fatalf("%d frames queued, want 1", len(l.queue))
	}
	_, b, err := decodeBatchBody(l.queue[0].body)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Pairs) != 300 || b.Pairs[0].Name != "job-0" || b.Pairs[299].Msg.Term != 300 {
		t.Fatalf("merged frame: %d pairs, first %q, last term %d", len(b.Pairs), b.Pairs[0].Name, b.Pairs[len(b.Pairs)-1].Msg.Term)
	}
}
