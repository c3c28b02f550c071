package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election"
	"github.com/coordelect/coordelect/election/core"
	"github.com/coordelect/coordelect/election/group"
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

// sender owns one outLink (a FIFO, and a goroutine while it is not
// empty) per destination.
type sender struct {
	ml        *memberlist.Memberlist // set once memberlist exists
	table     *table
	selfBoot  uint64
	queueSize int
	stats     *counters
	log       hclog.Logger
	wg        *sync.WaitGroup

	// batchDatagram caps a batch's datagram (batchDatagram); 0: maxDatagram.
	batchDatagram int

	mu     sync.Mutex
	closed bool
	links  map[string]*outLink // latest link per peer name, maybe stopped

	// dgMu guards dgBuf, the frame of an unnumbered datagram being sent
	// (datagram), and udp, which sends it: ml.SendBestEffort when nil.
	dgMu  sync.Mutex
	dgBuf []byte
	udp   func(to *memberlist.Node, frame []byte) error
}

// batchDatagram is the largest datagram of batch pairs the memberlist
// configured by mc sends in one UDP packet of UDPBufferSize bytes: less
// its own framing (message type, checksum: 6 bytes), its label header,
// its encryption (29 bytes) and a margin of 32. A batch's heartbeats
// fill as few datagrams as they can: about 1,330 bytes each without a
// label or encryption, a third more pairs than maxDatagram holds.
func batchDatagram(mc *memberlist.Config) int {
	d := mc.UDPBufferSize - 6 - 32
	if mc.Label != "" {
		d -= 2 + len(mc.Label)
	}
	if len(mc.SecretKey) > 0 || mc.Keyring != nil {
		d -= 29
	}
	return max(d, maxDatagram)
}

// outLink is the send side of one link: frames for one incarnation (boot
// ID) of one peer, sent in FIFO order by one goroutine at a time. Reliable
// frames are numbered from 1 (frameHeader.Seq) so that the receiver can
// restore the order that memberlist's connection-per-message SendReliable
// loses.
//
// The goroutine runs only while the queue holds frames: the enqueue that
// finds the link idle starts it, and it returns when it finds the queue
// empty. Both happen under mu, so a frame is never left without a
// goroutine to send it. An idle link costs no goroutine: a coordinator
// keeps a link to every member, and a goroutine per link would be most
// of what its stacks cost.
//
// Sends are one at a time, so a peer that does not answer TCP holds its
// own link (not the others) for up to memberlist's TCPTimeout per frame;
// frames queue behind, up to Config.SendQueueSize, until failure detection
// declares the peer dead and the link stops.
type outLink struct {
	to target

	mu      sync.Mutex
	queue   []outItem
	running bool // a goroutine sends the queue
	stopped bool // no more frames; exited is closed once idle
	// exited is closed when the link is stopped and no goroutine runs,
	// nor will; made by the first wait for it (exitedChan), as most
	// links are never replaced: a member has a link to every other.
	exited chan struct{}

	// Owned by the running goroutine; each next one (started under mu
	// after the last returned under it) and a successor link (after
	// exited) take them over.
	prev *outLink // the link this one replaced, until inherit
	seq  uint64   // last sequence number sent of the frames (Send)
	bseq uint64   // last sequence number sent of the batch stream (SendBatch, SendCandidacy)
	buf  []byte   // the frame being sent; nil while the link is idle (next)
}

type outItem struct {
	body       []byte // appendMessage output, or a batch's or candidacy's body
	bestEffort bool   // by UDP (SendBestEffort), else by TCP
	ordered    bool   // numbered in the link's order (all but heartbeats)
	kind       itemFrame
	// A batch's body: its pair count, and where the count and the pairs
	// start in body (merge).
	pairs, countAt, pairsAt int
}

