package membership

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coordelect/coordelect/internal/testport"
)

// fakeResolver answers one DNS name with the addresses the test sets, as
// a headless Service's name follows its pods; before the first set, the
// name does not exist.
type fakeResolver struct {
	name string

	mu      sync.Mutex
	ips     []net.IP
	set     bool
	lookups int
}

func (r *fakeResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups++
	if host != r.name || !r.set {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(r.ips))
	for i, ip := range r.ips {
		out[i] = net.IPAddr{IP: ip}
	}
	return out, nil
}

// answer sets the addresses the name resolves to: 127.0.0.<last> each.
func (r *fakeResolver) answer(last ...byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.set, r.ips = true, nil
	for _, b := range last {
		r.ips = append(r.ips, net.IPv4(127, 0, 0, b))
	}
}

func (r *fakeResolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups
}

// dnsConfig is a member named name at 127.0.0.<last>:port whose seed is
// the DNS name of r, resolved with r, re-joining every 100 ms.
func dnsConfig(name string, last byte, port int, r *fakeResolver) Config {
	cfg := testConfig(name)
	cfg.BindAddr, cfg.BindPort = net.IPv4(127, 0, 0, last).String(), port
	cfg.Seeds = []string{net.JoinHostPort(r.name, strconv.Itoa(port))}
	cfg.Resolver, cfg.RejoinInterval = r, 100*time.Millisecond
	return cfg
}

// Members whose seed is a DNS name that has no address yet run alone and
// retry; once the name resolves, to every member's address, they find
// each other without a restart, each skipping its own address. A member
// started alone, without seeds, is found once the name lists it: the
// name is resolved again at every re-join.
func TestSeedNameResolvedAtEveryJoin(t *testing.T) {
	checkLeaks(t)
	r := &fakeResolver{name: "coordelect.test"}
	port := testport.Free(t, "127.0.0.1", "127.0.0.2", "127.0.0.3") // the members behind one DNS name share the port of the seed "name:port"
	n1 := start(t, dnsConfig("n1", 1, port, r))
	n2 := start(t, dnsConfig("n2", 2, port, r))
	if n1.joined.Load() || n2.joined.Load() {
		t.Fatal("joined through a name that does not resolve")
	}
	if _, err := n1.Join(n1.cfg.Seeds...); err == nil || !unreachable(err) {
		t.Fatalf("Join through a name without address = %v, want an unreachable error", err)
	}
	r.answer(1)
	if _, err := n1.Join(n1.cfg.Seeds...); !errors.Is(err, errOnlySelf) {
		t.Fatalf("Join through a name that gives only this node = %v, want errOnlySelf", err)
	}
	before := r.count()
	r.answer(1, 2)
	n1.waitPeerEvents(t, "n2", "up:n2/0")
	n2.waitPeerEvents(t, "n1", "up:n1/0")
	if r.count() == before {
		t.Fatal("the name was not resolved again")
	}

	c3 := testConfig("n3")
	c3.BindAddr, c3.BindPort = "127.0.0.3", port
	n3 := start(t, c3) // alone: no seeds
	r.answer(1, 2, 3)
	for _, m := range []*member{n1, n2} {
		m.waitPeerEvents(t, "n3", "up:n3/0")
	}
	for _, m := range []*member{n1, n2, n3} {
		if s := m.Node.Seeds(); m != n3 && s != 1 {
			t.Errorf("%s: Seeds() = %d, want 1 (the name)", m.LocalID(), s)
		}
	}
}

// A member that comes back under its name at a new address, with a new
// boot ID, is taken as a restart of that member, not as a clash: after a
// leave the others may not have heard of yet, and after a crash they have
// not detected yet. It joins through the DNS name, which now lists its
// new address; its earlier life's address answers no ping, so it does not
// yield, and the others take the new address (a PeerUp with the new
// rating, after a PeerDown when the leave arrived first): at once after
// the leave, once the old address has not answered the check's pings
// after a crash; memberlist follows once it lets the old one go.
func TestRestartAtNewAddress(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		t.Run(map[bool]string{true: "leave", false: "crash"}[graceful], func(t *testing.T) {
			checkLeaks(t)
			r := &fakeResolver{name: "coordelect.test"}
			port := testport.Free(t, "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
			r.answer(1, 2, 3)
			var ms []*member
			for i := range 3 {
				cfg := dnsConfig("n"+strconv.Itoa(i+1), byte(i+1), port, r)
				cfg.Rating = int64(10 * (i + 1))
				ms = append(ms, start(t, cfg))
			}
			for _, m := range ms {
				for _, p := range ms {
					if p != m {
						m.waitPeerEvents(t, p.LocalID(), "up:"+p.LocalID()+"/"+strconv.Itoa(int(p.cfg.Rating)))
					}
				}
			}
			old := ms[1]
			if graceful {
				if err := old.Leave(time.Second); err != nil {
					t.Fatal(err)
				}
			}
			old.stop(t)
			r.answer(1, 3, 4)
			cfg := dnsConfig("n2", 4, port, r)
			cfg.Rating = 21
			n2, err := New(cfg) // at once: the news of the departure may not have spread
			if err != nil {
				t.Fatalf("the restart at a new address was refused: %v", err)
			}
			back := &member{Node: n2, done: make(chan struct{})}
			go back.record()
			t.Cleanup(func() { back.stop(t) })
			for _, m := range []*member{ms[0], ms[2]} {
				m.waitPeerEvents(t, "n2", "up:n2/21")
				// memberlist takes the new address too (at once after a leave,
				// after failure detection of the old one after a crash), and
				// its news of the earlier life's death does not reach the
				// elector, which sees the restart once.
				host, port, err := net.SplitHostPort(n2.Addr())
				if err != nil {
					t.Fatal(err)
				}
				p, _ := strconv.Atoi(port)
				want := packAddr(net.ParseIP(host), uint16(p))
				if !waitUntil(waitTimeout, func() bool {
					// What memberlist holds, as its callbacks recorded it
					// under its lock: its own *Node is not safe to read.
					got, ok := m.table.heldAddr("n2")
					return ok && got == want
				}) {
					t.Fatalf("%s: memberlist does not hold n2 at %s", m.LocalID(), n2.Addr())
				}
				if got := m.peerEvents("n2"); got[len(got)-1] != "up:n2/21" || slices.Contains(got[1:], "up:n2/20") {
					t.Fatalf("%s: events about n2 %v, want the restart's up:n2/21 last", m.LocalID(), got)
				}
				if !waitUntil(waitTimeout, func() bool {
					i := slices.IndexFunc(m.Members(), func(mb Member) bool { return mb.Name == "n2" })
					mb := m.Members()[i]
					return mb.Alive && mb.Addr == n2.Addr() && mb.BootID == n2.BootID()
				}) {
					t.Fatalf("%s lists n2 as %+v, want alive at %s", m.LocalID(), m.Members(), n2.Addr())
				}
				if s := m.Stats(); s.RefusedDuplicateName != 0 {
					t.Errorf("%s counted the restart as a clash: %+v", m.LocalID(), s)
				}
			}
			back.waitPeerEvents(t, "n1", "up:n1/10")
			back.waitPeerEvents(t, "n3", "up:n3/30")
			if err := n2.Err(); err != nil {
				t.Fatalf("the restarted member failed: %v", err)
			}
		})
	}
}
