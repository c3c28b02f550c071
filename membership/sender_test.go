package membership

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coordelect/coordelect/election/core"
)

func TestOutLinkQueue(t *testing.T) {
	c := &counters{}
	var wg sync.WaitGroup
	l := &outLink{exited: make(chan struct{})}
	var starts int
	for range 2 {
		start, err := l.enqueue(outItem{}, 2, c, &wg)
		if err != nil {
			t.Fatal(err)
		}
		if start {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("%d goroutines asked for two frames on an idle link, want 1", starts)
	}
	if _, err := l.enqueue(outItem{}, 2, c, &wg); !errors.Is(err, ErrQueueFull) || c.sendQueueFull.Load() != 1 {
		t.Fatalf("third enqueue: %v, counted %d", err, c.sendQueueFull.Load())
	}
	l.stop()
	if _, err := l.enqueue(outItem{}, 2, c, &wg); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("enqueue on a stopped link: %v", err)
	}
	select {
	case <-l.exited:
		t.Fatal("exited closed while the goroutine was still due to run")
	default:
	}
	l.run(&wg, c, func(*outLink, outItem) { t.Error("a stopped link sent a frame") })
	if n := c.sendAbandoned.Load(); n != 2 {
		t.Fatalf("abandoned %d frames, want 2", n)
	}
	<-l.exited
}

// A link's goroutine runs only while frames wait: it returns when the
// queue is empty, and the next frame starts another, which goes on with
// the same sequence numbers. Were a goroutine left waiting on an idle
// link, wg.Wait would never return and synctest would report the
// deadlock.
func TestOutLinkGoroutineEndsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counters{}
		var wg sync.WaitGroup
		l := &outLink{exited: make(chan struct{})}
		gate := make(chan struct{})
		var sent []uint64
		transmit := func(l *outLink, it outItem) {
			<-gate
			l.seq++
			sent = append(sent, l.seq)
		}
		send := func() {
			if start, err := l.enqueue(outItem{}, 10, c, &wg); err != nil {
				t.Fatal(err)
			} else if start {
				go l.run(&wg, c, transmit)
			}
		}
		for round := range 3 {
			send()
			send()
			synctest.Wait() // the goroutine holds the first frame at the gate
			gate <- struct{}{}
			gate <- struct{}{}
			wg.Wait() // the goroutine returned with the queue empty
			if l.running || len(l.queue) != 0 {
				t.Fatalf("round %d: running %v with %d queued after the queue emptied", round, l.running, len(l.queue))
			}
		}
		if want := []uint64{1, 2, 3, 4, 5, 6}; len(sent) != len(want) || sent[5] != 6 {
			t.Fatalf("sequence numbers %v, want %v", sent, want)
		}
		l.stop()
		<-l.exited // an idle link has no goroutine to wait for
	})
}

// Many goroutines enqueue on one link while its goroutine keeps finding
// the queue empty and returning: every frame is sent (no enqueue lands
// in a queue whose goroutine has just decided to return), each producer's
// frames in its order, by one goroutine at a time.
func TestOutLinkNoLostWakeup(t *testing.T) {
	const producers, each = 16, 300
	c := &counters{}
	var wg sync.WaitGroup
	l := &outLink{exited: make(chan struct{})}
	var (
		mu      sync.Mutex
		next    [producers]int
		bad     []string
		active  atomic.Int32
		starts  atomic.Int32
		payload = func(p, i int) []byte { return []byte{byte(p), byte(i >> 8), byte(i)} }
	)
	transmit := func(_ *outLink, it outItem) {
		if active.Add(1) != 1 {
			t.Error("two goroutines send on one link")
		}
		p, i := int(it.body[0]), int(it.body[1])<<8|int(it.body[2])
		mu.Lock()
		if i != next[p] && len(bad) < 5 {
			bad = append(bad, string(rune('a'+p)))
		}
		next[p] = i + 1
		mu.Unlock()
		active.Add(-1)
	}
	// waitSent waits until producer p's frame i has been sent: the link
	// then goes idle often, while the other producers keep enqueuing. A
	// frame that waits with no goroutine to send it is never sent.
	waitSent := func(p, i int) {
		deadline := time.Now().Add(waitTimeout)
		for {
			mu.Lock()
			done := next[p] > i
			mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("producer %d: frame %d queued and never sent (a lost wake-up)", p, i)
				return
			}
			runtime.Gosched()
		}
	}
	var producersWG sync.WaitGroup
	for p := range producers {
		producersWG.Go(func() {
			for i := range each {
				start, err := l.enqueue(outItem{body: payload(p, i)}, producers*each, c, &wg)
				if err != nil {
					t.Error(err)
					return
				}
				if start {
					starts.Add(1)
					go l.run(&wg, c, transmit)
				}
				if i%5 == 4 {
					waitSent(p, i)
				}
			}
		})
	}
	producersWG.Wait()
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("producers %v saw their frames out of order", bad)
	}
	for p, n := range next {
		if n != each {
			t.Errorf("producer %d: %d of %d frames sent", p, n, each)
		}
	}
	if l.running || len(l.queue) != 0 {
		t.Fatalf("running %v with %d queued after every goroutine returned", l.running, len(l.queue))
	}
	if starts.Load() < 2 {
		t.Fatalf("the goroutine started %d times: it never found the queue empty, so the test proves nothing", starts.Load())
	}
	t.Logf("%d frames, the link's goroutine started %d times", producers*each, starts.Load())
}

