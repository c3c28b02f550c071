package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// interval is one replica incarnation's valid leadership in one term:
// [start, end] on CLOCK_MONOTONIC, where start is when it began to claim
// the fence (or started leading) and end is the earlier of its step-down
// (its leadership context ended; its exit if it died) and, with the
// quorum guard, the latest lease end it logged in that term.
// The step-down is the "end" event (the context's cancellation) when the
// log has it, else "stop" (the leader work returned).
type interval struct {
	who        int
	term       uint64
	start, end int64
}

// intervals builds every valid leadership interval from the event logs.
func (b *bench) intervals() []interval {
	type key struct {
		who  int
		term uint64
	}
	type acc struct {
		start, stop, lease int64
	}
	m := map[key]*acc{}
	get := func(ev event) *acc {
		k := key{ev.who, ev.Term}
		if m[k] == nil {
			m[k] = &acc{start: math.MaxInt64}
		}
		return m[k]
	}
	for _, ev := range b.c.events {
		switch ev.Ev {
		case "claim":
			if ev.OK {
				a := get(ev)
				a.start = min(a.start, ev.T0)
			}
		case "lead", "lease", "write":
			a := get(ev)
			if ev.Ev == "lead" {
				a.start = min(a.start, ev.T)
			}
			a.lease = max(a.lease, ev.LeaseEnd)
		case "stop", "end": // the earlier: "stop" waits for a write in flight
			if a := get(ev); a.stop == 0 || ev.T < a.stop {
				a.stop = ev.T
			}
		}
	}
	var out []interval
	for k, a := range m {
		if a.start == math.MaxInt64 {
			continue // writes refused before any claim: never led
		}
		end := a.stop
		if end == 0 {
			end = b.c.incs[k.who].exitT
		}
		if b.o.quorum > 0 {
			end = min(end, a.lease)
		}
		if end > a.start {
			out = append(out, interval{who: k.who, term: k.term, start: a.start, end: end})
		}
	}
	slices.SortFunc(out, func(x, y interval) int { return int(min(max(x.start-y.start, -1), 1)) })
	return out
}

// overlap is the measured overlap between valid leaderships.
type overlap struct {
	TotalMS float64 `json:"total_ms"`
	MaxMS   float64 `json:"max_ms"`
	Pairs   int     `json:"pairs"`
	// Worst describes the longest overlap, for a replay.
	Worst *overlapCase `json:"worst,omitempty"`
}

type overlapCase struct {
	A          string  `json:"a"`
	B          string  `json:"b"`
	TermA      uint64  `json:"term_a"`
	TermB      uint64  `json:"term_b"`
	MS         float64 `json:"ms"`
	Start      int64   `json:"start"`
	AfterFault *fault  `json:"after_fault,omitempty"`
}

// overlaps compares every two intervals of different incarnations.
func (b *bench) overlaps(iv []interval) overlap {
	var o overlap
	for i, x := range iv {
		for _, y := range iv[i+1:] {
			if y.start >= x.end {
				break // sorted by start: no later one overlaps x
			}
			if x.who == y.who {
				continue
			}
			d := min(x.end, y.end) - y.start
			if d <= 0 {
				continue
			}
			o.Pairs++
			o.TotalMS += ms(d)
			if ms(d) > o.MaxMS {
				o.MaxMS = ms(d)
				o.Worst = &overlapCase{A: b.name(x.who), B: b.name(y.who), TermA: x.term, TermB: y.term,
					MS: ms(d), Start: y.start, AfterFault: b.faultBefore(y.start)}
			}
		}
	}
	return o
}

func (b *bench) name(who int) string { return b.c.members[b.c.incs[who].member].name }

// faultBefore returns the last fault injected before t.
func (b *bench) faultBefore(t int64) *fault {
	var last *fault
	for i := range b.faults {
		if b.faults[i].T <= t {
			last = &b.faults[i]
		}
	}
	return last
}

// writeStats counts the guarded writes and the stale ones the store
// accepted, as the event logs show them.
type writeStats struct {
	Accepted       int `json:"accepted"`
	RefusedByFence int `json:"refused_by_fence"`
	RefusedByGuard int `json:"refused_by_guard"`
	OtherErrors    int `json:"other_errors"`
	// StaleAfterClaim: accepted writes that began after a Claim of a
	// higher term had returned (the fence was past them).
	StaleAfterClaim int `json:"stale_after_claim"`
	// StaleAfterWrite: accepted writes that began after an accepted write
	// of a higher term had committed.
	StaleAfterWrite int `json:"stale_after_write"`
	// AfterLeaseEnd: accepted writes that committed after the lease end
	// their guard check saw (the fence, not the lease, ordered them).
	AfterLeaseEnd      int     `json:"committed_after_lease_end"`
	MaxAfterLeaseEndMS float64 `json:"max_committed_after_lease_end_ms"`
	FirstStale         string  `json:"first_stale,omitempty"`
}

