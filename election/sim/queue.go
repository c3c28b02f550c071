package sim

// eventQueue holds the pending events in (at, seq) order. Event times are
// whole virtual milliseconds and nearly all of them fall a few ms ahead (a
// message delay, the next tick), so it is a calendar: one FIFO bucket per
// millisecond of a window that starts at the earliest pending time, and a
// heap for the few events beyond the window. Within a millisecond the
// order is seq order for free: seq grows with every schedule call, a
// bucket is filled in schedule order, and an event in the heap for a given
// millisecond was scheduled before the window reached it, so before any
// event in that millisecond's bucket. Push and pop cost O(1) but for the
// far events.
type eventQueue struct {
	base    int64 // the window covers base .. base+window-1; no event is earlier
	buckets [window]bucket
	inRing  int // events in the buckets
	far     farHeap
	// spare holds drained chunks for reuse: a burst (a coordinator
	// announcing itself to a million members) then costs no copying as
	// its buckets grow, and no more memory than the events in flight.
	spare []*chunk
}

const (
	window    = 1 << 12 // ms
	chunkSize = 256     // events
)

// bucket is one millisecond's events in seq order: a list of chunks,
// read from head.
type bucket struct {
	first, last *chunk
	head        int // next event to read in first
}

type chunk struct {
	evs  [chunkSize]event
	n    int
	next *chunk
}

// Len returns the number of pending events.
func (q *eventQueue) Len() int { return q.inRing + len(q.far) }

func (q *eventQueue) push(e event) {
	if e.at < q.base {
		panic("sim: event scheduled in the past")
	}
	if e.at >= q.base+window {
		q.far.push(e)
		return
	}
	b := &q.buckets[e.at&(window-1)]
	if b.last == nil || b.last.n == chunkSize {
		c := q.newChunk()
		if b.last == nil {
			b.first = c
		} else {
			b.last.next = c
		}
		b.last = c
	}
	b.last.evs[b.last.n] = e
	b.last.n++
	q.inRing++
}

func (q *eventQueue) newChunk() *chunk {
	if k := len(q.spare); k > 0 {
		c := q.spare[k-1]
		q.spare = q.spare[:k-1]
		return c
	}
	return new(chunk)
}

func (b *bucket) empty() bool { return b.first == nil }

// advance moves base to the earliest pending time (Len > 0), which is
// the caller's new clock.
func (q *eventQueue) advance() {
	for {
		if len(q.far) > 0 && q.far[0].at == q.base {
			return
		}
		if !q.buckets[q.base&(window-1)].empty() {
			return
		}
		if q.inRing == 0 {
			q.base = q.far[0].at // nothing in the window: jump
			continue
		}
		q.base++
	}
}

// peekAt returns the time of the earliest pending event (Len > 0). It
// leaves base alone: the caller's clock may stop short of that time
// (Sim.RunFor), and later events may be scheduled before it.
func (q *eventQueue) peekAt() int64 {
	if q.inRing == 0 {
		return q.far[0].at
	}
	for t := q.base; ; t++ {
		if len(q.far) > 0 && q.far[0].at == t || !q.buckets[t&(window-1)].empty() {
			return t
		}
	}
}

// pop removes and returns the earliest pending event (Len > 0).
func (q *eventQueue) pop() event {
	q.advance()
	if len(q.far) > 0 && q.far[0].at == q.base {
		return q.far.pop()
	}
	b := &q.buckets[q.base&(window-1)]
	c := b.first
	e := c.evs[b.head]
	c.evs[b.head] = event{} // let the message's strings and list go
	b.head++
	if b.head == c.n {
		b.first, b.head = c.next, 0
		if b.first == nil {
			b.last = nil
		}
		c.n, c.next = 0, nil
		q.spare = append(q.spare, c)
	}
	q.inRing--
	return e
}

// nextNode returns the node of the k-th next pending event (k >= 1) in
// the earliest bucket's first chunk, the one pop returns k-th unless
// events are scheduled before it (-1: none there, or a tick, whose node
// is a phase).
func (q *eventQueue) nextNode(k int) int {
	b := &q.buckets[q.base&(window-1)]
	if b.first == nil {
		return -1
	}
	if i := b.head + k - 1; i < b.first.n {
		if e := &b.first.evs[i]; e.kind != evTick {
			return int(e.node)
		}
	}
	return -1
}

// reset drops every pending event.
func (q *eventQueue) reset() {
	q.buckets = [window]bucket{}
	q.inRing, q.far, q.spare = 0, nil, nil
}

// farHeap is a min-heap of events by (at, seq).
type farHeap = minHeap[event]

func (e event) before(o event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// minHeap is a binary min-heap of values ordered by their before method,
// typed so that pushing a value does not box it (container/heap would).
type minHeap[T interface{ before(T) bool }] []T

func (q *minHeap[T]) push(x T) {
	*q = append(*q, x)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *minHeap[T]) pop() T {
	h := *q
	x := h[0]
	last := len(h) - 1
	h[0] = h[last]
	var zero T
	h[last] = zero
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if r < len(h) && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return x
}
