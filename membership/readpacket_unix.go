//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package membership

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// readBufs holds the 64 KiB buffers readPacket reads into. A listener
// takes one only for the read itself, once its socket has a datagram
// waiting, and gives it back before it returns: a member that waits for
// packets holds no read buffer, so a process of many members (the
// benchmarks' clusters) keeps about one per datagram being read at once,
// not one per member. Between collections the pool keeps the buffers it
// has; the collector drops those unused since the last one.
var readBufs = sync.Pool{New: func() any { b := make([]byte, maxPacketRead); return &b }}

// readPacket reads the next datagram into a buffer of its own size.
func (t *netTransport) readPacket() ([]byte, net.Addr, error) {
	if t.rc == nil {
		rc, err := t.udp.SyscallConn()
		if err != nil {
			return nil, nil, err
		}
		t.rc = rc // readPackets is the only caller
	}
	var (
		pkt  []byte
		from net.Addr
		rerr error
	)
	err := t.rc.Read(func(fd uintptr) bool {
		bp := readBufs.Get().(*[]byte)
		defer readBufs.Put(bp)
		n, sa, err := syscall.Recvfrom(int(fd), *bp, 0)
		for errors.Is(err, syscall.EINTR) {
			n, sa, err = syscall.Recvfrom(int(fd), *bp, 0)
		}
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
			return false // nothing waits after all: back to the poller
		}
		if err != nil {
			rerr = err
			return true
		}
		if from = udpAddr(sa); from == nil {
			rerr = fmt.Errorf("a datagram from an address of type %T", sa)
			return true
		}
		pkt = append([]byte(nil), (*bp)[:n]...)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return pkt, from, rerr
}

// udpAddr is sa as the *net.UDPAddr that (*net.UDPConn).ReadFrom returns.
func udpAddr(sa syscall.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.UDPAddr{IP: net.IPv4(a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3]), Port: a.Port}
	case *syscall.SockaddrInet6:
		ip := make(net.IP, net.IPv6len)
		copy(ip, a.Addr[:])
		zone := ""
		if a.ZoneId != 0 {
			zone = strconv.FormatUint(uint64(a.ZoneId), 10)
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				zone = ifi.Name
			}
		}
		return &net.UDPAddr{IP: ip, Port: a.Port, Zone: zone}
	}
	return nil
}
