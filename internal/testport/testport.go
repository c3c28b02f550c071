// Package testport hands tests a loopback port that they may close and
// bind again later: a seed that starts after the member pointing at it, a
// member restarted at its old address.
//
// A port the kernel picked (port 0) is in the local ephemeral range, from
// which every outgoing connection on the machine also takes its local
// port: between the close and the second bind, a connection of another
// test process can hold it, and the bind fails with "address already in
// use". The ports given here lie below that range, where only explicit
// binds land.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port handed out: clear of the well-known and most
// registered service ports.
const lowest = 20000

// TB is the part of testing.TB that Free uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Free returns a port outside the ephemeral range that was free for TCP
// and UDP on every one of ips (127.0.0.1 when none is given) when it
// returned. Where the range cannot be read (not Linux), it falls back to
// a port the kernel picks.
func Free(t TB, ips ...string) int {
	t.Helper()
	if len(ips) == 0 {
		ips = []string{"127.0.0.1"}
	}
	high, ok := ephemeralLow()
	for range 100 {
		port := 0
		if ok && high > lowest {
			port = lowest + rand.IntN(high-lowest)
		}
		port, err := tryAll(port, ips)
		if err == nil {
			return port
		}
	}
	t.Fatalf("testport: no port free for TCP and UDP on %v in 100 tries", ips)
	return 0
}

// tryAll binds TCP and UDP at port on every ip and closes them again;
// port 0 takes the kernel's pick on the first ip.
func tryAll(port int, ips []string) (int, error) {
	for _, ip := range ips {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return 0, err
		}
		port = l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
		l.Close()
		if err != nil {
			return 0, err
		}
		u.Close()
	}
	return port, nil
}

// ephemeralLow is the lowest port of the kernel's ephemeral range.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	var low, high int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &low, &high); err != nil {
		return 0, false
	}
	return low, true
}