// writes checks every write against the claims and the writes that
// completed before it began.
func (b *bench) writes() writeStats {
	var s writeStats
	type mark struct {
		t    int64
		term uint64
	}
	var claims, done []mark
	for _, ev := range b.c.events {
		switch {
		case ev.Ev == "claim" && ev.OK:
			claims = append(claims, mark{ev.T, ev.Term})
		case ev.Ev == "write" && ev.OK:
			done = append(done, mark{ev.T, ev.Term})
		}
	}
	// topBefore returns the highest term among marks completed before t.
	prefix := func(ms []mark) func(t int64) uint64 {
		sort.Slice(ms, func(i, j int) bool { return ms[i].t < ms[j].t })
		top := make([]uint64, len(ms))
		for i, m := range ms {
			top[i] = m.term
			if i > 0 {
				top[i] = max(top[i], top[i-1])
			}
		}
		return func(t int64) uint64 {
			i := sort.Search(len(ms), func(i int) bool { return ms[i].t >= t })
			if i == 0 {
				return 0
			}
			return top[i-1]
		}
	}
	claimTop, writeTop := prefix(claims), prefix(done)
	for _, ev := range b.c.events {
		if ev.Ev != "write" {
			continue
		}
		switch {
		case ev.OK:
			s.Accepted++
			if ev.LeaseEnd > 0 && ev.T > ev.LeaseEnd {
				s.AfterLeaseEnd++
				s.MaxAfterLeaseEndMS = max(s.MaxAfterLeaseEndMS, ms(ev.T-ev.LeaseEnd))
			}
			if c := claimTop(ev.T0); c > ev.Term {
				s.StaleAfterClaim++
				s.noteStale(b, ev, "a claim of term", c)
			}
			if w := writeTop(ev.T0); w > ev.Term {
				s.StaleAfterWrite++
				s.noteStale(b, ev, "a write of term", w)
			}
		case ev.Err == "stale":
			s.RefusedByFence++
		case ev.Err == "guard":
			s.RefusedByGuard++
		default:
			s.OtherErrors++
		}
	}
	return s
}

func (s *writeStats) noteStale(b *bench, ev event, what string, term uint64) {
	if s.FirstStale == "" {
		s.FirstStale = fmt.Sprintf("%s wrote term %d seq %d beginning at t=%d after %s %d",
			b.name(ev.who), ev.Term, ev.Seq, ev.T0, what, term)
	}
}

// dist summarises measured times in ms.
type dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50,omitempty"`
	P99 float64 `json:"p99,omitempty"`
	Max float64 `json:"max,omitempty"`
}

func summarise(v []float64) dist {
	d := dist{N: len(v)}
	if len(v) == 0 || slices.Max(v) == 0 {
		return d
	}
	s := slices.Sorted(slices.Values(v))
	at := func(q float64) float64 { return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)] }
	d.P50, d.P99, d.Max = at(0.5), at(0.99), s[len(s)-1]
	return d
}

// report is the JSON the bench prints.
type report struct {
	N          int             `json:"n"`
	Quorum     int             `json:"quorum"`
	Dir        string          `json:"dir"`
	Faults     map[string]int  `json:"faults"`
	Stuck      []string        `json:"stuck,omitempty"`
	Overlap    overlap         `json:"overlap"`
	Writes     writeStats      `json:"writes"`
	Ledger     map[string]any  `json:"ledger"`
	Elections  int             `json:"elections"`
	Spurious   map[string]int  `json:"spurious_elections"`
	TimesMS    map[string]dist `json:"times_ms"`
	Busy       int             `json:"busy_processes"`
	PauseRange [2]float64      `json:"pause_range_ms"`
	Intervals  int             `json:"leadership_intervals"`
	FaultLog   string          `json:"fault_log"`
}

func (b *bench) report() (*report, error) {
	iv := b.intervals()
	r := &report{N: b.o.n, Quorum: b.o.quorum, Dir: b.o.dir, Faults: map[string]int{}, Stuck: b.stuck,
		Overlap: b.overlaps(iv), Writes: b.writes(), Spurious: b.spurious, TimesMS: map[string]dist{},
		Busy: b.o.busy, PauseRange: [2]float64{ms(int64(b.o.pauseMin)), ms(int64(b.o.pauseMax))}, Intervals: len(iv)}
	for _, f := range b.faults {
		k := f.Kind
		if f.Starved {
			k += "/starved"
		}
		r.Faults[k]++
	}
	for _, ev := range b.c.events {
		if ev.Ev == "lead" {
			r.Elections++
		}
	}
	for k, v := range b.times {
		r.TimesMS[k] = summarise(v)
	}
	r.FaultLog = filepath.Join(b.o.dir, "faults.json")
	data, err := json.MarshalIndent(b.faults, "", " ")
	if err == nil {
		err = os.WriteFile(r.FaultLog, data, 0o644)
	}
	if err != nil {
		return nil, err
	}
	r.Ledger, err = b.ledgerReport()
	return r, err
}
