package election

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/internal/fenceerr"
)

// Leadership is who leads, as one node sees it.
type Leadership struct {
	// Coordinator is the coordinator's ID, or "" while this node knows none:
	// during an election, after a resign, or (quorum guard on) while no
	// coordinator holds a majority lease.
	Coordinator string
	// Term is the coordinator's term, the fencing token: epoch<<32 | the
	// winner's tag (core.Term). It is unique per coordinator and only grows.
	// 0 when Coordinator is "".
	Term uint64
	// IsSelf reports that this node is the coordinator.
	IsSelf bool
}

// Known reports whether a coordinator is known.
func (l Leadership) Known() bool { return l.Coordinator != "" }

// String formats l as "coordinator@epoch.tag", or "none".
func (l Leadership) String() string {
	if l.Coordinator == "" {
		return "none"
	}
	return l.Coordinator + "@" + core.Term(l.Term).String()
}

// observers hands the newest Leadership of a name to every Observe
// channel without ever blocking the loop: each channel holds one value,
// and a new value replaces an unread one (hashicorp/raft's
// overrideNotifyBool). The current value is the name's snapshot's
// (Election.current), which the loop stores before it publishes to the
// observers, and before it closes them it stores one that says stopped:
// a channel subscribed under mu holds the current value at once and
// misses no later one, even if the name's observers are made (by the
// first Subscribe) while the loop publishes.
type observers struct {
	el     *Election
	mu     sync.Mutex
	chans  []chan Leadership
	closed bool
}

// observers returns the name's observers, making them if need be (on
// any goroutine).
func (el *Election) observers() *observers {
	if o := el.obs.Load(); o != nil {
		return o
	}
	el.obs.CompareAndSwap(nil, &observers{el: el})
	return el.obs.Load()
}

// current returns the Leadership the loop last published for the name
// (its snapshot: the coordinator it reports, its term, whether it is
// this member; none once the name has ended).
func (el *Election) current() Leadership {
	s := el.snap.Load()
	if s.coordinator == "" {
		return Leadership{}
	}
	return Leadership{Coordinator: s.coordinator, Term: s.term, IsSelf: s.coordinator == el.e.id}
}

// subscribe returns a channel that holds the current value at once.
func (o *observers) subscribe() <-chan Leadership { return o.subscribeChan() }

func (o *observers) subscribeChan() chan Leadership {
	ch := make(chan Leadership, 1)
	o.mu.Lock()
	defer o.mu.Unlock()
	ch <- o.el.current()
	if o.closed || o.el.snap.Load().stopped {
		close(ch)
	} else {
		o.chans = append(o.chans, ch)
	}
	return ch
}

// unsubscribe stops publishing to ch, empties it and closes it; a channel
// that close has closed already, or that was unsubscribed, is left alone.
func (o *observers) unsubscribe(ch chan Leadership) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := slices.Index(o.chans, ch)
	if i < 0 {
		return
	}
	o.chans = slices.Delete(o.chans, i, i+1)
	select {
	case <-ch:
	default:
	}
	close(ch)
}

// Subscription is an Observe channel that can be stopped. Subscriptions
// are independent: closing one changes nothing for the others.
type Subscription struct {
	// C always holds the newest Leadership, as the channel Observe
	// returns does. It is closed by Close, and when Run returns (after a
	// final Leadership{}).
	C  <-chan Leadership
	ch chan Leadership
	o  *observers
}

// Close ends the subscription: C yields no further value and is closed. It
// is safe to call more than once, from any goroutine, also after Run has
// returned. It holds no goroutine, so a subscription that is dropped
// without Close leaks nothing but its place in the Elector's list until
// Run returns.
func (s *Subscription) Close() { s.o.unsubscribe(s.ch) }

// Subscribe is Observe with an end: the returned Subscription's C holds
// the current Leadership at once and then always the newest one, and its
// Close stops it without waiting for Run to return.
func (e *Elector) Subscribe() *Subscription { return e.def.Subscribe() }

func (o *observers) publish(l Leadership) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ch := range o.chans {
		override(ch, l)
	}
}

// close publishes the final value and closes every channel.
func (o *observers) close(final Leadership) {
	o.publish(final)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for _, ch := range o.chans {
		close(ch)
	}
	o.chans = nil
}

// override puts v into the one-slot channel ch, replacing an unread value.
// Only publish writes to ch, under the mutex, so the second send cannot
// find the slot full.
func override(ch chan Leadership, v Leadership) {
	select {
	case ch <- v:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- v:
	default:
	}
}

// notification is one queued callback.
type notification struct {
	kind notifyKind
	l    Leadership
	ctx  context.Context // started only: the span's context
	work uint64          // started and stopped: the span's spanRun.work
}

type notifyKind uint8

