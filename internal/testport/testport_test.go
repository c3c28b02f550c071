package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeBelowEphemeralRange(t *testing.T) {
	low, ok := ephemeralLow()
	if !ok {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range: the kernel picks")
	}
	seen := map[int]bool{}
	for range 20 {
		p := Free(t)
		if p < lowest || (low > lowest && p >= low) {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, low)
		}
		seen[p] = true
	}
	if len(seen) < 2 {
		t.Fatalf("20 picks gave %v: not spread", seen)
	}
}

func TestFreeIsBindableOnEveryAddress(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.2"}
	p := Free(t, ips...)
	for _, ip := range ips {
		hp := net.JoinHostPort(ip, strconv.Itoa(p))
		l, err := net.Listen("tcp", hp)
		if err != nil {
			t.Fatal(err)
		}
		u, err := net.ListenPacket("udp", hp)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		u.Close()
	}
}

// A port held for TCP is not handed out.
func TestFreeSkipsHeld(t *testing.T) {
	held := Free(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := tryAll(held, []string{"127.0.0.1"}); err == nil {
		t.Fatalf("tryAll(%d) succeeded on a held port", held)
	}
}
