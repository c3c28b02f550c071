package membership

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election/core"
)

// maxDatagram caps a best-effort frame, in bytes: one UDP datagram under
// memberlist's 1400-byte UDPBufferSize after its own headers (user message
// type, cluster label up to 257 bytes, AES-GCM overhead). A heartbeat is
// about 100 bytes; a larger one goes reliably instead.
const maxDatagram = 1024

// Send errors.
var (
	// ErrClosed: the Node is closed.
	ErrClosed = errors.New("membership: node closed")
	// ErrUnknownPeer: the destination is not an admitted live member.
	ErrUnknownPeer = errors.New("membership: not a live member")
	// ErrQueueFull: Config.SendQueueSize frames already wait for the peer.
	ErrQueueFull = errors.New("membership: send queue full")
)

// sender owns one outLink (a FIFO and a goroutine) per destination.
type sender struct {
	ml        *memberlist.Memberlist // set once memberlist exists
	table     *table
	selfBoot  uint64
	queueSize int
	stats     *counters
	log       hclog.Logger
	wg        *sync.WaitGroup

	mu     sync.Mutex
	closed bool
	links  map[string]*outLink // latest link per peer name, maybe stopped
}

// outLink is the send side of one link: frames for one incarnation (boot
// ID) of one peer, sent in FIFO order by one goroutine. Reliable frames are
// numbered from 1 (frameHeader.Seq) so that the receiver can restore the order
// that memberlist's connection-per-message SendReliable loses.
//
// Sends are one at a time, so a peer that does not answer TCP holds its
// own link (not the others) for up to memberlist's TCPTimeout per frame;
// frames queue behind, up to Config.SendQueueSize, until failure detection
// declares the peer dead and the link stops.
type outLink struct {
	to   target
	prev *outLink // the link this one replaced: its goroutine ends first

	mu      sync.Mutex
	queue   []outItem
	stopped bool
	ready   chan struct{} // capacity 1: "queue is not empty"
	done    chan struct{} // closed by stop
	exited  chan struct{} // closed when the goroutine has returned

	// Owned by the goroutine; a successor reads them after exited.
	seq uint64 // last sequence number sent
	buf []byte
}

type outItem struct {
	body       []byte // appendMessage output
	bestEffort bool
}

// send encodes m and queues it for m.To.
func (s *sender) send(m core.Message) error {
	body, err := appendMessage(nil, m)
	if err != nil {
		return err
	}
	it := outItem{body: body, bestEffort: bestEffort(m.Type) && len(body)+maxHeaderSize <= maxDatagram}
	l, err := s.link(m.To)
	if err != nil {
		return err
	}
	return l.enqueue(it, s.queueSize, s.stats)
}

// bestEffort: heartbeats go by UDP; election traffic by TCP.
func bestEffort(t core.MsgType) bool {
	return t == core.MsgHeartbeat || t == core.MsgHeartbeatAck
}

// link returns the running link to name's current incarnation, starting
// one if needed. It reads the table under s.mu, so a PeerDown that the
// dispatcher processes after this check stops the link it returns.
func (s *sender) link(name string) (*outLink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.table.target(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownPeer, name)
	}
	old := s.links[name]
	if old != nil && !old.isStopped() && old.to.boot == t.boot {
		return old, nil
	}
	if old != nil {
		old.stop()
	}
	l := &outLink{to: t, prev: old, ready: make(chan struct{}, 1),
		done: make(chan struct{}), exited: make(chan struct{})}
	s.links[name] = l
	s.wg.Add(1)
	go s.run(l)
	return l, nil
}

// stop ends the link to name; queued frames are abandoned. The link's
// sequence numbers carry over to the next link to the same incarnation.
func (s *sender) stop(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.links[name]; l != nil {
		l.stop()
	}
}

// forget stops the link to name and drops its state.
func (s *sender) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.links[name]; l != nil {
		l.stop()
		delete(s.links, name)
	}
}

// close stops every link; later sends fail with ErrClosed.
func (s *sender) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, l := range s.links {
		l.stop()
	}
}

// run is a link's goroutine.
func (s *sender) run(l *outLink) {
	defer s.wg.Done()
	defer close(l.exited)
	if p := l.prev; p != nil {
		<-p.exited
		if p.to.boot == l.to.boot {
			l.seq = p.seq
		}
		l.prev = nil
	}
	for {
		select {
		case <-l.done:
			s.stats.sendAbandoned.Add(uint64(l.drop()))
			return
		case <-l.ready:
		}
		for !l.isStopped() {
			it, ok := l.pop()
			if !ok {
				break
			}
			s.transmit(l, it)
		}
	}
}

// transmit sends one frame. A reliable frame takes the next sequence
// number only once memberlist has written it: SendReliable fails only if
// the whole message was not written, and a partial message is discarded
// by the receiver, so a failed send leaves no gap.
func (s *sender) transmit(l *outLink, it outItem) {
	h := frameHeader{FromBoot: s.selfBoot, ToBoot: l.to.boot}
	if !it.bestEffort {
		h.Seq = l.seq + 1
	}
	l.buf = append(appendHeader(l.buf[:0], h), it.body...)
	var err error
	if it.bestEffort {
		err = s.ml.SendBestEffort(&l.to.node, l.buf)
	} else {
		err = s.ml.SendReliable(&l.to.node, l.buf)
	}
	if err != nil {
		s.stats.sendFailed.Add(1)
		s.log.Debug("send failed", "to", l.to.node.Name, "error", err)
		return
	}
	if !it.bestEffort {
		l.seq++
	}
	s.stats.sent.Add(1)
}

func (l *outLink) enqueue(it outItem, max int, stats *counters) error {
	l.mu.Lock()
	switch {
	case l.stopped:
		l.mu.Unlock()
		return fmt.Errorf("%w: %q left", ErrUnknownPeer, l.to.node.Name)
	case len(l.queue) >= max:
		l.mu.Unlock()
		stats.sendQueueFull.Add(1)
		return fmt.Errorf("%w: %d frames for %q", ErrQueueFull, max, l.to.node.Name)
	}
	l.queue = append(l.queue, it)
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	return nil
}

func (l *outLink) pop() (outItem, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return outItem{}, false
	}
	it := l.queue[0]
	l.queue[0] = outItem{}
	l.queue = l.queue[1:]
	return it, true
}

// drop empties the queue and returns how many frames it held.
func (l *outLink) drop() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.queue)
	l.queue = nil
	return n
}

func (l *outLink) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		close(l.done)
	}
}

func (l *outLink) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}