const (
	notifyNewLeader notifyKind = iota
	notifyStarted
	notifyStopped
)

// notifier runs the Callbacks on a goroutine of its own, one at a time, in
// the order the loop queued them (client-go leaderelection style): a
// callback may block (OnStartedLeading for the whole span, a slow
// OnNewLeader), and the loop must not wait for it. The goroutine runs only
// while notifications wait or a callback runs: push starts it when none
// runs, and it returns when it finds the queue empty; both under mu, so no
// notification is left without a goroutine. A member that is not leading
// and whose callbacks have returned keeps no goroutine for them. The
// queue is unbounded but short: consecutive OnNewLeader notifications that
// nobody has seen yet collapse into the newest.
type notifier struct {
	cb    Callbacks
	retry time.Duration     // between Claim attempts
	done1 func(work uint64) // the leader work of span number work has returned
	// started is the spanRun.work of the last span whose
	// OnStartedLeading ran (Claim passed): only such a span gets
	// OnStoppedLeading. Owned by the running goroutine; the next one
	// starts under mu after it returned under mu.
	started uint64
	// workDone is the work of the last span whose leader work returned
	// (Election.markWorkDone), which the loop reads.
	workDone atomic.Uint64
	mu       sync.Mutex
	queue    []notification
	held     bool           // no delivery before begin (Run has not started)
	running  bool           // a goroutine delivers the queue
	wg       sync.WaitGroup // that goroutine
}

// newNotifier returns the notifier of cb, or nil when cb sets no
// callback: a nil notifier wants nothing (push, begin and wait do
// nothing), and a member of thousands of names without callbacks keeps
// none for them.
func newNotifier(cb Callbacks, retry time.Duration, workDone func(work uint64)) *notifier {
	if cb.OnStartedLeading == nil && cb.OnStoppedLeading == nil && cb.Claim == nil && cb.OnNewLeader == nil {
		return nil
	}
	return &notifier{cb: cb, retry: retry, done1: workDone, held: true}
}

// push queues x; it never blocks. It reports whether x was queued (some
// callback wants it). Only the loop calls it (or, before Run, a caller
// holding the Elector's mu).
func (n *notifier) push(x notification) bool {
	if n == nil || !n.wanted(x.kind) {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if k := len(n.queue); x.kind == notifyNewLeader && k > 0 && n.queue[k-1].kind == notifyNewLeader {
		n.queue[k-1] = x
	} else {
		n.queue = append(n.queue, x)
	}
	n.startLocked()
	return true
}

// begin lets deliveries start (Run has started); those queued before
// begin now.
func (n *notifier) begin() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held = false
	n.startLocked()
}

// startLocked starts the delivering goroutine if notifications wait and
// none runs. n.mu is held.
func (n *notifier) startLocked() {
	if n.held || n.running || len(n.queue) == 0 {
		return
	}
	n.running = true
	n.wg.Add(1)
	go n.run()
}

// wait returns once every notification pushed so far has been delivered
// (the loop calls it after its last push).
func (n *notifier) wait() {
	if n != nil {
		n.wg.Wait()
	}
}

func (n *notifier) wanted(k notifyKind) bool {
	switch k {
	case notifyStarted:
		return n.cb.OnStartedLeading != nil || n.cb.Claim != nil
	case notifyStopped:
		return n.cb.OnStoppedLeading != nil
	}
	return n.cb.OnNewLeader != nil
}

// run is the delivering goroutine: it delivers the queue until it finds
// it empty.
func (n *notifier) run() {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.queue = nil
			n.running = false
			n.mu.Unlock()
			return
		}
		x := n.queue[0]
		n.queue[0] = notification{}
		n.queue = n.queue[1:]
		n.mu.Unlock()
		n.deliver(x)
	}
}

func (n *notifier) deliver(x notification) {
	switch x.kind {
	case notifyStarted:
		n.lead(x.ctx, x.l.Term, x.work)
		n.done1(x.work)
	case notifyStopped:
		if x.work == n.started {
			n.cb.OnStoppedLeading(x.l.Term)
		}
	default:
		n.cb.OnNewLeader(x.l)
	}
}

// lead runs Claim until it succeeds (retrying every retry), the span
// ends or Claim finds the term stale (fencing.ErrStale: no retry can
// succeed), then OnStartedLeading.
func (n *notifier) lead(ctx context.Context, term, work uint64) {
	for n.cb.Claim != nil {
		err := n.cb.Claim(ctx, term)
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, fenceerr.ErrStale) {
			return
		}
		t := time.NewTimer(n.retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if ctx.Err() != nil {
		return // the span ended while it was claimed
	}
	n.started = work
	if n.cb.OnStartedLeading != nil {
		n.cb.OnStartedLeading(ctx, term)
	}
}
