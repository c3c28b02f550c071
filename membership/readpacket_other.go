//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package membership

import "net"

// readPacket reads the next datagram into a buffer of its own size,
// through a read buffer of the listener's own (where the raw socket read
// of readpacket_unix.go is not built).
func (t *netTransport) readPacket() ([]byte, net.Addr, error) {
	if t.readBuf == nil {
		t.readBuf = make([]byte, maxPacketRead)
	}
	n, from, err := t.udp.ReadFrom(t.readBuf)
	if err != nil {
		return nil, nil, err
	}
	return append([]byte(nil), t.readBuf[:n]...), from, nil
}
