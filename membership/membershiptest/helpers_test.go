package membershiptest

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait on the real network; generous for -race
// on two cores.
const waitTimeout = 10 * time.Second

// checkLeaks fails t if goroutines other than those running now are still
// alive after the test's other cleanups (register it first). memberlist
// lets a connection handler finish after Shutdown, so it polls.
func checkLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		deadline := time.Now().Add(waitTimeout)
		err := goleak.Find(ignore)
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			err = goleak.Find(ignore)
		}
		if err != nil {
			t.Error(err)
		}
	})
}

// listen opens a transport for name on 127.0.0.1:port (0: a free port).
func listen(t *testing.T, fn *FaultNetwork, name string, port int) *FaultTransport {
	t.Helper()
	tr, err := fn.Listen(name, "127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
