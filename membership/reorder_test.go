package membership

import (
	"slices"
	"testing"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

func seqMsg(seq uint64) core.Message { return core.Message{Type: core.MsgElection, Phase: uint32(seq)} }

func phases(ms []core.Message) []uint32 {
	out := make([]uint32, len(ms))
	for i, m := range ms {
		out[i] = m.Phase
	}
	return out
}

// step is one arrival (seq > 0) or one expiry check (seq == 0) at time at.
type step struct {
	seq  uint64
	at   time.Duration
	want []uint32 // phases delivered by this step
}

func TestInLink(t *testing.T) {
	const hold = 100 * time.Millisecond
	tests := []struct {
		name          string
		steps         []step
		dup, held     uint64
		skipped, next uint64
	}{
		{name: "in order", next: 4, steps: []step{
			{1, 0, []uint32{1}}, {2, 0, []uint32{2}}, {3, 0, []uint32{3}}}},
		{name: "swapped pair", held: 1, next: 3, steps: []step{
			{2, 0, nil}, {1, 1, []uint32{1, 2}}}},
		{name: "duplicates", dup: 3, held: 1, next: 4, steps: []step{
			{1, 0, []uint32{1}}, {1, 0, nil}, {3, 0, nil}, {3, 0, nil}, {2, 0, []uint32{2, 3}}, {2, 0, nil}}},
		{name: "gap waits for the hold time", held: 2, next: 1, steps: []step{
			{3, 0, nil}, {2, 50 * time.Millisecond, nil}, {0, 99 * time.Millisecond, nil}}},
		{name: "gap skipped after hold", dup: 1, held: 2, skipped: 1, next: 4, steps: []step{
			{2, 0, nil}, {3, 10 * time.Millisecond, nil}, {0, hold, []uint32{2, 3}}, {1, hold, nil}}},
		{name: "second gap gets its own hold", held: 2, skipped: 2, next: 5, steps: []step{
			{2, 0, nil}, {4, 0, nil}, {0, hold, []uint32{2}}, {0, hold + 99*time.Millisecond, nil},
			{0, 2 * hold, []uint32{4}}}},
		{name: "late arrival after skip is a duplicate", dup: 1, held: 1, skipped: 1, next: 3, steps: []step{
			{2, 0, nil}, {0, hold, []uint32{2}}, {1, hold, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c counters
			l := newInLink(7, hold, &c)
			t0 := time.Unix(1000, 0)
			for i, s := range tt.steps {
				var got []core.Message
				if s.seq == 0 {
					got = l.expire(t0.Add(s.at), nil)
				} else {
					got = l.accept(s.seq, seqMsg(s.seq), t0.Add(s.at), nil)
				}
				if !slices.Equal(phases(got), s.want) {
					t.Fatalf("step %d (%+v): delivered %v, want %v", i, s, phases(got), s.want)
				}
			}
			st := c.snapshot()
			if st.Dropped[DropDuplicate] != tt.dup || st.Reordered != tt.held || st.GapsSkipped != tt.skipped || l.next != tt.next {
				t.Fatalf("dup %d held %d skipped %d next %d; want %d %d %d %d",
					st.Dropped[DropDuplicate], st.Reordered, st.GapsSkipped, l.next, tt.dup, tt.held, tt.skipped, tt.next)
			}
		})
	}
}

func TestInLinkOverflowSkipsAtOnce(t *testing.T) {
	var c counters
	l := newInLink(1, time.Hour, &c)
	now := time.Unix(0, 0)
	var got []core.Message
	for seq := uint64(2); seq <= maxHeld+2; seq++ {
		got = l.accept(seq, seqMsg(seq), now, got)
	}
	if len(got) != maxHeld+1 || got[0].Phase != 2 || c.snapshot().GapsSkipped != 1 {
		t.Fatalf("delivered %d (first %v), skipped %d; want %d from 2, 1 skipped",
			len(got), got[0].Phase, c.snapshot().GapsSkipped, maxHeld+1)
	}
	if len(l.held) != 0 || !l.deadline.IsZero() {
		t.Fatalf("link still holds %d, deadline %v", len(l.held), l.deadline)
	}
}