// merge appends the pairs of the batch body next to those of it, when
// both are numbered frames of the batch stream sent by TCP and the
// result fits in a frame, and reports whether it did. A link whose
// goroutine is busy (a TCP connection per frame, on a slow peer) thus
// sends what queued meanwhile as one frame, not one per flush of the
// elector.
func (it *outItem) merge(next outItem) bool {
	if it.kind != frameBatch || next.kind != frameBatch || !it.ordered || !next.ordered || it.bestEffort || next.bestEffort {
		return false
	}
	more := next.body[next.pairsAt:]
	if len(it.body)+len(more)+binary.MaxVarintLen16 > maxBodySize || it.pairs+next.pairs > MaxBatchPairs {
		return false
	}
	body := make([]byte, 0, len(it.body)+len(more)+binary.MaxVarintLen16)
	body = binary.AppendUvarint(append(body, it.body[:it.countAt]...), uint64(it.pairs+next.pairs))
	at := len(body)
	body = append(append(body, it.body[it.pairsAt:]...), more...)
	it.body, it.pairs, it.pairsAt = body, it.pairs+next.pairs, at
	return true
}

// itemFrame says which frame an outItem's body is: a frame's message
// (Send), or a body of the batch stream, numbered on its own (a batch,
// a candidacy).
type itemFrame uint8

const (
	frameMessage itemFrame = iota
	frameBatch
	frameCandidacy
)

// header appends the link header of an item of kind k.
func (k itemFrame) header(dst []byte, h frameHeader) []byte {
	switch k {
	case frameBatch:
		return appendHeaderAs(dst, batchMagic, batchVersion, h)
	case frameCandidacy:
		return appendHeaderAs(dst, candidacyMagic, candidacyVersion, h)
	}
	return appendHeader(dst, h)
}

// send encodes m and queues it for m.To.
func (s *sender) send(m core.Message) error {
	body, err := appendMessage(nil, m)
	if err != nil {
		return err
	}
	fits := len(body)+maxHeaderSize <= maxDatagram
	unordered := bestEffort(m.Type) || m.Unordered
	it := outItem{body: body, bestEffort: (unordered || m.BestEffort) && fits, ordered: !unordered || !fits}
	l, err := s.link(m.To)
	if err != nil {
		return err
	}
	return s.enqueue(l, it)
}

// enqueue queues it on l, starting l's goroutine if it was idle. An
// unnumbered datagram (heartbeats, their acks, candidacy digests) is sent
// at once instead (datagram).
func (s *sender) enqueue(l *outLink, it outItem) error {
	if it.bestEffort && !it.ordered {
		return s.datagram(l, it)
	}
	if start, err := l.enqueue(it, s.queueSize, s.stats, s.wg); !start {
		return err
	}
	go l.run(s.wg, s.stats, s.transmit)
	return nil
}

// sendBatch encodes b and queues it for b.To, which must run named
// elections: its heartbeats and acks (bestEffort) as datagrams of at most
// maxDatagram bytes, unnumbered; the other pairs as numbered frames of
// the batch stream, by UDP when every one is marked
// core.Message.BestEffort and they fit in a datagram (as Send's
// announcements), else by TCP. b is checked first (checkBatch).
func (s *sender) sendBatch(b group.Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	l, err := s.namedLink(b.To, "batches")
	if err != nil {
		return err
	}
	quick, rest := splitQuick(b.Pairs)
	allBestEffort := true
	for _, p := range rest {
		allBestEffort = allBestEffort && p.Msg.BestEffort
	}
	datagram := maxDatagram
	if s.batchDatagram > 0 {
		datagram = s.batchDatagram
	}
	if err := s.queuePairs(l, b, quick, false, true, datagram-maxHeaderSize); err != nil {
		return err
	}
	return s.queuePairs(l, b, rest, true, allBestEffort, maxBodySize)
}

// quick reports whether p goes as an unnumbered datagram: a heartbeat or
// an acknowledgement (bestEffort), or a pair marked Unordered.
func quick(p *group.Pair) bool { return bestEffort(p.Msg.Type) || p.Msg.Unordered }

// splitQuick splits pairs into those that go as unnumbered datagrams
// (quick) and the rest, each in its order. A batch is nearly always all
// one or the other (an idle round: all heartbeats), and then pairs itself
// is returned, not copied.
func splitQuick(pairs []group.Pair) (quickPairs, rest []group.Pair) {
	n := 0
	for i := range pairs {
		if quick(&pairs[i]) {
			n++
		}
	}
	switch n {
	case len(pairs):
		return pairs, nil
	case 0:
		return nil, pairs
	}
	quickPairs, rest = make([]group.Pair, 0, n), make([]group.Pair, 0, len(pairs)-n)
	for _, p := range pairs {
		if quick(&p) {
			quickPairs = append(quickPairs, p)
		} else {
			rest = append(rest, p)
		}
	}
	return quickPairs, rest
}

