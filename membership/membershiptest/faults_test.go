package membershiptest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// endpoint is a FaultTransport with a goroutine draining what it receives
// (a NetTransport cannot shut down while a packet or stream waits in its
// unbuffered channels) and one reading each stream.
type endpoint struct {
	*FaultTransport
	got     chan string // packet payloads and stream contents
	stop    chan struct{}
	done    chan struct{}
	readers sync.WaitGroup
}

// openEndpoints opens one endpoint per name. At cleanup all transports shut
// down while the drains still run (a stream accepted during shutdown must
// be taken), which also closes streams still held back by a delay, so that
// no reader waits on a peer that is not yet shut down.
func openEndpoints(t *testing.T, fn *FaultNetwork, names ...string) []*endpoint {
	t.Helper()
	var es []*endpoint
	for _, name := range names {
		e := &endpoint{FaultTransport: listen(t, fn, name, 0), got: make(chan string, 16),
			stop: make(chan struct{}), done: make(chan struct{})}
		go e.drain()
		es = append(es, e)
	}
	t.Cleanup(func() {
		for _, e := range es {
			if err := e.Shutdown(); err != nil {
				t.Error(err)
			}
		}
		for _, e := range es {
			close(e.stop)
			<-e.done
			e.readers.Wait()
		}
	})
	return es
}

func (e *endpoint) drain() {
	defer close(e.done)
	for {
		select {
		case p := <-e.PacketCh():
			e.deliver(string(p.Buf))
		case c := <-e.StreamCh():
			e.readers.Add(1)
			go e.read(c)
		case <-e.stop:
			return
		}
	}
}

func (e *endpoint) read(c net.Conn) {
	defer e.readers.Done()
	_ = c.SetDeadline(time.Now().Add(waitTimeout))
	b, _ := io.ReadAll(c)
	_ = c.Close()
	if len(b) > 0 {
		e.deliver(string(b))
	}
}

func (e *endpoint) deliver(s string) {
	select {
	case e.got <- s:
	case <-e.stop:
	}
}

func (e *endpoint) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-e.got:
		if got != want {
			t.Fatalf("%s received %q, want %q", e.Name(), got, want)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("%s received nothing, want %q", e.Name(), want)
	}
}

func (e *endpoint) packet(t *testing.T, to *endpoint, payload string) {
	t.Helper()
	if _, err := e.WriteToAddress([]byte(payload), memberlist.Address{Addr: to.Addr(), Name: to.Name()}); err != nil {
		t.Fatal(err)
	}
}

func (e *endpoint) stream(to *endpoint, payload string) error {
	c, err := e.DialTimeout(to.Addr(), time.Second) // by address only, as Join dials
	if err != nil {
		return err
	}
	if _, err := c.Write([]byte(payload)); err != nil {
		return err
	}
	return c.Close()
}

func TestFaultNetworkRules(t *testing.T) {
	checkLeaks(t)
	fn := NewFaultNetwork(3, nil)
	es := openEndpoints(t, fn, "a", "b")
	a, b := es[0], es[1]

	a.packet(t, b, "plain")
	b.expect(t, "plain")

	fn.Block("a", b.Addr()) // by name and by address
	a.packet(t, b, "blocked")
	if err := a.stream(b, "blocked"); err == nil {
		t.Fatal("blocked stream dialled")
	}
	b.packet(t, a, "other way") // Block is one direction
	a.expect(t, "other way")

	fn.Heal()
	fn.Partition([]string{"a"}) // b, in no group, is on the other side
	a.packet(t, b, "partitioned")
	b.packet(t, a, "partitioned")

	fn.Heal()
	fn.SetLoss(1)
	a.packet(t, b, "lost")
	if err := a.stream(b, "streams are not lost"); err != nil {
		t.Fatal(err)
	}
	b.expect(t, "streams are not lost")

	fn.Heal()
	a.packet(t, b, "healed") // the first packet b sees since "plain"
	b.expect(t, "healed")
	if p, s := fn.Dropped(); p != 4 || s != 1 {
		t.Fatalf("dropped %d packets, %d streams; want 4, 1", p, s)
	}
}

func TestFaultNetworkDelay(t *testing.T) {
	checkLeaks(t)
	fn := NewFaultNetwork(4, nil)
	es := openEndpoints(t, fn, "a", "b")
	a, b := es[0], es[1]
	const delay = 50 * time.Millisecond
	fn.SetDelay(delay, delay)
	for _, send := range []func(){
		func() { a.packet(t, b, "late") },
		func() {
			if err := a.stream(b, "late"); err != nil {
				t.Fatal(err)
			}
		},
	} {
		start := time.Now()
		send()
		if took := time.Since(start); took > delay/2 {
			t.Fatalf("the sender waited %v for a delayed send", took)
		}
		b.expect(t, "late")
		if took := time.Since(start); took < delay {
			t.Fatalf("arrived after %v, want at least %v", took, delay)
		}
	}
	// Shutdown cancels what is still delayed; checkLeaks sees nothing left.
	fn.SetDelay(time.Hour, time.Hour)
	a.packet(t, b, "never")
	if err := a.stream(b, "never"); err != nil {
		t.Fatal(err)
	}
}
