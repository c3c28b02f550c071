package membership

import (
	"encoding/binary"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate is the Node's memberlist.Delegate and memberlist.EventDelegate.
//
// memberlist calls these methods from its own goroutines, the event ones
// while holding its node lock: they must not block and must not call back
// into memberlist. Each one copies what it was given (memberlist reuses
// NotifyMsg's buffer and owns *Node) into the inbox and returns; the Node's
// dispatcher goroutine does the rest.
type delegate struct {
	meta   atomic.Pointer[[]byte] // current encoded metadata
	inbox  *inbox
	guard  *guard
	ack    []byte            // this node's boot ID, sent in every ping ack
	rejoin func(addr string) // asks for a join of addr; never blocks
	// keyMismatch is called with memberlist's log line when a packet or
	// stream could not be decrypted with any installed key.
	keyMismatch func(line string)
}

var (
	_ memberlist.Delegate         = (*delegate)(nil)
	_ memberlist.EventDelegate    = (*delegate)(nil)
	_ memberlist.MergeDelegate    = (*delegate)(nil)
	_ memberlist.ConflictDelegate = (*delegate)(nil)
	_ memberlist.PingDelegate     = (*delegate)(nil)
	_ memberlist.AliveDelegate    = (*delegate)(nil)
)

// NodeMeta returns this node's metadata; it is far below limit (see meta).
func (d *delegate) NodeMeta(limit int) []byte {
	b := *d.meta.Load()
	if len(b) > limit {
		return nil // cannot happen: encodings are at most 53 bytes
	}
	return b
}

// NotifyMsg queues a copy of a received frame.
func (d *delegate) NotifyMsg(b []byte) {
	d.inbox.push(inboxItem{kind: itemMessage, msg: append([]byte(nil), b...)})
}

// GetBroadcasts is unused: messages go point to point.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState is unused: the metadata carries all shared state.
func (d *delegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState is unused.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyJoin queues a member that became alive.
func (d *delegate) NotifyJoin(n *memberlist.Node) {
	if d.guard.joined(n) {
		d.inbox.push(nodeItem(itemJoin, n))
	}
}

// NotifyLeave queues a member that left or was declared dead.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	if d.guard.left(n) {
		d.inbox.push(nodeItem(itemLeave, n))
	}
}

// NotifyUpdate queues a member whose metadata or address changed.
func (d *delegate) NotifyUpdate(n *memberlist.Node) {
	if d.guard.joined(n) {
		d.inbox.push(nodeItem(itemUpdate, n))
	}
}

// NotifyMerge vets the members of a join's push-pull (either side of it)
// before memberlist merges them; an error cancels the whole merge.
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error { return d.guard.merge(peers) }

// NotifyAlive vets a member memberlist heard is alive; an error makes
// memberlist ignore the news.
func (d *delegate) NotifyAlive(p *memberlist.Node) error { return d.guard.vetAlive(p) }

// NotifyConflict: memberlist ignored other, which claims existing's name.
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	d.guard.conflict(existing, other)
}

type itemKind uint8

const (
	itemMessage itemKind = iota
	itemJoin
	itemLeave
	itemUpdate
)

// nodeInfo is a copy of the parts of a memberlist.Node the Node uses.
type nodeInfo struct {
	Name string
	Addr net.IP
	Port uint16
	Meta []byte
	// Named: the member announces named elections (memberlist's
	// delegate protocol range reaches namedProtocol): it takes batch and
	// candidacy frames.
	Named bool
}

func (i nodeInfo) address() string {
	return net.JoinHostPort(i.Addr.String(), strconv.Itoa(int(i.Port)))
}

// inboxItem is one callback's worth of data.
type inboxItem struct {
	kind itemKind
	node nodeInfo // join, leave, update
	msg  []byte   // message
}

func nodeItem(k itemKind, n *memberlist.Node) inboxItem {
	ip := net.IP(n.Addr)
	if v4 := ip.To4(); v4 != nil {
		ip = v4 // 4 bytes, not 16: the table keeps the copy
	}
	return inboxItem{kind: k, node: nodeInfo{
		Name:  n.Name,
		Addr:  append(net.IP(nil), ip...),
		Port:  n.Port,
		Meta:  append([]byte(nil), n.Meta...),
		Named: n.DMax >= namedProtocol,
	}}
}

// inbox is the FIFO between memberlist's callbacks and the dispatcher.
// push never blocks. Membership items are always kept (there are few, and
// losing one would corrupt the view); messages beyond maxMsgs are dropped
// and counted.
type inbox struct {
	mu      sync.Mutex
	items   []inboxItem
	msgs    int // messages in items
	maxMsgs int
	closed  bool
	ready   chan struct{} // capacity 1: "items is not empty"
	stats   *counters
}

// keptItems bounds the backing arrays that take keeps for reuse: enough
// for the few items at a time of a settled cluster.
const keptItems = 16

func newInbox(maxMsgs int, stats *counters) *inbox {
	return &inbox{maxMsgs: maxMsgs, ready: make(chan struct{}, 1), stats: stats}
}

func (q *inbox) push(it inboxItem) {
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return
	case it.kind == itemMessage && q.msgs >= q.maxMsgs:
		q.mu.Unlock()
		q.stats.drop(DropQueueFull)
		return
	case it.kind == itemMessage:
		q.msgs++
	}
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take moves every queued item into buf[:0] and returns it; the inbox
// keeps buf's old backing array for the next items, unless it holds more
// than keptItems: a join's burst (a push-pull reports every member at once,
// 104 bytes an item) would otherwise stay allocated, twice (this array and
// the one the dispatcher holds), in every member for good.
func (q *inbox) take(buf []inboxItem) []inboxItem {
	clear(buf)
	if cap(buf) > keptItems {
		buf = nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items, q.msgs = buf[:0], 0
	return out
}

// close makes later pushes no-ops: memberlist may still deliver from a
// connection it accepted before it shut down.
func (q *inbox) close() {
	q.mu.Lock()
	q.closed = true
	q.items = nil
	q.mu.Unlock()
}

// AckPayload puts this node's boot ID in its answers to probes.
func (d *delegate) AckPayload() []byte { return d.ack }

// NotifyPingComplete: other answered a probe with its boot ID. A boot ID
// later than the one other's metadata gives is a restart that has not
// reached this node by gossip: often a seed restarted without seeds of
// its own, which knows nobody and would lead alone. Joining it (not here:
// memberlist holds no lock, but a join takes a round trip) merges it back
// at once.
func (d *delegate) NotifyPingComplete(other *memberlist.Node, _ time.Duration, payload []byte) {
	if len(payload) != 8 {
		return
	}
	m, err := decodeMeta(other.Meta)
	if err == nil && binary.BigEndian.Uint64(payload) > m.Boot {
		d.rejoin(nodeAddr(other))
	}
}