// queuePairs queues pairs, of the batch b, as bodies of at most limit
// bytes: numbered on the batch stream if ordered, by UDP when udp is set
// and a body fits in a datagram, else by TCP.
func (s *sender) queuePairs(l *outLink, b group.Batch, pairs []group.Pair, ordered, udp bool, limit int) error {
	countAt := stringLen(b.From) + stringLen(b.To)
	for len(pairs) > 0 {
		b.Pairs = pairs
		body, k, err := appendBatchBody(nil, b, limit)
		if err != nil {
			return err
		}
		pairs = pairs[k:]
		it := outItem{body: body, kind: frameBatch, ordered: ordered,
			bestEffort: udp && len(body)+maxHeaderSize <= max(maxDatagram, s.batchDatagram),
			pairs:      k, countAt: countAt, pairsAt: countAt + uvarintLen(uint64(k))}
		if err := s.enqueue(l, it); err != nil {
			return err
		}
	}
	return nil
}

// sendCandidacy encodes c and queues it, numbered on the batch stream, by
// TCP, for c.To, which must run named elections; a digest (no entries, no
// flag) goes as one unnumbered datagram.
func (s *sender) sendCandidacy(c election.Candidacy) error {
	body, err := appendCandidacyBody(nil, c)
	if err != nil {
		return err
	}
	l, err := s.namedLink(c.To, "candidacies")
	if err != nil {
		return err
	}
	if !c.Full && !c.Ask && len(c.Entries) == 0 {
		// A digest: one datagram, unnumbered; a lost one is sent again.
		return s.enqueue(l, outItem{body: body, kind: frameCandidacy, bestEffort: true})
	}
	return s.enqueue(l, outItem{body: body, kind: frameCandidacy, ordered: true})
}

// bestEffort: heartbeats go by UDP, unnumbered, as do the messages the
// elector marks core.Message.Unordered (a ring hop that its sender sends
// again until acknowledged, and the Ack); election traffic by TCP,
// numbered, except the messages the elector marks core.Message.BestEffort
// (a coordinator's announcement to the members that hear it in rotation),
// which go by UDP, numbered: the link's order holds, and a lost one is a
// gap that the receiver skips after its ReorderTimeout if a later frame
// arrives.
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
	l := &outLink{to: t, prev: old}
	s.links[name] = l
	return l, nil
}