// A link that replaced a link that never started a goroutine takes over
// the sequence numbers of the last one that did, for the same boot ID
// only. The links are made as sender.link makes them: exited is made by
// the wait for it, after the link stopped.
func TestOutLinkInheritsThroughIdleLinks(t *testing.T) {
	c := &counters{}
	var wg sync.WaitGroup
	ran := &outLink{to: target{boot: 7}}
	if start, _ := ran.enqueue(outItem{}, 1, c, &wg); !start {
		t.Fatal("no goroutine asked for")
	}
	ran.run(&wg, c, func(l *outLink, _ outItem) { l.seq = 41 })
	ran.stop()
	idle := &outLink{to: target{boot: 7}, prev: ran}
	idle.stop()
	same := &outLink{to: target{boot: 7}, prev: idle}
	same.inherit()
	if same.seq != 41 || same.prev != nil {
		t.Fatalf("seq %d, prev %p: want 41 from the link before the idle one", same.seq, same.prev)
	}
	other := &outLink{to: target{boot: 8}, prev: same}
	same.stop()
	other.inherit()
	if other.seq != 0 {
		t.Fatalf("a new boot ID starts at seq %d, want 0", other.seq)
	}
}

// On real members: after a burst of reliable messages, then a pause with
// nothing to send, no link goroutine is left, and a message sent after
// the pause (by a new goroutine, with the link's next sequence number)
// is delivered. A restarted goroutine numbering from 1 again would have
// it dropped as a duplicate.
func TestSenderIdleLinksHoldNoGoroutine(t *testing.T) {
	checkLeaks(t)
	ms := cluster(t, 3, nil)
	n1, n2 := ms[0], ms[1]
	send := func(to string, phase uint32) {
		t.Helper()
		if err := n1.Send(core.Message{Type: core.MsgElection, From: "n1", To: to, Phase: phase}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		send("n2", uint32(i))
		send("n3", uint32(i))
	}
	if !waitUntil(waitTimeout, func() bool { return len(n2.messages()) == 20 && len(ms[2].messages()) == 20 }) {
		t.Fatalf("received %d and %d of 20; sender's stats %+v", len(n2.messages()), len(ms[2].messages()), n1.Stats())
	}
	if !waitUntil(waitTimeout, func() bool { return linkGoroutines() == 0 }) {
		t.Fatalf("%d link goroutines left with nothing to send", linkGoroutines())
	}
	send("n2", 20)
	if !waitUntil(waitTimeout, func() bool { return len(n2.messages()) == 21 }) {
		t.Fatalf("the message sent after the pause was not delivered; stats %+v", n2.Stats())
	}
	if p := n2.messages()[20].Message.Phase; p != 20 {
		t.Fatalf("last message has phase %d, want 20", p)
	}
}

// linkGoroutines counts the goroutines running outLink.run, in this
// process.
func linkGoroutines() int { return goroutinesWith("membership.(*outLink).run(") }
