package metrics

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: Electors,
// memberlist instances, HTTP servers and the Prometheus process watcher
// must all be stopped by the tests' cleanups.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
