package election

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestObserversOverride: every subscriber sees the newest value, one slot
// deep, and publish never blocks on a reader that is not reading. The
// value a subscriber starts with is the name's snapshot's, which the loop
// stores before it publishes.
func TestObserversOverride(t *testing.T) {
	el := &Election{e: &Elector{id: "self"}}
	el.snap.Store(&snapshot{})
	o := el.observers()
	first := o.subscribe()
	if got := <-first; got != (Leadership{}) {
		t.Fatalf("initial value %v", got)
	}
	for i := uint64(1); i <= 5; i++ {
		el.snap.Store(&snapshot{coordinator: "x", term: i})
		o.publish(Leadership{Coordinator: "x", Term: i})
	}
	second := o.subscribe()
	for _, ch := range []<-chan Leadership{first, second} {
		if n := len(ch); n != 1 {
			t.Fatalf("channel holds %d values, want 1", n)
		}
		if got := <-ch; got.Term != 5 {
			t.Errorf("read term %d, want the newest, 5", got.Term)
		}
	}
	el.snap.Store(&snapshot{stopped: true})
	o.close(Leadership{})
	third := el.observers().subscribe()
	for _, ch := range []<-chan Leadership{first, second, third} {
		if got, ok := <-ch; !ok || got.Known() {
			t.Errorf("final read %v (open %v), want an empty value", got, ok)
		}
		if _, ok := <-ch; ok {
			t.Error("channel open after close")
		}
	}
}

// TestNotifierOrder: callbacks run one at a time in queue order, unread
// OnNewLeader notifications collapse into the newest, and the delivering
// goroutine returns once the queue is drained (wait would block forever,
// and synctest report the deadlock, if it stayed).
func TestNotifierOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		add := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
		release := make(chan struct{})
		n := newNotifier(Callbacks{
			OnStartedLeading: func(ctx context.Context, term uint64) { add("started"); <-release },
			OnStoppedLeading: func(uint64) { add("stopped") },
			OnNewLeader:      func(l Leadership) { add("leader " + l.Coordinator) },
		}, time.Millisecond, func(uint64) {})
		n.begin()
		n.push(notification{kind: notifyNewLeader, l: Leadership{Coordinator: "a"}})
		n.push(notification{kind: notifyStarted, l: Leadership{Term: 7}, ctx: context.Background(), work: 1})
		synctest.Wait() // the notifier is blocked in OnStartedLeading
		n.push(notification{kind: notifyStopped, l: Leadership{Term: 7}, work: 1})
		for _, id := range []string{"b", "c", "d"} {
			n.push(notification{kind: notifyNewLeader, l: Leadership{Coordinator: id}})
		}
		close(release)
		n.wait()
		want := []string{"leader a", "started", "stopped", "leader d"}
		if !slices.Equal(got, want) {
			t.Errorf("callbacks = %q, want %q", got, want)
		}
	})
}

// TestNotifierSkipsUnsetCallbacks: with no callbacks there is no
// notifier, and nothing is queued; with some, nothing for the others.
func TestNotifierSkipsUnsetCallbacks(t *testing.T) {
	none := newNotifier(Callbacks{}, time.Millisecond, func(uint64) {})
	if none != nil || none.push(notification{kind: notifyStarted}) || none.push(notification{kind: notifyNewLeader}) {
		t.Errorf("a notifier without callbacks: %v, or it queued", none)
	}
	none.begin()
	none.wait()
	n := newNotifier(Callbacks{OnStoppedLeading: func(uint64) {}}, time.Millisecond, func(uint64) {})
	n.push(notification{kind: notifyStarted})
	n.push(notification{kind: notifyNewLeader})
	if len(n.queue) != 0 {
		t.Errorf("queued %d notifications for unset callbacks", len(n.queue))
	}
}

// TestNotifierGoroutineOnlyWhileDelivering: nothing is delivered before
// begin (Run); after it, a goroutine delivers what waits and returns, and
// the next push starts another. A goroutine left behind on an empty queue
// would make wait block forever, which synctest reports as a deadlock.
func TestNotifierGoroutineOnlyWhileDelivering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		n := newNotifier(Callbacks{
			OnNewLeader: func(l Leadership) { mu.Lock(); got = append(got, l.Coordinator); mu.Unlock() },
		}, time.Millisecond, func(uint64) {})
		n.push(notification{kind: notifyNewLeader, l: Leadership{Coordinator: "early"}})
		synctest.Wait()
		if len(got) != 0 || n.running {
			t.Fatalf("delivered %q (running %v) before begin", got, n.running)
		}
		n.begin()
		n.wait()
		for _, id := range []string{"b", "c"} {
			synctest.Wait()
			if n.running {
				t.Fatal("the delivering goroutine still runs with the queue empty")
			}
			n.push(notification{kind: notifyNewLeader, l: Leadership{Coordinator: id}})
			n.wait()
		}
		if want := []string{"early", "b", "c"}; !slices.Equal(got, want) {
			t.Errorf("callbacks = %q, want %q", got, want)
		}
	})
}
