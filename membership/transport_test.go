package membership

import (
	"io"
	"log"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/coordelect/coordelect/election/core"
)

// A datagram reaches memberlist in a buffer of its own size (memberlist's
// NetTransport hands on a 64 KiB buffer per datagram; here a size class
// above the bytes at most), stamped and with
// its sender; a stream is handed on as accepted; Shutdown returns while a
// packet nobody reads is pending.
func TestNetTransportPacketsAndStreams(t *testing.T) {
	checkLeaks(t)
	tr, err := newNetTransport("127.0.0.1", 0, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown() // idempotent: also on a failure before the end
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tr.port))
	ip, port, err := tr.FinalAdvertiseAddr("", 0)
	if err != nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) || port != tr.port {
		t.Fatalf("FinalAdvertiseAddr: %v %d %v, want 127.0.0.1 %d", ip, port, err, tr.port)
	}
	if ip, port, err := tr.FinalAdvertiseAddr("10.1.2.3", 7000); err != nil || !ip.Equal(net.IPv4(10, 1, 2, 3)) || port != 7000 {
		t.Fatalf("FinalAdvertiseAddr(10.1.2.3, 7000): %v %d %v", ip, port, err)
	}
	if _, _, err := tr.FinalAdvertiseAddr("not-an-ip", 7000); err == nil {
		t.Fatal("FinalAdvertiseAddr accepted not-an-ip")
	}

	other, err := newNetTransport("127.0.0.1", 0, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Shutdown()
	msg := make([]byte, 100)
	for i := range msg {
		msg[i] = byte(i)
	}
	before := time.Now()
	if _, err := other.WriteToAddress(msg, memberlist.Address{Addr: addr}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-tr.PacketCh():
		if len(p.Buf) != 100 || cap(p.Buf) > 128 || p.Buf[99] != 99 {
			t.Fatalf("packet len %d cap %d, want 100 bytes as sent in a buffer of at most 128 (a size class)", len(p.Buf), cap(p.Buf))
		}
		if p.From.(*net.UDPAddr).Port != other.port || p.Timestamp.Before(before) {
			t.Fatalf("packet from %v at %v, want port %d after %v", p.From, p.Timestamp, other.port, before)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no packet")
	}

	c, err := other.DialAddressTimeout(memberlist.Address{Addr: addr}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-tr.StreamCh():
		s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no stream")
	}

	// One more datagram that nobody reads: Shutdown must not wait for it.
	if _, err := other.WriteTo(msg, addr); err != nil {
		t.Fatal(err)
	}
	<-time.After(50 * time.Millisecond)
	if err := tr.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// Two ports: a taken port is an error naming the address; a bad address
// is refused.
func TestNetTransportBindErrors(t *testing.T) {
	checkLeaks(t)
	tr, err := newNetTransport("127.0.0.1", 0, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown()
	if _, err := newNetTransport("127.0.0.1", tr.port, log.New(io.Discard, "", 0)); err == nil {
		t.Fatalf("bound port %d twice", tr.port)
	}
	if _, err := newNetTransport("localhost", 0, log.New(io.Discard, "", 0)); err == nil {
		t.Fatal("accepted BindAddr localhost")
	}
}

// A member on memberlist's own NetTransport and one on ours form one
// cluster and exchange messages both ways: everything above the socket is
// memberlist's in both.
func TestNetTransportInteroperates(t *testing.T) {
	checkLeaks(t)
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"}, BindPort: 0, Logger: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	c1 := testConfig("n1")
	c1.Transport, c1.AdvertiseAddr, c1.AdvertisePort = nt, "127.0.0.1", nt.GetAutoBindPort()
	c1.Rating = 10
	n1 := start(t, c1)
	c2 := testConfig("n2")
	c2.Seeds, c2.Rating = []string{n1.Addr()}, 20
	n2 := start(t, c2)
	n1.waitPeerEvents(t, "n2", "up:n2/20")
	n2.waitPeerEvents(t, "n1", "up:n1/10")
	// A reliable message one way (TCP), a heartbeat the other (UDP).
	elect := core.Message{Type: core.MsgElection, From: "n2", To: "n1", Term: core.MakeTerm(1, 2)}
	heartbeat := core.Message{Type: core.MsgHeartbeat, From: "n1", To: "n2", Coordinator: "n1", Term: core.MakeTerm(1, 1)}
	sendBothWays(t, n2, elect, n1, heartbeat)
}
