package metrics

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: Electors,
// memberlist instances, HTTP servers and the Prometheus process watcher
// must all be stopped by the tests' cleanups. memberlist's Shutdown does
// not wait for a probe in flight, which ends by its own timeouts: under the
// race detector in CI two probeNode goroutines outlived goleak's own
// retries (about 1.5 s), so the check is repeated for up to 10 s, as the
// election package's real-memberlist tests do.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := noLeaks(10 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind after a successful run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// noLeaks returns goleak's finding once no goroutine is left, or the last
// one when within has passed.
func noLeaks(within time.Duration) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(within); ; <-tick.C {
		err := goleak.Find()
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
