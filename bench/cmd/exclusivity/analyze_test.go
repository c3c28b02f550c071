package main

import "testing"

// fakeBench is a finished run of two members, one incarnation each, whose
// event logs are given.
func fakeBench(quorum int, events ...event) *bench {
	c := &cluster{
		members: []*member{{name: "m1"}, {name: "m2"}},
		incs:    []*incarnation{{member: 0, exitT: 10_000}, {member: 1, exitT: 10_000}},
		events:  events,
	}
	return &bench{o: &options{quorum: quorum}, c: c, times: map[string][]float64{}}
}

func TestOverlapWithAndWithoutLease(t *testing.T) {
	evs := []event{
		// m1 leads term 1 from 100; its lease ends at 500, its step-down is
		// logged at 900 (it was paused in between).
		{who: 0, Ev: "claim", OK: true, Term: 1, T0: 100, T: 110},
		{who: 0, Ev: "lead", Term: 1, T: 120, LeaseEnd: 400},
		{who: 0, Ev: "lease", Term: 1, T: 300, LeaseEnd: 500},
		{who: 0, Ev: "stop", Term: 1, T: 900},
		// m2 leads term 2 from 600.
		{who: 1, Ev: "claim", OK: true, Term: 2, T0: 600, T: 610},
		{who: 1, Ev: "lead", Term: 2, T: 620, LeaseEnd: 2000},
	}
	if o := fakeBench(5, evs...).overlaps(fakeBench(5, evs...).intervals()); o.Pairs != 0 {
		t.Errorf("with leases: %+v, want no overlap (m1's lease ended at 500)", o)
	}
	b := fakeBench(0, evs...)
	o := b.overlaps(b.intervals())
	if o.Pairs != 1 || o.MaxMS != ms(300) || o.Worst.A != "m1" || o.Worst.B != "m2" {
		t.Errorf("without leases: %+v, want one overlap of 300 ns between m1 and m2", o)
	}
	// The context's end, logged before "stop", bounds the interval.
	b = fakeBench(0, append(evs, event{who: 0, Ev: "end", Term: 1, T: 650})...)
	if o := b.overlaps(b.intervals()); o.Pairs != 1 || o.MaxMS != ms(50) {
		t.Errorf("with the end event: %+v, want one overlap of 50 ns", o)
	}
}

func TestStaleWrites(t *testing.T) {
	b := fakeBench(0,
		event{who: 1, Ev: "claim", OK: true, Term: 2, T0: 90, T: 100},
		event{who: 1, Ev: "write", OK: true, Term: 2, T0: 110, T: 120},
		// Began before the claim returned: the store may order it first.
		event{who: 0, Ev: "write", OK: true, Term: 1, T0: 95, T: 130},
		// Began after the claim had returned: the fence should have refused it.
		event{who: 0, Ev: "write", OK: true, Term: 1, T0: 105, T: 140},
		event{who: 0, Ev: "write", Err: "stale", Term: 1, T0: 150, T: 160},
		event{who: 0, Ev: "write", Err: "guard", Term: 1, T0: 170, T: 170},
		event{who: 1, Ev: "write", OK: true, Term: 2, T0: 180, T: 190, LeaseEnd: 185},
	)
	s := b.writes()
	want := writeStats{Accepted: 4, RefusedByFence: 1, RefusedByGuard: 1, StaleAfterClaim: 1,
		AfterLeaseEnd: 1, MaxAfterLeaseEndMS: ms(5)}
	s.FirstStale = ""
	if s != want {
		t.Errorf("writes = %+v\nwant      %+v", s, want)
	}
}

func TestSummarise(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	if d := summarise(v); d != (dist{N: 5, P50: 3, P99: 5, Max: 5}) {
		t.Errorf("summarise = %+v", d)
	}
	if d := summarise([]float64{0, 0}); d != (dist{N: 2}) {
		t.Errorf("counts only: %+v", d)
	}
}
