package electiontest

import (
	"testing"
	"time"
)

// Eventually polls cond every millisecond until it holds, failing the test
// after within with why's account; it returns how long it took. Inside a
// testing/synctest bubble the milliseconds are the bubble's.
func Eventually(tb testing.TB, within time.Duration, cond func() bool, why func() string) time.Duration {
	tb.Helper()
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			tb.Fatalf("condition not met within %v:%s", within, why())
		}
	}
	return time.Since(start)
}

// Hold checks every period, for d, that check returns nil, and fails the
// test with the first error.
func Hold(tb testing.TB, period, d time.Duration, check func() error) {
	tb.Helper()
	tick := time.NewTicker(period)
	defer tick.Stop()
	end := time.After(d)
	for {
		if err := check(); err != nil {
			tb.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-end:
			return
		}
	}
}
