package membership

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
)

// netTransport is memberlist's transport over UDP and TCP on one address
// and port, as memberlist.NetTransport, except that a received datagram
// is copied into a buffer of its own size. memberlist's NetTransport reads
// every datagram into a fresh 64 KiB buffer and hands that buffer on, so
// each probe, ack, gossip packet or heartbeat costs 64 KiB of allocation
// and zeroing, held for as long as the packet waits in memberlist's
// queues: with a few hundred members in one process, that allocation and
// its zeroing are a quarter of the process's CPU. Here a 64 KiB read buffer is taken from a pool for
// the read alone (readpacket_unix.go).
//
// Everything above the socket (labels, encryption, CRCs, compression) is
// memberlist's, as with its own transport, so members using either
// transport interoperate.
type netTransport struct {
	tcp      *net.TCPListener
	udp      *net.UDPConn
	bindAll  bool // bound to the unspecified address: advertise a private IP
	port     int
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	logger   *log.Logger
	wg       sync.WaitGroup
	closed   atomic.Bool
	stop     chan struct{} // closed by Shutdown
	// readBuf is readPacket's buffer where readpacket_unix.go is not
	// built (elsewhere the buffers come from a pool, held only during a
	// read). It is kept here, on the heap: as a local of constant size it
	// would live on the goroutine's stack (the compiler keeps a
	// non-escaping make of up to 64 KiB there), which then takes 128 KiB,
	// twice the buffer, for as long as the member runs.
	readBuf []byte
	// rc is the UDP socket's raw connection (readpacket_unix.go).
	rc syscall.RawConn
}

var _ memberlist.NodeAwareTransport = (*netTransport)(nil)

const (
	// maxPacketRead is the largest datagram read, as memberlist's own
	// transport reads (its udpPacketBufSize).
	maxPacketRead = 65536
	// udpReadBuffer is the socket receive buffer asked for, as
	// memberlist's own transport asks (halved until the kernel accepts).
	udpReadBuffer = 2 << 20
	// bindTries bounds the tries to bind TCP and UDP to one picked port
	// when BindPort is 0 (another process may take the UDP port between).
	bindTries = 10
)

// newNetTransport listens on addr:port over TCP and UDP (port 0: a free
// port both protocols get).
func newNetTransport(addr string, port int, logger *log.Logger) (*netTransport, error) {
	ip := net.ParseIP(addr)
	if ip == nil {
		return nil, fmt.Errorf("membership: BindAddr %q is not an IP address", addr)
	}
	tries := 1
	if port == 0 {
		tries = bindTries
	}
	var err error
	for range tries {
		var t *netTransport
		if t, err = bindNet(ip, port, logger); err == nil {
			t.wg.Add(2)
			go t.readPackets()
			go t.acceptStreams()
			return t, nil
		}
	}
	return nil, err
}

func bindNet(ip net.IP, port int, logger *log.Logger) (*netTransport, error) {
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port})
	if err != nil {
		return nil, fmt.Errorf("membership: listening on TCP %s: %w", net.JoinHostPort(ip.String(), strconv.Itoa(port)), err)
	}
	port = tcp.Addr().(*net.TCPAddr).Port
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: port})
	if err != nil {
		tcp.Close()
		return nil, fmt.Errorf("membership: listening on UDP %s: %w", net.JoinHostPort(ip.String(), strconv.Itoa(port)), err)
	}
	for size := udpReadBuffer; size > 0; size /= 2 {
		if udp.SetReadBuffer(size) == nil {
			break
		}
	}
	return &netTransport{
		tcp: tcp, udp: udp, bindAll: ip.IsUnspecified(), port: port,
		packetCh: make(chan *memberlist.Packet), streamCh: make(chan net.Conn),
		logger: logger, stop: make(chan struct{}),
	}, nil
}

// FinalAdvertiseAddr returns ip and port when ip is given, else the bound
// address and port, or a private IP of this host when bound to all
// addresses (as memberlist's own transport does).
func (t *netTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, 0, fmt.Errorf("membership: advertise address %q is not an IP address", ip)
		}
		if a4 := a.To4(); a4 != nil {
			a = a4
		}
		return a, port, nil
	}
	if t.bindAll {
		private, err := sockaddr.GetPrivateIP()
		if err != nil {
			return nil, 0, fmt.Errorf("membership: finding a private IP to advertise: %w", err)
		}
		if private == "" {
			return nil, 0, errors.New("membership: bound to all addresses and no private IP found: set AdvertiseAddr")
		}
		return net.ParseIP(private), t.port, nil
	}
	return t.tcp.Addr().(*net.TCPAddr).IP, t.port, nil
}

// WriteTo sends b as one datagram to addr ("host:port").
func (t *netTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, to)
	return time.Now(), err
}

// WriteToAddress sends b as one datagram to a.Addr.
func (t *netTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

// PacketCh delivers the datagrams received.
func (t *netTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout opens a TCP connection to addr.
// Shutdown ends a dial in flight: a join of an address where no host
// answers (a pod's IP after it was deleted) would otherwise hold Close for
// the dial's whole timeout (memberlist's TCPTimeout, 10 s with the LAN
// profile), once per address.
func (t *netTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// DialAddressTimeout opens a TCP connection to a.Addr.
func (t *netTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

// StreamCh delivers the TCP connections accepted.
func (t *netTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown closes both listeners and waits for their goroutines.
func (t *netTransport) Shutdown() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.stop)
	t.tcp.Close()
	t.udp.Close()
	t.wg.Wait()
	return nil
}

// readPackets reads datagrams into one reused buffer and hands each on in
// a buffer of its own size, stamped as close to the read as possible.
func (t *netTransport) readPackets() {
	defer t.wg.Done()
	for {
		pkt, from, err := t.readPacket()
		now := time.Now()
		if err != nil {
			if t.closed.Load() {
				return
			}
			t.logger.Printf("[ERR] membership: reading a UDP packet: %v", err)
			continue
		}
		if len(pkt) < 1 {
			t.logger.Printf("[ERR] membership: empty UDP packet from %s", from)
			continue
		}
		p := &memberlist.Packet{Buf: pkt, From: from, Timestamp: now}
		select {
		case t.packetCh <- p:
		case <-t.stop:
			return
		}
	}
}

// acceptStreams hands each accepted TCP connection to memberlist, backing
// off on errors (a descriptor limit reached) from 5 ms up to 1 s.
func (t *netTransport) acceptStreams() {
	defer t.wg.Done()
	const minWait, maxWait = 5 * time.Millisecond, time.Second
	wait := time.Duration(0)
	for {
		conn, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.closed.Load() {
				return
			}
			wait = min(max(2*wait, minWait), maxWait)
			t.logger.Printf("[ERR] membership: accepting a TCP connection: %v", err)
			select {
			case <-time.After(wait):
			case <-t.stop:
				return
			}
			continue
		}
		wait = 0
		select {
		case t.streamCh <- conn:
		case <-t.stop:
			conn.Close()
			return
		}
	}
}