// namedLink is link for what (batches, candidacies), which only a
// member that runs named elections takes: ErrInvalid for another.
func (s *sender) namedLink(name, what string) (*outLink, error) {
	l, err := s.link(name)
	if err != nil {
		return nil, err
	}
	if !l.to.named {
		return nil, fmt.Errorf("%w: %q runs no named elections (an older build?): it takes no %s", ErrInvalid, name, what)
	}
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

// run is the link's goroutine (counted in wg by enqueue): it sends the
// queue with transmit until it finds the queue empty or the link stopped.
func (l *outLink) run(wg *sync.WaitGroup, stats *counters, transmit func(*outLink, outItem)) {
	defer wg.Done()
	l.inherit()
	for {
		it, ok := l.next(stats)
		if !ok {
			return
		}
		transmit(l, it)
	}
}

// inherit takes over the sequence numbers of the link l replaced, if it
// went to the same incarnation, once no goroutine of that link runs. A
// replaced link that never started a goroutine has not inherited from its
// own predecessor yet: it does so first, on this goroutine.
func (l *outLink) inherit() {
	p := l.prev
	if p == nil {
		return
	}
	<-p.exitedChan()
	p.inherit()
	if p.to.boot == l.to.boot {
		l.seq, l.bseq = p.seq, p.bseq
	}
	l.prev = nil
}

// transmit sends one frame. A numbered frame takes the next sequence
// number only once memberlist has sent it: SendReliable fails only if the
// whole message was not written, and a partial message is discarded by
// the receiver, so a failed send leaves no gap (a datagram that memberlist
// handed to the kernel and the network lost does: see bestEffort).
func (s *sender) transmit(l *outLink, it outItem) {
	h := frameHeader{FromBoot: s.selfBoot, ToBoot: l.to.boot}
	seq := &l.seq
	if it.kind != frameMessage {
		seq = &l.bseq
	}
	if it.ordered {
		h.Seq = *seq + 1
	}
	l.buf = append(it.kind.header(l.buf[:0], h), it.body...)
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
	if it.ordered {
		*seq++
	}
	s.stats.sent.Add(1)
}

// datagram sends an unnumbered datagram to l's peer now, on the caller's
// goroutine: a UDP write does not wait for the peer. It takes no place in
// l's queue, so it never waits behind a reliable frame of that link (a
// TCP connection each, which a loaded peer can hold for up to memberlist's
// TCPTimeout) nor is refused because they fill the queue: a coordinator's
// heartbeats reach a member whatever else the link carries. Nothing
// orders it against the link's numbered frames, and nothing needs to:
// the receiver takes heartbeats and their acks in any order (Seq).
func (s *sender) datagram(l *outLink, it outItem) error {
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if stopped {
		return fmt.Errorf("%w: %q left", ErrUnknownPeer, l.to.node.Name)
	}
	s.dgMu.Lock()
	defer s.dgMu.Unlock()
	s.dgBuf = append(it.kind.header(s.dgBuf[:0], frameHeader{FromBoot: s.selfBoot, ToBoot: l.to.boot}), it.body...)
	udp := s.udp
	if udp == nil {
		udp = s.ml.SendBestEffort
	}
	if err := udp(&l.to.node, s.dgBuf); err != nil {
		s.stats.sendFailed.Add(1)
		s.log.Debug("send failed", "to", l.to.node.Name, "error", err)
		return nil // as a frame the link's goroutine fails to send
	}
	s.stats.sent.Add(1)
	return nil
}

// enqueue queues it. It reports whether the caller must start the link's
// goroutine (s.run): the link was idle. It counts the goroutine in wg
// under l.mu, so a Close that stops the link after waits for it.
func (l *outLink) enqueue(it outItem, max int, stats *counters, wg *sync.WaitGroup) (start bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false, fmt.Errorf("%w: %q left", ErrUnknownPeer, l.to.node.Name)
	}
	if k := len(l.queue); k > 0 && l.queue[k-1].merge(it) {
		return false, nil // queued with the frame before it, which a goroutine will send
	}
	if len(l.queue) >= max {
		stats.sendQueueFull.Add(1)
		return false, fmt.Errorf("%w: %d frames for %q", ErrQueueFull, max, l.to.node.Name)
	}
	l.queue = append(l.queue, it)
	if l.running {
		return false, nil
	}
	l.running = true
	wg.Add(1)
	return true, nil
}

// next pops the first frame for the running goroutine. When the link has
// stopped, it abandons the queue (counted) instead; when it has stopped or
// the queue is empty, the goroutine is to return: ok is false, and the
// link is idle (exited is closed if it stopped).
func (l *outLink) next(stats *counters) (it outItem, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		stats.sendAbandoned.Add(uint64(len(l.queue)))
		l.queue = nil
	}
	if len(l.queue) == 0 {
		// An idle link keeps no backing array, nor a frame buffer: a
		// member has a link to every other (candidacy statements), and
		// most send a frame or two in a while. The next goroutine starts
		// after this unlock, so it sees buf nil.
		l.queue = nil
		l.buf = nil
		l.running = false
		if l.stopped && l.exited != nil {
			close(l.exited)
		}
		return outItem{}, false
	}
	it = l.queue[0]
	l.queue[0] = outItem{}
	l.queue = l.queue[1:]
	return it, true
}

// stop ends the link: later enqueues fail, and the running goroutine, if
// any, abandons the queue after the frame in flight.
func (l *outLink) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	if !l.running && l.exited != nil {
		close(l.exited) // idle: the queue is empty
	}
}

// exitedChan returns exited, making it (closed if the link has exited
// already) if no one waited for it before.
func (l *outLink) exitedChan() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.exited == nil {
		l.exited = make(chan struct{})
		if l.stopped && !l.running {
			close(l.exited)
		}
	}
	return l.exited
}

func (l *outLink) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

// stringLen is the length of s as appendString writes it.
func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }
