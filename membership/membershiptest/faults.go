// Package membershiptest has fault injection for clusters of real
// memberlist members on loopback: tests use it, and so does the demo's
// local cluster, whose page partitions and crashes members with it.
package membershiptest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// FaultNetwork injects faults between the members of a test cluster: it
// drops traffic along blocked links or across a partition, loses UDP
// packets at random, and delays packets and streams (which reorders them).
// Each member gets a FaultTransport from Listen, a real memberlist
// NetTransport with the rules applied on the way out, and uses it as
// Config.Transport. (memberlist's MockNetwork cannot shut a member down,
// so it is no use for crash tests.)
//
// Rules are applied by the sending transport, which knows both ends by
// name, so every member of the cluster must use a FaultTransport of the
// same FaultNetwork. Random choices (loss, delay) come from one generator
// seeded at NewFaultNetwork; the interleaving of goroutines is still the
// scheduler's, so a test must not depend on exact timing.
//
// A FaultNetwork is safe for concurrent use; rules change at once.
type FaultNetwork struct {
	log hclog.Logger

	mu       sync.Mutex
	rng      *rand.Rand
	names    map[string]string  // advertised "ip:port" -> member name
	groups   map[string]int     // partition group by name; nil when healed
	blocked  map[[2]string]bool // {from, to}, each a name or an address
	streams  map[[2]string]bool // the same, for streams only (BlockStreams)
	loss     float64
	minDelay time.Duration
	maxDelay time.Duration

	droppedPackets, droppedStreams atomic.Uint64
}

// NewFaultNetwork returns a network without faults. seed drives loss and
// delay; logger (nil = discard) receives the transports' logs.
func NewFaultNetwork(seed uint64, logger hclog.Logger) *FaultNetwork {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &FaultNetwork{
		log:     logger.Named("faults"),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		names:   make(map[string]string),
		blocked: make(map[[2]string]bool),
		streams: make(map[[2]string]bool),
	}
}

// Listen opens a transport for member name on bindAddr:bindPort (port 0
// picks a free one). Give it to the member as Config.Transport; memberlist
// shuts it down when the member closes.
func (f *FaultNetwork) Listen(name, bindAddr string, bindPort int) (*FaultTransport, error) {
	inner, err := f.listen(bindAddr, bindPort)
	if err != nil {
		return nil, err
	}
	ip, port, err := inner.FinalAdvertiseAddr("", 0)
	if err != nil {
		_ = inner.Shutdown()
		return nil, err
	}
	t := &FaultTransport{net: f, inner: inner, name: name,
		addr:   net.JoinHostPort(ip.String(), strconv.Itoa(port)),
		timers: make(map[*time.Timer]struct{}), conns: make(map[*delayedConn]struct{})}
	f.mu.Lock()
	f.names[t.addr] = name
	f.mu.Unlock()
	return t, nil
}

// listen binds a NetTransport. With port 0 the TCP listener picks the port
// and UDP may find it taken; memberlist retries the same way.
func (f *FaultNetwork) listen(bindAddr string, bindPort int) (*memberlist.NetTransport, error) {
	cfg := &memberlist.NetTransportConfig{
		BindAddrs: []string{bindAddr},
		BindPort:  bindPort,
		Logger:    f.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	var err error
	for range 10 {
		var t *memberlist.NetTransport
		if t, err = memberlist.NewNetTransport(cfg); err == nil || bindPort != 0 {
			return t, err
		}
	}
	return nil, err
}

// Partition splits the members into groups that cannot reach each other.
// Members named in no group form one more group together, so
// Partition([]string{"a"}) isolates a. It replaces an earlier partition.
func (f *FaultNetwork) Partition(groups ...[]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups = make(map[string]int)
	for i, g := range groups {
		for _, name := range g {
			f.groups[name] = i + 1
		}
	}
}

// Block drops everything from sends to (one direction). Each end is a
// member name or an advertised "ip:port".
func (f *FaultNetwork) Block(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocked[[2]string{from, to}] = true
}

// BlockStreams refuses the TCP streams from sends to (one direction) and
// lets its UDP packets through, as a firewall that drops one protocol
// would. Each end is a member name or an advertised "ip:port".
func (f *FaultNetwork) BlockStreams(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams[[2]string{from, to}] = true
}

// Unblock removes one Block(from, to) and one BlockStreams(from, to).
func (f *FaultNetwork) Unblock(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.blocked, [2]string{from, to})
	delete(f.streams, [2]string{from, to})
}

// Heal removes the partition, every Block and BlockStreams and the packet
// loss. Delays stay (SetDelay(0, 0) removes them).
func (f *FaultNetwork) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups = nil
	clear(f.blocked)
	clear(f.streams)
	f.loss = 0
}

// SetLoss drops each UDP packet with probability p (0 to 1). Streams are
// never lost at random: TCP would retransmit.
func (f *FaultNetwork) SetLoss(p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loss = p
}

// SetDelay delays every packet and every stream by a duration drawn
// uniformly from [lo, hi]. Different draws reorder packets, and streams
// opened one after the other (as SendReliable does per message).
func (f *FaultNetwork) SetDelay(lo, hi time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.minDelay, f.maxDelay = lo, max(lo, hi)
}

// Dropped returns how many packets and streams the rules dropped.
func (f *FaultNetwork) Dropped() (packets, streams uint64) {
	return f.droppedPackets.Load(), f.droppedStreams.Load()
}

