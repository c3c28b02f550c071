package main

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Mono returns CLOCK_MONOTONIC in nanoseconds: one clock for every process
// on the host, so that the exclusivity bench can lay the event logs of
// several replicas side by side.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC exists on every platform x/sys/unix builds for
	}
	return ts.Nano()
}

// monoAt converts an instant of Go's monotonic clock (a lease deadline)
// into CLOCK_MONOTONIC nanoseconds; 0 for the zero time.
func monoAt(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	now, mono := time.Now(), Mono()
	return mono + int64(t.Sub(now))
}

// Event is one line of a replica's event log (JSON lines). T is its
// CLOCK_MONOTONIC time in nanoseconds; the other fields depend on Ev:
//
//	start   the process started: Name, PID, Rating, Quorum
//	claim   Claim of Term ended (T0 its start): OK, Err
//	lead    leadership work started in Term: LeaseEnd (0: no lease)
//	lease   the lease of Term now ends at LeaseEnd (logged when it moves)
//	write   a guarded write of Term, Seq began at T0 and ended at T: OK
//	        (committed), else Err: "guard" (Check refused it, nothing was
//	        sent), "stale" (the fence refused it) or the error; LeaseEnd is
//	        the lease end Check saw
//	end     the leadership of Term ended (its context was cancelled)
//	stop    leadership work of Term returned (after end, and after the
//	        write in flight if any)
//	rating  the rating is now Rating
type Event struct {
	T        int64  `json:"t"`
	Ev       string `json:"ev"`
	Name     string `json:"name,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Term     uint64 `json:"term,omitempty"`
	Seq      int64  `json:"seq,omitempty"`
	T0       int64  `json:"t0,omitempty"`
	OK       bool   `json:"ok,omitempty"`
	Err      string `json:"err,omitempty"`
	LeaseEnd int64  `json:"lease_end,omitempty"`
	Rating   int64  `json:"rating,omitempty"`
	Quorum   int    `json:"quorum,omitempty"`
}

// eventLog writes events as JSON lines, one write call each and no
// buffering, so that a SIGKILL loses none that were logged.
type eventLog struct {
	mu sync.Mutex
	w  io.Writer // nil: discard
}

func (l *eventLog) log(ev Event) {
	if l.w == nil {
		return
	}
	if ev.T == 0 {
		ev.T = Mono()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(b, '\n'))
}