// verdict decides the fate of one packet or stream from t to a.
func (f *FaultNetwork) verdict(t *FaultTransport, a memberlist.Address, stream bool) (drop bool, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	to := a.Name
	if to == "" {
		to = f.names[a.Addr]
	}
	switch {
	case f.cut(f.blocked, t.name, t.addr, to, a.Addr):
		drop = true
	case stream && f.cut(f.streams, t.name, t.addr, to, a.Addr):
		drop = true
	case !stream && f.loss > 0 && f.rng.Float64() < f.loss:
		drop = true
	case f.maxDelay > 0:
		delay = f.minDelay + time.Duration(f.rng.Int64N(int64(f.maxDelay-f.minDelay)+1))
	}
	if drop && stream {
		f.droppedStreams.Add(1)
	} else if drop {
		f.droppedPackets.Add(1)
	}
	return drop, delay
}

// cut reports whether blocked, or the partition, cuts the link.
func (f *FaultNetwork) cut(blocked map[[2]string]bool, fromName, fromAddr, toName, toAddr string) bool {
	for _, from := range [...]string{fromName, fromAddr} {
		for _, to := range [...]string{toName, toAddr} {
			if blocked[[2]string{from, to}] {
				return true
			}
		}
	}
	return f.groups != nil && toName != "" && f.groups[fromName] != f.groups[toName]
}

func (f *FaultNetwork) unregister(t *FaultTransport) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.names[t.addr] == t.name {
		delete(f.names, t.addr)
	}
}

// FaultTransport is one member's transport in a FaultNetwork: a
// memberlist.NetTransport whose outgoing packets and streams obey the
// network's rules. It implements memberlist.NodeAwareTransport.
type FaultTransport struct {
	net   *FaultNetwork
	inner *memberlist.NetTransport
	name  string
	addr  string

	mu     sync.Mutex
	closed bool
	timers map[*time.Timer]struct{}  // delayed sends not yet run
	conns  map[*delayedConn]struct{} // streams not yet released
	wg     sync.WaitGroup            // delayed sends running or pending
}

var _ memberlist.NodeAwareTransport = (*FaultTransport)(nil)

// Name is the member name the transport was opened for.
func (t *FaultTransport) Name() string { return t.name }

// Addr is the advertised "ip:port".
func (t *FaultTransport) Addr() string { return t.addr }

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *FaultTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

// WriteTo implements memberlist.Transport.
func (t *FaultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends, drops or delays one packet. A dropped packet
// reports success, as the network would.
func (t *FaultTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	drop, delay := t.net.verdict(t, a, false)
	switch {
	case drop:
		return time.Now(), nil
	case delay == 0:
		return t.inner.WriteToAddress(b, a)
	}
	b = bytes.Clone(b) // memberlist may reuse b once we return
	t.after(delay, func() { _, _ = t.inner.WriteToAddress(b, a) })
	return time.Now(), nil
}

// PacketCh implements memberlist.Transport.
func (t *FaultTransport) PacketCh() <-chan *memberlist.Packet { return t.inner.PacketCh() }

// DialTimeout implements memberlist.Transport.
func (t *FaultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout opens a stream, refuses a blocked one, or returns one
// whose writes reach the peer only after the drawn delay.
func (t *FaultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	drop, delay := t.net.verdict(t, a, true)
	if drop {
		return nil, fmt.Errorf("faults: stream %s -> %s blocked", t.name, a.String())
	}
	conn, err := t.inner.DialAddressTimeout(a, timeout)
	if err != nil || delay == 0 {
		return conn, err
	}
	c := &delayedConn{Conn: conn}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		_ = conn.Close()
		return nil, fmt.Errorf("faults: transport %s shut down", t.name)
	}
	t.conns[c] = struct{}{}
	t.afterLocked(delay, func() { t.release(c) })
	return c, nil
}

// StreamCh implements memberlist.Transport.
func (t *FaultTransport) StreamCh() <-chan net.Conn { return t.inner.StreamCh() }

// Shutdown cancels delayed sends, closes delayed streams, and shuts the
// NetTransport down.
func (t *FaultTransport) Shutdown() error {
	t.mu.Lock()
	t.closed = true
	for tm := range t.timers {
		if tm.Stop() {
			t.wg.Done()
		}
	}
	conns := t.conns
	t.timers, t.conns = nil, nil
	t.mu.Unlock()
	t.wg.Wait()
	for c := range conns {
		c.abort()
	}
	t.net.unregister(t)
	return t.inner.Shutdown()
}

// after runs fn after d, unless the transport shuts down first.
func (t *FaultTransport) after(d time.Duration, fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.afterLocked(d, fn)
	}
}

func (t *FaultTransport) afterLocked(d time.Duration, fn func()) {
	t.wg.Add(1)
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		defer t.wg.Done()
		t.mu.Lock()
		closed := t.closed
		delete(t.timers, tm)
		t.mu.Unlock()
		if !closed {
			fn()
		}
	})
	t.timers[tm] = struct{}{}
}

func (t *FaultTransport) release(c *delayedConn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.release()
}

// delayedConn holds back what is written to it until release, then writes
// it all and passes later writes straight through. Close before release is
// deferred to release, so the write still happens: memberlist's
// SendReliable writes and closes at once, and succeeds at once.
type delayedConn struct {
	net.Conn
	mu       sync.Mutex
	pending  []byte
	released bool
	closing  bool
}

func (c *delayedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return c.Conn.Write(b)
	}
	c.pending = append(c.pending, b...)
	return len(b), nil
}

func (c *delayedConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return c.Conn.Close()
	}
	c.closing = true
	return nil
}

func (c *delayedConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	if len(c.pending) > 0 {
		_, _ = c.Conn.Write(c.pending)
		c.pending = nil
	}
	if c.closing {
		_ = c.Conn.Close()
	}
}

// abort closes a stream that was never released (its transport shut down).
func (c *delayedConn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.released {
		c.released = true
		_ = c.Conn.Close()
	}
}
